package results

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
)

var ops = []nfs3.Proc{nfs3.ProcGetattr, nfs3.ProcLookup, nfs3.ProcRead, nfs3.ProcWrite, nfs3.ProcCommit}

// event is one recorded observation.
type event struct {
	kind    int // 0 done, 1 failed timeout, 2 failed error, 3 send lag
	op      nfs3.Proc
	d       time.Duration
	status  uint32
	retrans int
}

func stream(seed int64, n int) []event {
	r := rand.New(rand.NewSource(seed))
	ev := make([]event, 0, n)
	for i := 0; i < n; i++ {
		op := ops[r.Intn(len(ops))]
		// log-normal latencies, median ~0.5 ms, long tail up to seconds
		d := time.Duration(math.Exp(r.NormFloat64()*1.5+math.Log(500e3))) + time.Duration(r.Intn(1000))
		switch x := r.Intn(1000); {
		case x < 3:
			ev = append(ev, event{kind: 1, op: op, retrans: 2})
		case x < 5:
			ev = append(ev, event{kind: 2, op: op})
		default:
			var st uint32
			if x < 15 {
				st = 2 // NFS3ERR_NOENT
			}
			ev = append(ev, event{kind: 0, op: op, d: d, status: st, retrans: r.Intn(2) * r.Intn(2)})
		}
		ev = append(ev, event{kind: 3, d: time.Duration(r.ExpFloat64() * 20e3)})
	}
	return ev
}

func feed(r *Recorder, ev []event) {
	for _, e := range ev {
		switch e.kind {
		case 0:
			r.Done(e.op, e.d, e.status, e.retrans)
		case 1:
			r.Failed(e.op, "timeout", e.retrans)
		case 2:
			r.Failed(e.op, "error", e.retrans)
		case 3:
			r.SendLag(e.d)
		}
	}
}

func meta(start int64, rate float64) Meta {
	return Meta{Workload: "web_server", OfferedRate: rate, DurationS: 10, StartUnixNs: start,
		MixTarget: map[string]float64{"getattr": 0.2, "lookup": 0.2, "read": 0.2, "write": 0.2, "commit": 0.2}, Host: "h"}
}

// TestMergeExact: merging the results of two recorders equals one recorder
// fed both streams — counts, mean, std, percentiles, max, histograms.
func TestMergeExact(t *testing.T) {
	a, b := stream(1, 30000), stream(2, 20000)
	ra, rb, rboth := NewRecorder(), NewRecorder(), NewRecorder()
	feed(ra, a)
	feed(rb, b)
	feed(rboth, a)
	feed(rboth, b)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	resA, resB := ra.Result(meta(start, 3000)), rb.Result(meta(start, 2000))
	// through JSON, as fstress merge does
	resA, resB = roundTrip(t, resA), roundTrip(t, resB)
	merged, err := Merge([]*Result{resA, resB})
	if err != nil {
		t.Fatal(err)
	}
	want := rboth.Result(meta(start, 5000))
	if merged.OpsTotal != want.OpsTotal || merged.OpsTotal != uint64(len(a)+len(b))/2 {
		t.Fatalf("ops_total %d want %d", merged.OpsTotal, want.OpsTotal)
	}
	eq := func(name string, x, y float64) {
		if x != y {
			t.Errorf("%s: merged %v, single %v", name, x, y)
		}
	}
	eq("mean_ms", merged.MeanMs, want.MeanMs)
	eq("std_ms", merged.StdMs, want.StdMs)
	eq("p50_ms", merged.P50Ms, want.P50Ms)
	eq("p95_ms", merged.P95Ms, want.P95Ms)
	eq("p99_ms", merged.P99Ms, want.P99Ms)
	eq("max_ms", merged.MaxMs, want.MaxMs)
	eq("send_lag mean", merged.SendLagMs.Mean, want.SendLagMs.Mean)
	eq("send_lag p99", merged.SendLagMs.P99, want.SendLagMs.P99)
	eq("send_lag max", merged.SendLagMs.Max, want.SendLagMs.Max)
	eq("offered_rate", merged.OfferedRate, 5000)
	eq("achieved_rate", merged.AchievedRate, resA.AchievedRate+resB.AchievedRate)
	eq("duration_s", merged.DurationS, 10)
	if merged.Errors != want.Errors || merged.Timeouts != want.Timeouts || merged.Retransmits != want.Retransmits {
		t.Errorf("errors/timeouts/retransmits %d/%d/%d want %d/%d/%d", merged.Errors, merged.Timeouts, merged.Retransmits, want.Errors, want.Timeouts, want.Retransmits)
	}
	if merged.Histogram != want.Histogram || merged.SendLagHistogram != want.SendLagHistogram {
		t.Error("encoded histograms differ")
	}
	if !reflect.DeepEqual(merged.Exact, want.Exact) || !reflect.DeepEqual(merged.MixActual, want.MixActual) {
		t.Errorf("exact %+v vs %+v", merged.Exact, want.Exact)
	}
	if !reflect.DeepEqual(merged.Ops, want.Ops) {
		for k := range want.Ops {
			if !reflect.DeepEqual(merged.Ops[k], want.Ops[k]) {
				t.Errorf("ops.%s: merged %+v\nsingle %+v", k, *merged.Ops[k], *want.Ops[k])
			}
		}
	}
	if merged.Clients != 2 {
		t.Errorf("clients %d", merged.Clients)
	}
	for k, v := range want.MixTarget {
		if math.Abs(merged.MixTarget[k]-v) > 1e-15 {
			t.Errorf("mix_target %s %v", k, merged.MixTarget[k])
		}
	}
	// Recorder.Merge gives the same as well.
	rm := NewRecorder()
	rm.Merge(ra)
	rm.Merge(rb)
	if got := rm.Result(meta(start, 5000)); got.StdMs != want.StdMs || got.Histogram != want.Histogram {
		t.Error("Recorder.Merge differs")
	}
	// Check the exact statistics against a direct computation.
	var sum, sq float64
	var n int
	for _, ev := range append(append([]event{}, a...), b...) {
		if ev.kind == 0 {
			x := float64(ev.d) / 1e6
			sum += x
			sq += x * x
			n++
		}
	}
	mean := sum / float64(n)
	std := math.Sqrt(sq/float64(n) - mean*mean)
	if math.Abs(want.MeanMs-mean) > 1e-9*mean || math.Abs(want.StdMs-std) > 1e-6*std {
		t.Errorf("mean/std %v/%v, direct %v/%v", want.MeanMs, want.StdMs, mean, std)
	}
	// p50 from the histogram is within its 3-significant-digit resolution.
	var lats []float64
	for _, ev := range append(append([]event{}, a...), b...) {
		if ev.kind == 0 {
			lats = append(lats, float64(ev.d)/1e6)
		}
	}
	sort.Float64s(lats)
	exact50 := lats[(len(lats)+1)/2-1]
	if math.Abs(want.P50Ms-exact50)/exact50 > 0.002 {
		t.Errorf("p50 %v vs exact %v", want.P50Ms, exact50)
	}
}

