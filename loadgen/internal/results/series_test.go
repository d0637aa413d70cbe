package results

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"workbench/loadgen/internal/nfs3"
)

const (
	tWarm = 1500 * time.Millisecond
	tDur  = 10 * time.Second
	tInt  = time.Second
)

// feedSeries records ev at random intended times over warm-up + duration:
// every event in the series, measured ones also in rec (as the engine does).
func feedSeries(t *testing.T, rec *Recorder, ser *SeriesRecorder, ev []event, seed int64) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	for _, e := range ev {
		if e.kind == 3 {
			continue
		}
		at := r.Int63n(int64(tWarm + tDur))
		j := ser.Slot(at)
		measured := at >= int64(tWarm)
		ser.Sent(j, e.op)
		switch e.kind {
		case 0:
			ser.Done(j, e.op, e.d, e.status, e.retrans)
			if measured {
				rec.Done(e.op, e.d, e.status, e.retrans)
			}
		default:
			ser.Failed(j, e.op, e.kind == 1, e.retrans)
			if measured {
				rec.Failed(e.op, map[int]string{1: "timeout", 2: "error"}[e.kind], e.retrans)
			}
		}
		ser.Arrived(at+int64(e.d), 0)
	}
}

// measuredSum adds up the measured intervals of s: totals and per op.
func measuredSum(t *testing.T, s *Series) (IntervalStats, map[string]*IntervalStats) {
	t.Helper()
	m, err := MergeSeries([]*Series{s})
	if err != nil {
		t.Fatal(err)
	}
	var meas []Interval
	for _, iv := range m.Intervals {
		if !iv.Warmup {
			meas = append(meas, iv)
		}
	}
	// merge the measured intervals as if they were one: same k for all
	for i := range meas {
		meas[i].K, meas[i].StartS, meas[i].LenS = 0, 0, 0
	}
	one, err := MergeSeries([]*Series{{IntervalS: 1, Intervals: meas}})
	if err != nil || len(one.Intervals) != 1 {
		t.Fatalf("%v %d", err, len(one.Intervals))
	}
	return one.Intervals[0].IntervalStats, one.Intervals[0].Ops
}

// TestSeriesSumsToWholeRun: the measured intervals add up exactly to the
// whole-run figures, totals and per operation, histograms included.
func TestSeriesSumsToWholeRun(t *testing.T) {
	rec := NewRecorder()
	ser, err := NewSeriesRecorder(tInt, tWarm, tDur)
	if err != nil {
		t.Fatal(err)
	}
	feedSeries(t, rec, ser, stream(5, 20000), 5)
	res := rec.Result(meta(1, 2000))
	s := ser.Series()
	if len(s.Intervals) != 12 || !s.Intervals[1].Warmup || s.Intervals[2].Warmup || s.Intervals[0].StartS != -1.5 ||
		s.Intervals[0].LenS != 0.5 || s.Intervals[11].StartS != 9 {
		t.Fatalf("intervals: %d, first %+v", len(s.Intervals), s.Intervals[0])
	}
	tot, ops := measuredSum(t, roundTrip(t, &Result{Series: s, Exact: Exact{SumSqNs2: "0"}}).Series)
	if tot.Count != res.OpsTotal || tot.Errors != res.Errors || tot.Timeouts != res.Timeouts ||
		tot.Retransmits != res.Retransmits || !reflect.DeepEqual(tot.Exact, res.Exact) || tot.Histogram != res.Histogram {
		t.Errorf("measured intervals %+v\nwhole run ops %d errors %d timeouts %d exact %+v", tot, res.OpsTotal, res.Errors,
			res.Timeouts, res.Exact)
	}
	for name, o := range res.Ops {
		g := ops[name]
		if g == nil || g.Count != o.Count || g.Errors != o.Errors || g.Timeouts != o.Timeouts ||
			!reflect.DeepEqual(g.Exact, o.Exact) || g.Histogram != o.Histogram {
			t.Errorf("ops.%s: intervals %+v, whole run %+v", name, g, o)
		}
	}
	if tot.Sent != tot.Count {
		t.Errorf("sent %d, finished %d", tot.Sent, tot.Count)
	}
}

