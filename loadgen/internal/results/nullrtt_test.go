package results

import (
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"
)

// nullStream is n RTTs around 150 µs with a tail, and a timeout and an
// error now and then (kind 1, 2).
func nullStream(seed int64, n int) (rtts []time.Duration, kinds []int) {
	r := rand.New(rand.NewSource(seed))
	for i := 0; i < n; i++ {
		switch x := r.Intn(100); {
		case x == 0:
			kinds = append(kinds, 1)
		case x == 1:
			kinds = append(kinds, 2)
		default:
			kinds = append(kinds, 0)
			rtts = append(rtts, time.Duration(math.Exp(r.NormFloat64()*0.8+math.Log(150e3)))+time.Duration(r.Intn(1000)))
		}
	}
	return rtts, kinds
}

func feedNull(r *NullRecorder, rtts []time.Duration, kinds []int) {
	j := 0
	for _, k := range kinds {
		switch k {
		case 0:
			r.Done(rtts[j])
			j++
		case 1:
			r.Timeout()
		default:
			r.Error()
		}
	}
}

// TestMergeNullRTTExact: merging the beside probes of two results equals
// one probe that made both's calls — n, exact sums, mean, quantiles, max,
// timeouts, errors; gap_ms is the larger; a result without the key is
// skipped and none gives none.
func TestMergeNullRTTExact(t *testing.T) {
	ra, ka := nullStream(1, 3000)
	rb, kb := nullStream(2, 1200)
	a, b, both := NewNullRecorder(100*time.Millisecond), NewNullRecorder(50*time.Millisecond), NewNullRecorder(100*time.Millisecond)
	feedNull(a, ra, ka)
	feedNull(b, rb, kb)
	feedNull(both, ra, ka)
	feedNull(both, rb, kb)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	resA, resB, resOff := NewRecorder().Result(meta(start, 10)), NewRecorder().Result(meta(start, 10)), NewRecorder().Result(meta(start, 10))
	resA.NullRTTMs, resB.NullRTTMs = a.Result(), b.Result()
	resA, resB, resOff = roundTrip(t, resA), roundTrip(t, resB), roundTrip(t, resOff) // through JSON, as fstress merge does
	merged, err := Merge([]*Result{resA, resOff, resB})
	if err != nil {
		t.Fatal(err)
	}
	got, want := merged.NullRTTMs, both.Result()
	if got == nil || !reflect.DeepEqual(*got, *want) {
		t.Fatalf("merged %+v\nsingle %+v", got, want)
	}
	var sum time.Duration
	for _, x := range append(append([]time.Duration{}, ra...), rb...) {
		sum += x
	}
	n := len(ra) + len(rb)
	if got.N != uint64(n) || got.Exact.SumNs != uint64(sum) || got.Mean != float64(sum)/float64(n)/1e6 {
		t.Errorf("n %d mean %v, want %d and %v (exact)", got.N, got.Mean, n, float64(sum)/float64(n)/1e6)
	}
	if got.Timeouts != resA.NullRTTMs.Timeouts+resB.NullRTTMs.Timeouts || got.Timeouts == 0 ||
		got.Errors != resA.NullRTTMs.Errors+resB.NullRTTMs.Errors || got.GapMs != 100 {
		t.Errorf("timeouts %d errors %d gap %v", got.Timeouts, got.Errors, got.GapMs)
	}
	if m, err := Merge([]*Result{resOff, resOff}); err != nil || m.NullRTTMs != nil {
		t.Errorf("no probe in any input: %v, %+v", err, m.NullRTTMs)
	}
}

// An empty probe (no reply) is n = 0 with zeros; an inconsistent one is
// refused on reading; the summary names it.
func TestNullRTTEdges(t *testing.T) {
	r := NewNullRecorder(100 * time.Millisecond)
	r.Timeout()
	res := NewRecorder().Result(meta(1, 10))
	res.NullRTTMs = r.Result()
	if n := roundTrip(t, res).NullRTTMs; n.N != 0 || n.Mean != 0 || n.P99 != 0 || n.Max != 0 || n.Timeouts != 1 || n.GapMs != 100 {
		t.Errorf("empty probe: %+v", n)
	}
	var sb strings.Builder
	res.Summary(&sb)
	if !strings.Contains(sb.String(), "NULL beside (every 100 ms): n 0") {
		t.Errorf("summary: %q", sb.String())
	}
	res.NullRTTMs.Exact.N = 3 // the histogram holds none
	var buf strings.Builder
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJSON([]byte(buf.String())); err == nil || !strings.Contains(err.Error(), "null_rtt_ms") {
		t.Errorf("inconsistent null_rtt_ms read: %v", err)
	}
}