func roundTrip(t *testing.T, r *Result) *Result {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	out, err := ReadJSON(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMergeWindows(t *testing.T) {
	r1, r2 := NewRecorder(), NewRecorder()
	feed(r1, stream(3, 100))
	feed(r2, stream(4, 100))
	s := int64(1_700_000_000) * 1e9
	a := r1.Result(meta(s, 100))
	m2 := meta(s+int64(2*time.Second), 100)
	b := r2.Result(m2)
	b.GeneratorSaturated, b.SaturationReason = true, "send-lag p99 too high"
	b.Workload = "mail"
	m, err := Merge([]*Result{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if m.DurationS != 8 || m.StartUnixNs != s+int64(2*time.Second) {
		t.Errorf("common window: %v s from %d", m.DurationS, m.StartUnixNs)
	}
	if !m.GeneratorSaturated || m.SaturationReason != "send-lag p99 too high" || m.Workload != "web_server+mail" {
		t.Errorf("saturated %v %q %q", m.GeneratorSaturated, m.SaturationReason, m.Workload)
	}
	if m.HostStealPct != nil {
		t.Errorf("no input knew its steal, the merge says %v", *m.HostStealPct)
	}
	low, high := 0.5, 4.25
	a.HostStealPct, b.HostStealPct = &high, &low
	if m, _ = Merge([]*Result{a, b}); m.HostStealPct == nil || *m.HostStealPct != high {
		t.Errorf("merged steal %v, want the worst host's %v", m.HostStealPct, high)
	}
	*m.HostStealPct = 9 // the merge owns its copy
	if high != 4.25 {
		t.Error("the merge aliases an input's steal")
	}
	a.HostStealPct, b.HostStealPct = nil, nil
	// unknown start times: the shortest duration
	a.StartUnixNs, b.DurationS = 0, 7
	if m, _ = Merge([]*Result{a, b}); m.DurationS != 7 {
		t.Errorf("duration %v", m.DurationS)
	}
	if _, err := Merge(nil); err == nil {
		t.Error("merge of nothing")
	}
	bad := *a
	bad.Histogram = "garbage"
	if _, err := Merge([]*Result{a, &bad}); err == nil || !strings.Contains(err.Error(), "result 2") {
		t.Errorf("bad histogram: %v", err)
	}
}

// contractKeys are the top-level JSON keys outside checks read.
var contractKeys = []string{"offered_rate", "achieved_rate", "duration_s", "ops_total", "mean_ms", "std_ms",
	"p50_ms", "p95_ms", "p99_ms", "max_ms", "ops", "mix_target", "mix_actual", "send_lag_ms",
	"generator_saturated", "saturation_reason", "errors", "timeouts", "retransmits", "histogram", "clients"}

func TestJSONRoundTripAndAtomicWrite(t *testing.T) {
	r := NewRecorder()
	feed(r, stream(5, 5000))
	res := r.Result(meta(time.Now().UnixNano(), 500))
	dir := t.TempDir()
	p := filepath.Join(dir, "run.json")
	if err := res.WriteJSONFile(p); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSONFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res, back) {
		t.Errorf("round trip differs:\n%+v\n%+v", res, back)
	}
	// key names
	var raw map[string]json.RawMessage
	data, _ := os.ReadFile(p)
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range contractKeys {
		if _, ok := raw[k]; !ok {
			t.Errorf("missing top-level key %q", k)
		}
	}
	var lag map[string]float64
	json.Unmarshal(raw["send_lag_ms"], &lag)
	if _, ok := lag["p99"]; !ok || len(lag) != 3 {
		t.Errorf("send_lag_ms %v", lag)
	}
	var perOp map[string]map[string]any
	json.Unmarshal(raw["ops"], &perOp)
	for _, k := range []string{"count", "share", "mean_ms", "std_ms", "p95_ms", "time_pct", "errors", "timeouts", "retransmits"} {
		if _, ok := perOp["read"][k]; !ok {
			t.Errorf("ops.read lacks %q", k)
		}
	}
	share, tp := 0.0, 0.0
	for _, o := range res.Ops {
		share += o.Share
		tp += o.TimePct
	}
	if math.Abs(share-1) > 1e-12 || math.Abs(tp-100) > 1e-9 {
		t.Errorf("shares %v time_pct %v", share, tp)
	}
	if res.AchievedRate != float64(res.OpsTotal)/10 {
		t.Errorf("achieved %v", res.AchievedRate)
	}

	// Atomic: no temporary files left; a failing write leaves no file.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries", len(ents))
	}
	if err := res.WriteJSONFile(filepath.Join(dir, "nodir", "x.json")); err == nil {
		t.Error("write into a missing directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "nodir", "x.json")); err == nil {
		t.Error("partial file exists")
	}

	// Readers racing with rewrites always see a complete file.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 40; i++ {
			if err := res.WriteJSONFile(p); err != nil {
				t.Error(err)
			}
		}
		close(stop)
	}()
	reads := 0
	for done := false; !done; {
		select {
		case <-stop:
			done = true
		default:
		}
		if _, err := ReadJSONFile(p); err != nil {
			t.Fatalf("reader saw a partial file: %v", err)
		}
		reads++
	}
	wg.Wait()
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("leftover files: %d", len(ents))
	}
	if _, err := ReadJSONFile(filepath.Join(dir, "absent.json")); err == nil {
		t.Error("reading an absent file")
	}
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{\"ops_total\": 1, \"histogram\": \"zz\"}"), 0o644)
	if _, err := ReadJSONFile(filepath.Join(dir, "bad.json")); err == nil {
		t.Error("inconsistent file accepted")
	}
}

