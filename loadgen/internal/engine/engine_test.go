package engine

import (
	"context"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/workload"
)

// startNull serves an in-process null server; returns its address.
func startNull(t *testing.T, srv *nullserver.Server) string {
	t.Helper()
	addr, stop, err := srv.ServeLoopback()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr.String()
}

// delayProxy forwards to target; replies (server → client) are held back by
// delay, and dropped entirely while stall is set.
type delayProxy struct {
	delay time.Duration
	stall atomic.Bool
}

func (p *delayProxy) start(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				return
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(s, c); s.Close() }()
			go func() { defer wg.Done(); p.back(c, s); c.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

type chunk struct {
	at time.Time
	b  []byte
}

func (p *delayProxy) back(c, s net.Conn) {
	ch := make(chan chunk, 1<<16)
	go func() {
		defer close(ch)
		buf := make([]byte, 64<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 && !p.stall.Load() {
				ch <- chunk{time.Now().Add(p.delay), append([]byte(nil), buf[:n]...)}
			}
			if err != nil {
				return
			}
		}
	}()
	for k := range ch {
		if d := time.Until(k.at); d > 0 {
			time.Sleep(d)
		}
		if _, err := c.Write(k.b); err != nil {
			return
		}
	}
}

func loadWL(t *testing.T, text string) *workload.Workload {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.wl")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := workload.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func connect(t *testing.T, addr string, timeout time.Duration, retrans int) *Session {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	var mp int
	for _, c := range port {
		mp = mp*10 + int(c-'0')
	}
	s, err := Connect(context.Background(), ConnConfig{Server: addr, MountPort: mp, Export: "/export", Timeout: timeout, Retransmits: retrans})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// prepareAndRun builds cfg.Workload's file set for cfg.Rate on s and runs cfg on it.
func prepareAndRun(t *testing.T, s *Session, cfg RunConfig) *Outcome {
	t.Helper()
	fs, err := PrepareFileset(context.Background(), s, cfg.Workload, cfg.Rate, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), s, fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRateAndMixAgainstNullServer(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	s := connect(t, addr, 2*time.Second, 1)
	w := loadWL(t, "name = t_mix\nmix = getattr:50, lookup:20, read:20, write:5, readdir:3, fsstat:2\nfileset_files_per_ops = 0.02\nfile_size = 16K\n")
	out := prepareAndRun(t, s, RunConfig{Workload: w, Rate: 5000, Duration: 3 * time.Second, Warmup: 200 * time.Millisecond, Seed: 3})
	r := out.Result
	steal := math.NaN()
	if r.HostStealPct != nil {
		steal = *r.HostStealPct
	}
	t.Logf("intended %d sent %d achieved %.1f lag p99 %.3f ms cpu %.2fs steal %.2f %% sat=%v %s", out.Intended, out.Sent, r.AchievedRate, r.SendLagMs.P99, out.CPUSeconds, steal, out.Saturated, out.Reason)
	if math.Abs(r.AchievedRate-5000)/5000 > 0.005 {
		t.Errorf("achieved %.1f ops/s, want 5000 ±0.5%%", r.AchievedRate)
	}
	if out.Intended != 15000 {
		t.Errorf("intended %d calls in 3 s at 5000/s, want 15000", out.Intended)
	}
	if r.Errors != 0 || r.Timeouts != 0 {
		t.Errorf("errors %d timeouts %d", r.Errors, r.Timeouts)
	}
	for op, want := range w.MixTarget() {
		got := r.MixActual[op]
		if math.Abs(got-want) > 0.002 { // 15000 ops: stratified scheduler keeps each share within 1/n per block
			t.Errorf("mix %s: %.4f, want %.4f", op, got, want)
		}
	}
	// send lag depends on how busy the (shared) machine is; the other
	// saturation reasons must never fire at this rate
	if out.Saturated && !strings.HasPrefix(out.Reason, "send-lag") {
		t.Errorf("saturated at 5000 ops/s: %s", out.Reason)
	}
	// the measured window (3 s) began after the warm-up: /proc/stat was read twice
	if r.HostStealPct == nil || *r.HostStealPct < 0 || *r.HostStealPct > 100 {
		t.Errorf("host steal over the window: %v", r.HostStealPct)
	}
	if out.Saturated && !strings.Contains(out.Reason, "% of CPU time)") {
		t.Errorf("a send-lag reason should carry the host's steal: %s", out.Reason)
	}
}

func TestLatencyFromIntendedTime(t *testing.T) {
	const delay = 20 * time.Millisecond
	addr := startNull(t, &nullserver.Server{})
	p := &delayProxy{delay: delay}
	paddr := p.start(t, addr)
	s := connect(t, paddr, 2*time.Second, 0)
	w := loadWL(t, "name = t_null\nmix = null:1\n")
	out := prepareAndRun(t, s, RunConfig{Workload: w, Rate: 2000, Duration: time.Second, Seed: 1})
	r := out.Result
	t.Logf("p50 %.2f ms min-ish mean %.2f max %.2f achieved %.1f", r.P50Ms, r.MeanMs, r.MaxMs, r.AchievedRate)
	if r.OpsTotal != 2000 {
		t.Errorf("ops_total %d, want 2000", r.OpsTotal)
	}
	// every reply was held back ≥ delay, so every latency (from the
	// intended time, which is ≤ the actual send time) is ≥ delay
	if !r.RepliesPolled && replyPoll == "" {
		t.Error("at 2000 ops/s the metronome should read the replies itself (replies_polled)")
	}
	if out.MinLatency < delay {
		t.Errorf("min latency %v < injected delay %v", out.MinLatency, delay)
	}
	if r.MeanMs < delay.Seconds()*1e3 {
		t.Errorf("mean latency %.3f ms < injected delay %v", r.MeanMs, delay)
	}
}

func TestStalledServerTimeoutsAndSaturation(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	p := &delayProxy{}
	paddr := p.start(t, addr)
	s := connect(t, paddr, 200*time.Millisecond, 0)
	w := loadWL(t, "name = t_null\nmix = null:1\n")
	fs, err := PrepareFileset(context.Background(), s, w, 1000, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p.stall.Store(true)
	t0 := time.Now()
	out, err := Run(context.Background(), s, fs, RunConfig{Workload: w, Rate: 1000, Duration: 500 * time.Millisecond, Seed: 1, MaxOutstanding: 200})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Result
	t.Logf("timeouts %d errors %d sat %v (%s) in %v", r.Timeouts, r.Errors, out.Saturated, out.Reason, time.Since(t0))
	if r.Timeouts == 0 {
		t.Error("no timeouts against a stalled server")
	}
	if !out.Saturated || !r.GeneratorSaturated {
		t.Error("outstanding cap hit but not flagged")
	}
	if time.Since(t0) > 3*time.Second {
		t.Errorf("run+drain took %v (bounded by duration + timeout)", time.Since(t0))
	}
}

func TestSendLagReasonCarriesHostSteal(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	s := connect(t, addr, 2*time.Second, 1)
	w := loadWL(t, "name = t_null\nmix = null:1\n")
	fs, err := PrepareFileset(context.Background(), s, w, 1000, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// a 1 ns bound: every real send is later than that, so the lag rule fires
	out, err := Run(context.Background(), s, fs, RunConfig{Workload: w, Rate: 1000, Duration: 500 * time.Millisecond,
		Warmup: 100 * time.Millisecond, Seed: 1, LagBound: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Saturated || !strings.HasPrefix(out.Reason, "send-lag p99 ") || !strings.Contains(out.Reason, " (host steal ") ||
		!strings.HasSuffix(out.Reason, "% of CPU time)") {
		t.Errorf("reason %q: want the send-lag rule with the host's steal", out.Reason)
	}
}

func TestLayoutPrefixStable(t *testing.T) {
	w, err := workload.Load("web_server")
	if err != nil {
		t.Fatal(err)
	}
	small := GenLayout(w, LayoutSeed, 100, 4)
	big := GenLayout(w, LayoutSeed, 1000, 40)
	if len(small.Files) != 100 || len(big.Files) != 1000 {
		t.Fatalf("files %d %d", len(small.Files), len(big.Files))
	}
	for i, f := range small.Files {
		if big.Files[i] != f {
			t.Fatalf("file %d differs: %+v vs %+v", i, f, big.Files[i])
		}
	}
	for i, d := range small.Dirs {
		if big.Dirs[i] != d {
			t.Fatalf("dir %d differs", i)
		}
	}
	for _, d := range big.Dirs {
		if int(d.Depth) > w.MaxDepth {
			t.Fatalf("depth %d > max %d", d.Depth, w.MaxDepth)
		}
	}
	// names unique within a directory
	seen := map[string]bool{}
	for _, f := range big.Files {
		k := big.Path(f.Dir) + "/" + f.Name
		if seen[k] {
			t.Fatalf("duplicate %s", k)
		}
		seen[k] = true
	}
	for _, name := range workload.Canned() {
		w, _ := workload.Load(name)
		f, d := w.FilesetSize(500)
		l := GenLayout(w, LayoutSeed, f, d)
		if len(l.Files) != f || len(l.Dirs) < 1 {
			t.Errorf("%s: %d files (want %d), %d dirs", name, len(l.Files), f, len(l.Dirs))
		}
	}
}

func TestFilesetReuse(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	s := connect(t, addr, 2*time.Second, 1)
	w, _ := workload.Load("specsfs97")
	fs, err := PrepareFileset(context.Background(), s, w, 20, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if fs.Created == 0 || len(fs.FileFH) == 0 {
		t.Fatalf("created %d files %d", fs.Created, len(fs.FileFH))
	}
	for i, fh := range fs.FileFH {
		if len(fh) == 0 {
			t.Fatalf("file %d has no handle", i)
		}
	}
	// a short specsfs97 run exercises every op kind incl. create/remove pools
	out, err := Run(context.Background(), s, fs, RunConfig{Workload: w, Rate: 2000, Duration: 500 * time.Millisecond, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Errors != 0 || out.Result.Timeouts != 0 || out.Skipped != 0 {
		t.Errorf("errors %d timeouts %d skipped %d", out.Result.Errors, out.Result.Timeouts, out.Skipped)
	}
}

// TestFirstCallsNameTheOpStream: a run's result names its first calls; the same seed gives the
// same calls (load hosts sharing a seed would send in lock step), another seed other calls.
func TestFirstCallsNameTheOpStream(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	s := connect(t, addr, 2*time.Second, 0)
	w := loadWL(t, "name = t_mix\nmix = getattr:1, lookup:1, read:1, access:1\n")
	fs, err := PrepareFileset(context.Background(), s, w, 200, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	calls := func(seed int64) []string {
		out, err := Run(context.Background(), s, fs, RunConfig{Workload: w, Rate: 200, Duration: 200 * time.Millisecond, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return out.Result.FirstCalls
	}
	a, again, b := calls(1), calls(1), calls(1000004)
	if len(a) != FirstCallsKept || !reflect.DeepEqual(a, again) {
		t.Fatalf("seed 1 twice: %q vs %q (want %d calls, equal)", a, again, FirstCallsKept)
	}
	if reflect.DeepEqual(a, b) {
		t.Errorf("seeds 1 and 1000004 sent the same first calls %q", a)
	}
}
