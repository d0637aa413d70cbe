package engine

import (
	"testing"
	"time"

	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/results"
)

// recordLags records one send lag per call kept by lagLater, batches or
// not, each at least the lag the call had when it was queued (the clock
// is read after the queueing: overstated, never understated).
func TestSendLagsRecordedOncePerCall(t *testing.T) {
	r := &runner{rec: results.NewRecorder(), start: time.Now().Add(-time.Second)}
	const n = 2*lagBatch + 5
	var queuedLag [n]time.Duration
	for i := 0; i < n; i++ {
		intended := r.now() - int64(i)*int64(time.Microsecond)
		queuedLag[i] = time.Duration(r.now() - intended)
		r.lagLater(intended)
	}
	r.recordLags()
	r.recordLags() // nothing left: records nothing
	res := r.rec.Result(results.Meta{Workload: "t", DurationS: 1})
	if res.SendLagExact.N != n {
		t.Fatalf("%d send lags recorded, want %d", res.SendLagExact.N, n)
	}
	if minLag := queuedLag[0]; res.SendLagExact.SumNs < uint64(n)*uint64(minLag) {
		t.Errorf("send lags sum %d ns, below %d calls × %v", res.SendLagExact.SumNs, n, minLag)
	}
}

// A run at a high rate (polled replies, batches of many calls per
// wake-up): every measured call sent once, every send lag recorded, every
// call answered; the shared clocks of a batch lose nothing.
func TestHighRateEveryCallOnce(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	s := connect(t, addr, 2*time.Second, 1)
	w := loadWL(t, "name = t_getattr\nmix = getattr:1\nfileset_min_files = 16\nfileset_files_per_ops = 0.001\n")
	out := prepareAndRun(t, s, RunConfig{Workload: w, Rate: 50000, Duration: time.Second, Warmup: 200 * time.Millisecond,
		Seed: 5, Quantum: 500 * time.Microsecond})
	r := out.Result
	t.Logf("sent %d lag p99 %.3f ms polled %v sat %v %s", out.Sent, r.SendLagMs.P99, r.RepliesPolled, out.Saturated, out.Reason)
	if replyPoll == "" && !r.RepliesPolled {
		t.Error("at 50 000 ops/s the metronome should read the replies itself")
	}
	if out.Intended != 50000 || out.Sent != 50000 || out.Skipped != 0 {
		t.Errorf("intended %d sent %d skipped %d, want 50000 sent, none skipped", out.Intended, out.Sent, out.Skipped)
	}
	if r.SendLagExact.N != uint64(out.Sent) {
		t.Errorf("%d send lags for %d calls sent", r.SendLagExact.N, out.Sent)
	}
	if r.OpsTotal != 50000 || r.Errors != 0 || r.Timeouts != 0 {
		t.Errorf("ops_total %d errors %d timeouts %d", r.OpsTotal, r.Errors, r.Timeouts)
	}
}