func TestSummary(t *testing.T) {
	r := NewRecorder()
	feed(r, stream(6, 2000))
	res := r.Result(meta(1, 200))
	res.GeneratorSaturated, res.SaturationReason = true, "sent 90% of intended"
	var b bytes.Buffer
	res.Summary(&b)
	out := b.String()
	for _, s := range []string{"workload web_server", "offered 200.0 ops/s", "mean", "p95", "GENERATOR SATURATED: sent 90%", "getattr", "commit", "% time", "errors"} {
		if !strings.Contains(out, s) {
			t.Errorf("summary lacks %q:\n%s", s, out)
		}
	}
	t.Log("\n" + out)
}

func TestEmptyAndEdges(t *testing.T) {
	r := NewRecorder()
	res := r.Result(Meta{Workload: "null", OfferedRate: 10, DurationS: 0})
	if res.OpsTotal != 0 || res.MeanMs != 0 || res.P99Ms != 0 || res.AchievedRate != 0 || res.Ops == nil || res.MixTarget == nil {
		t.Errorf("%+v", res)
	}
	r.Done(nfs3.ProcNull, -time.Millisecond, 0, 0) // negative clamps to 0
	r.Done(nfs3.ProcNull, 10*time.Minute, 0, 0)    // beyond the histogram: clamped there, exact max kept
	res = r.Result(Meta{DurationS: 1})
	if res.MaxMs != 600000 || res.P99Ms < 119000 || res.Ops["null"].Count != 2 {
		t.Errorf("max %v p99 %v", res.MaxMs, res.P99Ms)
	}
	if q := r.SendLagQuantile(0.99); q != 0 {
		t.Errorf("empty send lag quantile %v", q)
	}
	r.SendLag(150 * time.Microsecond)
	if q := r.SendLagQuantile(0.99); q < 149*time.Microsecond || q > 151*time.Microsecond {
		t.Errorf("send lag quantile %v", q)
	}
	var x u128
	x.addSquare(math.MaxUint64)
	x.addSquare(3)
	y, err := parseU128(x.String())
	if err != nil || y != x {
		t.Errorf("u128 round trip %v %v", y, err)
	}
}

func BenchmarkDone(b *testing.B) {
	r := NewRecorder()
	for i := 0; i < b.N; i++ {
		r.Done(nfs3.ProcGetattr, time.Duration(i%5000)*time.Microsecond, 0, 0)
	}
}