// TestSeriesMergeExact: merging two clients' results (through JSON) gives
// the series of one recorder fed both streams.
func TestSeriesMergeExact(t *testing.T) {
	recs := []*Recorder{NewRecorder(), NewRecorder(), NewRecorder()}
	sers := make([]*SeriesRecorder, 3)
	for i := range sers {
		sers[i], _ = NewSeriesRecorder(tInt, tWarm, tDur)
	}
	a, b := stream(6, 15000), stream(7, 9000)
	feedSeries(t, recs[0], sers[0], a, 1)
	feedSeries(t, recs[1], sers[1], b, 2)
	feedSeries(t, recs[2], sers[2], a, 1)
	feedSeries(t, recs[2], sers[2], b, 2)
	sers[0].Stop(7)
	sers[0].Arrived(0, 0)
	sers[1].Stop(5)
	sers[1].Arrived(0, 1)
	var rs []*Result
	for i := 0; i < 2; i++ {
		res := recs[i].Result(meta(1, 1000))
		res.Series = sers[i].Series()
		rs = append(rs, roundTrip(t, res))
	}
	m, err := Merge(rs)
	if err != nil {
		t.Fatal(err)
	}
	want := sers[2].Series()
	want.OutstandingAtStop, want.StopReplied, want.StopTimeouts = 12, 1, 1
	want.Intervals[0].Arrived += 2 // the two Arrived(0, …) above
	if !reflect.DeepEqual(m.Series, want) {
		for i := range want.Intervals {
			if !reflect.DeepEqual(m.Series.Intervals[i], want.Intervals[i]) {
				t.Errorf("interval %d: merged %+v\nwant %+v", i, m.Series.Intervals[i], want.Intervals[i])
				break
			}
		}
		t.Errorf("merged series differ: %d/%d intervals, stop %d/%d", len(m.Series.Intervals), len(want.Intervals),
			m.Series.OutstandingAtStop, want.OutstandingAtStop)
	}
	// a result without a series merges to none; different intervals refuse
	rs[1].Series = nil
	if m, err := Merge(rs); err != nil || m.Series != nil {
		t.Errorf("merge with an old result: %v %v", err, m.Series)
	}
	rs[1].Series = &Series{IntervalS: 0.5}
	if _, err := Merge(rs); err == nil || !strings.Contains(err.Error(), "interval_s") {
		t.Errorf("different intervals: %v", err)
	}
	rs[1].Series = sers[1].Series()
	rs[1].Series.Intervals[3].Histogram = rs[1].Series.Intervals[2].Histogram
	if _, err := Merge(rs); err == nil {
		t.Error("inconsistent histogram accepted")
	}
}

// TestPackedEncodingMatchesDense: the interval histograms use the whole-run
// encoding byte for byte.
func TestPackedEncodingMatchesDense(t *testing.T) {
	d, p := newHist(), hdr.NewPacked(HistMinUs, HistMaxUs, HistSigFigs)
	r := rand.New(rand.NewSource(9))
	for i := 0; i < 5000; i++ {
		v := histUs(uint64(r.ExpFloat64() * 3e6))
		d.RecordValue(v)
		p.RecordValue(v)
	}
	d.RecordValue(HistMaxUs)
	p.RecordValue(HistMaxUs)
	if encodeHist(d) != encodePacked(p) {
		t.Error("packed and dense encodings differ")
	}
}

func TestCheckInterval(t *testing.T) {
	for _, c := range []struct {
		iv, warm, dur time.Duration
		want          string
	}{
		{time.Second, time.Second, 10 * time.Second, ""},
		{100 * time.Millisecond, 0, 100 * time.Millisecond, ""},
		{99 * time.Millisecond, 0, time.Second, ">= 100ms"},
		{0, 0, time.Second, ">= 100ms"},
		{-time.Second, 0, time.Second, ">= 100ms"},
		{2 * time.Second, 0, time.Second, "must be <= --duration 1s"},
		{100 * time.Millisecond, 0, 360 * time.Second, ""},
		{100 * time.Millisecond, 100 * time.Millisecond, 360 * time.Second, "3601 intervals"},
		{time.Second, 0, 3601 * time.Second, "at most 3600"},
	} {
		err := CheckInterval(c.iv, c.warm, c.dur)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckInterval(%v, %v, %v) = %v, want %q", c.iv, c.warm, c.dur, err, c.want)
		}
	}
}

func BenchmarkSeriesDone(b *testing.B) {
	s, _ := NewSeriesRecorder(time.Second, 0, 10*time.Second)
	for i := 0; i < b.N; i++ {
		s.Done(int32(i%10), 1, time.Duration(i%5000)*time.Microsecond, 0, 0)
	}
}

// The dense histogram of each op's latest interval (hotHist) changes no
// histogram: replies mostly in time order, some late (an earlier
// interval), two ops interleaved, give per-interval histograms equal to
// values recorded straight into each interval's sparse histogram.
func TestHotHistogramExact(t *testing.T) {
	s, err := NewSeriesRecorder(tInt, tWarm, tDur)
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]int32]*hdr.PackedHistogram{}
	r := rand.New(rand.NewSource(4))
	ops := []nfs3.Proc{nfs3.ProcGetattr, nfs3.ProcRead}
	for i := 0; i < 200000; i++ {
		at := int64(i) * int64(tWarm+tDur) / 200000
		if r.Intn(50) == 0 { // a late reply: intended up to 3 intervals earlier
			at = max(at-r.Int63n(3*int64(tInt)), 0)
		}
		j, p := s.Slot(at), ops[r.Intn(len(ops))]
		ns := uint64(r.ExpFloat64() * 2e6)
		s.Done(j, p, time.Duration(ns), 0, 0)
		k := [2]int32{j, int32(p)}
		if want[k] == nil {
			want[k] = hdr.NewPacked(HistMinUs, HistMaxUs, HistSigFigs)
		}
		want[k].RecordValue(histUs(ns))
	}
	got := s.Series()
	for j, iv := range got.Intervals {
		for _, p := range ops {
			w := want[[2]int32{int32(j), int32(p)}]
			st := iv.Ops[OpName(p, "")]
			if w == nil || st == nil {
				t.Fatalf("interval %d %v: missing", j, p)
			}
			if st.Histogram != encodePacked(w) {
				t.Errorf("interval %d %v: histogram differs from direct recording", j, p)
			}
		}
	}
	if again := s.Series(); !reflect.DeepEqual(again, got) {
		t.Error("a second Series differs")
	}
}
