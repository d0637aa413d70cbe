package engine

import (
	"context"
	"io"
	"math"
	"reflect"
	"testing"
	"time"

	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/results"
)

// measuredTotal merges the measured intervals of s into one.
func measuredTotal(t *testing.T, s *results.Series) results.Interval {
	t.Helper()
	var meas []results.Interval
	for _, iv := range s.Intervals {
		if !iv.Warmup {
			iv.K, iv.StartS, iv.LenS, iv.Arrived = 0, 0, 0, 0
			meas = append(meas, iv)
		}
	}
	m, err := results.MergeSeries([]*results.Series{{IntervalS: 1, Intervals: meas}})
	if err != nil || len(m.Intervals) != 1 {
		t.Fatalf("%v", err)
	}
	return m.Intervals[0]
}

// TestSeriesOfARun: a real run's measured intervals add up to its
// whole-run figures; the warm-up's are there, flagged.
func TestSeriesOfARun(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	s := connect(t, addr, 2*time.Second, 0)
	w := loadWL(t, "name = t_mix\nmix = getattr:60, lookup:30, fsstat:10\nfileset_files_per_ops = 0.02\n")
	out := prepareAndRun(t, s, RunConfig{Workload: w, Rate: 2000, Duration: time.Second,
		Warmup: 300 * time.Millisecond, Interval: 200 * time.Millisecond, Seed: 2})
	r, ser := out.Result, out.Result.Series
	if ser == nil || len(ser.Intervals) != 7 || ser.IntervalS != 0.2 || !ser.Intervals[1].Warmup || ser.Intervals[2].Warmup {
		t.Fatalf("series %+v", ser)
	}
	if ser.Intervals[0].StartS != -0.3 || math.Abs(ser.Intervals[0].LenS-0.1) > 1e-12 || ser.Intervals[6].StartS != 0.8 {
		t.Errorf("bounds: first %v+%v last %v", ser.Intervals[0].StartS, ser.Intervals[0].LenS, ser.Intervals[6].StartS)
	}
	tot := measuredTotal(t, ser)
	if tot.Count != r.OpsTotal || tot.Sent != uint64(out.Sent) || tot.Errors != r.Errors || tot.Timeouts != r.Timeouts ||
		!reflect.DeepEqual(tot.Exact, r.Exact) || tot.Histogram != r.Histogram {
		t.Errorf("measured intervals %+v\nwhole run: ops %d sent %d exact %+v", tot.IntervalStats, r.OpsTotal, out.Sent, r.Exact)
	}
	for name, o := range r.Ops {
		if g := tot.Ops[name]; g == nil || g.Count != o.Count || !reflect.DeepEqual(g.Exact, o.Exact) || g.Histogram != o.Histogram {
			t.Errorf("ops.%s differ: %+v vs %+v", name, g, o)
		}
	}
	for _, iv := range ser.Intervals[2:] {
		if iv.Sent != 400 { // 2000/s × 0.2 s
			t.Errorf("interval %d: sent %d, want 400", iv.K, iv.Sent)
		}
	}
	st := ser.StopReplied + ser.StopErrors + ser.StopTimeouts
	if st != ser.OutstandingAtStop || ser.StopTimeouts != 0 || ser.OutstandingAtStop > 2000 {
		t.Errorf("at stop %d: replied %d errors %d timeouts %d", ser.OutstandingAtStop, ser.StopReplied, ser.StopErrors, ser.StopTimeouts)
	}
}

// TestOutstandingAtStopSilentServer: a server that stops answering leaves
// about rate × timeout calls in flight when sending stops; all time out.
func TestOutstandingAtStopSilentServer(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	p := &delayProxy{}
	s := connect(t, p.start(t, addr), 300*time.Millisecond, 0)
	w := loadWL(t, "name = t_null\nmix = null:1\n")
	fs, err := PrepareFileset(context.Background(), s, w, 1000, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(600 * time.Millisecond); p.stall.Store(true) }() // after set-up and a few intervals
	out, err := Run(context.Background(), s, fs, RunConfig{Workload: w, Rate: 1000, Duration: 1500 * time.Millisecond,
		Warmup: 100 * time.Millisecond, Interval: 100 * time.Millisecond, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ser := out.Result.Series
	t.Logf("outstanding at stop %d: replied %d errors %d timeouts %d; run timeouts %d", ser.OutstandingAtStop,
		ser.StopReplied, ser.StopErrors, ser.StopTimeouts, out.Result.Timeouts)
	// calls of the last 300 ms (the timeout) are in flight: ~300 (more when timeouts fire late)
	if ser.OutstandingAtStop < 250 || ser.OutstandingAtStop > 600 || ser.StopTimeouts != ser.OutstandingAtStop {
		t.Errorf("outstanding at stop %d, timed out %d: want ≈ 300, all timed out", ser.OutstandingAtStop, ser.StopTimeouts)
	}
	last := ser.Intervals[len(ser.Intervals)-1]
	if last.Timeouts != last.Sent || last.Count != last.Sent || ser.Intervals[0].Timeouts != 0 {
		t.Errorf("last interval sent %d timed out %d; first timed out %d", last.Sent, last.Timeouts, ser.Intervals[0].Timeouts)
	}
}
