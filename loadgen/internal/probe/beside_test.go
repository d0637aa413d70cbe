package probe

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nfs4"
	"workbench/loadgen/internal/nullserver"
)

// dialBesideT connects a beside probe to s with gap and timeout.
func dialBesideT(t *testing.T, s *nullserver.Server, vers uint32, gap, timeout time.Duration) *Beside {
	t.Helper()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(startServer(t, s)))
	b, err := DialBeside(context.Background(), BesideConfig{Addr: addr, Vers: vers, Gap: gap, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// One NULL per gap over the window, each with its RTT, v3 and v4.
func TestBesideCountsTheWindow(t *testing.T) {
	const window, gap = 500 * time.Millisecond, 50 * time.Millisecond
	for _, vers := range []uint32{nfs3.Version, nfs4.Version} {
		b := dialBesideT(t, &nullserver.Server{}, vers, gap, 0)
		from := time.Now().Add(20 * time.Millisecond)
		n := b.Run(context.Background(), from, from.Add(window))
		if late := time.Since(from.Add(window)); late > time.Second {
			t.Errorf("v%d: Run returned %v after the window", vers, late)
		}
		if n.N < 1 || n.N > uint64(window/gap)+1 || !(n.Mean > 0) || n.Timeouts != 0 || n.Errors != 0 {
			t.Errorf("v%d: %+v (want 1..%d calls, mean > 0, no timeouts or errors)", vers, n, window/gap+1)
		}
		if !(n.P50 <= n.P99 && n.P99 <= n.Max+0.001 && n.GapMs == 50) || n.Exact.N != n.N {
			t.Errorf("v%d: p50 %v p99 %v max %v gap %v exact %+v", vers, n.P50, n.P99, n.Max, n.GapMs, n.Exact)
		}
	}
}

// A server that drops NULLs: each call is a timeout with no RTT, and the
// schedule skips the slots a timed-out call overran.
func TestBesideTimeouts(t *testing.T) {
	const window, gap, timeout = 400 * time.Millisecond, 50 * time.Millisecond, 120 * time.Millisecond
	s := &nullserver.Server{Drop: func(_, _, proc, _ uint32) bool { return proc == 0 }}
	b := dialBesideT(t, s, nfs3.Version, gap, timeout)
	from := time.Now()
	n := b.Run(context.Background(), from, from.Add(window))
	// calls at 0, ≥ 0.12 s (slot 150 ms), ≥ 0.27 s (300 ms): 3, at most ⌈0.4 / 0.12⌉
	if n.N != 0 || n.Timeouts < 1 || n.Timeouts > 4 || n.Errors != 0 {
		t.Errorf("%+v: want n 0, 1..4 timeouts", n)
	}
}

// The run's end (ctx) stops the probe at once, mid-window and mid-call.
func TestBesideStopsWithTheRun(t *testing.T) {
	arrived := make(chan struct{}, 100)
	s := &nullserver.Server{Delay: func(_, _, proc, _ uint32) time.Duration {
		arrived <- struct{}{}
		return 300 * time.Millisecond // the call is still out when the run ends
	}}
	b := dialBesideT(t, s, nfs3.Version, 10*time.Millisecond, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan uint64, 1)
	go func() {
		from := time.Now()
		n := b.Run(ctx, from, from.Add(time.Hour))
		done <- n.N + n.Timeouts + n.Errors
	}()
	<-arrived
	cancel()
	select {
	case calls := <-done:
		if calls != 0 {
			t.Errorf("%d calls counted; the one out at the end is not", calls)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// A gap below MinBesideGap is refused; an unreachable server is an error.
func TestDialBesideErrors(t *testing.T) {
	if _, err := DialBeside(context.Background(), BesideConfig{Addr: "127.0.0.1:1", Vers: 3, Gap: time.Microsecond}); err == nil {
		t.Error("gap 1µs accepted")
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(deadPort(t)))
	if _, err := DialBeside(context.Background(), BesideConfig{Addr: addr, Vers: 3, Gap: time.Second}); err == nil {
		t.Error("connected to a dead port")
	}
}

// next skips the slots a slow call overran, to the first one not passed.
func TestBesideNextSkips(t *testing.T) {
	b := &Beside{cfg: BesideConfig{Gap: 100 * time.Millisecond}}
	from := time.Now().Add(-1050 * time.Millisecond)
	n := b.next(from, from)
	if since := n.Sub(from); since%b.cfg.Gap != 0 || since < 1050*time.Millisecond || since > 1300*time.Millisecond {
		t.Errorf("next slot %v after from, want the first multiple of 100 ms past 1.05 s", since)
	}
	if fut := time.Now().Add(time.Hour); b.next(fut, from) != fut.Add(b.cfg.Gap) {
		t.Error("a future slot is not followed by the next one")
	}
}
