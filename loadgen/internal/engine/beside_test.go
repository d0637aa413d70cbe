package engine

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"workbench/loadgen/internal/nullserver"
)

// A run with the beside probe on: NULL calls over the measured window only
// (none in the warm-up), one per gap at most; off: no null_rtt_ms.
func TestBesideNullsInTheWindow(t *testing.T) {
	var nulls atomic.Int64 // NULLs the server saw: the probe's only (the workload sends none)
	srv := &nullserver.Server{Drop: func(prog, vers, proc, _ uint32) bool {
		if prog == 100003 && vers == 3 && proc == 0 {
			nulls.Add(1)
		}
		return false
	}}
	s := connect(t, startNull(t, srv), 2*time.Second, 0)
	w := loadWL(t, "name = t_getattr\nmix = getattr:1\n")
	fs, err := PrepareFileset(context.Background(), s, w, 200, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	const window, gap = time.Second, 50 * time.Millisecond
	cfg := RunConfig{Workload: w, Rate: 200, Duration: window, Warmup: 300 * time.Millisecond, Seed: 1, BesideNullGap: gap}
	before := nulls.Load()
	out, err := Run(context.Background(), s, fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := out.Result.NullRTTMs
	if n == nil {
		t.Fatal("no null_rtt_ms with the probe on")
	}
	sent := nulls.Load() - before
	t.Logf("null_rtt_ms %+v, server saw %d NULLs", *n, sent)
	if n.N < 1 || n.N > uint64(window/gap)+1 || !(n.Mean > 0) || n.GapMs != 50 || n.Timeouts != 0 {
		t.Errorf("null_rtt_ms n %d mean %v gap %v timeouts %d: want 1..%d calls, mean > 0", n.N, n.Mean, n.GapMs, n.Timeouts, window/gap+1)
	}
	if sent > int64(window/gap)+1 || uint64(sent) < n.N {
		t.Errorf("the server saw %d NULLs, the probe recorded %d: want at most %d, none in the warm-up", sent, n.N, window/gap+1)
	}
	cfg.BesideNullGap = 0
	if out, err = Run(context.Background(), s, fs, cfg); err != nil || out.Result.NullRTTMs != nil {
		t.Errorf("probe off: err %v, null_rtt_ms %+v", err, out.Result.NullRTTMs)
	}
}

// A beside probe that cannot connect warns and leaves null_rtt_ms out; the
// run goes on.
func TestBesideUnreachableWarns(t *testing.T) {
	s := connect(t, startNull(t, &nullserver.Server{}), 2*time.Second, 0)
	w := loadWL(t, "name = t_getattr\nmix = getattr:1\n")
	fs, err := PrepareFileset(context.Background(), s, w, 100, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	addr := s.Cfg.Server
	s.Cfg.Server = "127.0.0.1:1" // the probe's address only: the run keeps its connections
	defer func() { s.Cfg.Server = addr }()
	out, err := Run(context.Background(), s, fs, RunConfig{Workload: w, Rate: 100, Duration: 200 * time.Millisecond,
		Seed: 1, BesideNullGap: 50 * time.Millisecond, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.NullRTTMs != nil || !strings.Contains(log.String(), "no NULL calls beside the run") {
		t.Errorf("null_rtt_ms %+v, log %q", out.Result.NullRTTMs, log.String())
	}
}
