package rpc_test

import (
	"context"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/rpc"
)

// startNull starts a null server on loopback and returns its address.
func startNull(tb testing.TB, s *nullserver.Server) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			tb.Errorf("Serve did not return")
		}
	})
	return ln.Addr().String()
}

// benchAddr is the null server to benchmark against: FSTRESS_BENCH_ADDR
// (e.g. a separate "fstress nullserver" process pinned to another core) or
// an in-process server.
func benchAddr(b *testing.B) string {
	if a := os.Getenv("FSTRESS_BENCH_ADDR"); a != "" {
		return a
	}
	return startNull(b, &nullserver.Server{})
}

func benchCalls(b *testing.B, proc nfs3.Proc, window int) {
	addr := benchAddr(b)
	c, err := rpc.Dial(addr, rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := nfs3.Request{Proc: proc, FH: nullserver.RootFH}
	sem := make(chan struct{}, window)
	var wg sync.WaitGroup
	var errs atomic.Int64
	done := func(body []byte, err error) {
		if err != nil {
			errs.Add(1)
		}
		<-sem
		wg.Done()
	}
	args := req.Encode
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sem <- struct{}{}
		wg.Add(1)
		if err := c.Go(nfs3.Program, nfs3.Version, uint32(proc), args, done); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	b.StopTimer()
	if errs.Load() != 0 {
		b.Fatalf("%d errors", errs.Load())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkClientNull drives NULL calls (up to 256 outstanding) against the null server.
func BenchmarkClientNull(b *testing.B) { benchCalls(b, nfs3.ProcNull, 256) }

// BenchmarkClientGetattr drives GETATTR calls (up to 256 outstanding).
func BenchmarkClientGetattr(b *testing.B) { benchCalls(b, nfs3.ProcGetattr, 256) }

// BenchmarkClientNullWindow8 keeps only 8 calls outstanding (little batching).
func BenchmarkClientNullWindow8(b *testing.B) { benchCalls(b, nfs3.ProcNull, 8) }

// BenchmarkClientNullSync is one call at a time: the round trip.
func BenchmarkClientNullSync(b *testing.B) { benchCalls(b, nfs3.ProcNull, 1) }

// BenchmarkClientPaced sends b.N NULL calls open-loop at a fixed 150k
// calls/s (the contract's one-core goal; FSTRESS_BENCH_RATE overrides) and reports the achieved rate and
// the process CPU time per call (client and, unless FSTRESS_BENCH_ADDR is
// set, the in-process null server). Run with -benchtime=300000x -cpu 1.
func BenchmarkClientPaced(b *testing.B) {
	rate := 150000.0
	if r, err := strconv.ParseFloat(os.Getenv("FSTRESS_BENCH_RATE"), 64); err == nil && r > 0 {
		rate = r
	}
	addr := benchAddr(b)
	c, err := rpc.Dial(addr, rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var errs, done atomic.Int64
	cb := func(_ []byte, _ rpc.CallInfo, err error) {
		if err != nil {
			errs.Add(1)
		}
		done.Add(1)
	}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	start := time.Now()
	sent := 0
	for sent < b.N {
		due := int(time.Since(start).Seconds()*rate) + 1
		for ; sent < due && sent < b.N; sent++ {
			if err := c.GoInfo(nfs3.Program, nfs3.Version, 0, nil, cb); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(20 * time.Microsecond)
	}
	for i := 0; done.Load() < int64(b.N) && i < 5000; i++ {
		time.Sleep(time.Millisecond)
	}
	el := time.Since(start)
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	if errs.Load() != 0 || done.Load() != int64(b.N) {
		b.Fatalf("%d errors, %d/%d done", errs.Load(), done.Load(), b.N)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "calls/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/call")
}
