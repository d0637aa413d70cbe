package probe

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nullserver"
)

// slowNull is a server whose NFS NULL replies take slow until `for` has
// passed since its first NULL call (forever when `for` < 0), then come at once.
func slowNull(t *testing.T, slow, slowFor time.Duration) string {
	var once sync.Once
	var first time.Time
	var mu sync.Mutex
	s := &nullserver.Server{Delay: func(prog, _, proc, _ uint32) time.Duration {
		if prog != nfs3.Program || proc != uint32(nfs3.ProcNull) {
			return 0
		}
		mu.Lock()
		defer mu.Unlock()
		once.Do(func() { first = time.Now() })
		if slowFor < 0 || time.Since(first) < slowFor {
			return slow
		}
		return 0
	}}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(startServer(t, s)))
}

func testDrain(timeout, idle time.Duration) DrainConfig {
	c := DefaultDrain()
	c.Timeout, c.IdleRTT, c.Gap = timeout, idle, 2*time.Millisecond
	return c
}

func TestMedianAndLimit(t *testing.T) {
	ms := time.Millisecond
	if m := median([]time.Duration{9 * ms, 1 * ms, 5 * ms}); m != 5*ms {
		t.Errorf("median of 9,1,5 ms = %v, want 5ms", m)
	}
	if m := median([]time.Duration{4 * ms, 1 * ms, 2 * ms, 3 * ms}); m != 2500*time.Microsecond {
		t.Errorf("median of 4,1,2,3 ms = %v, want 2.5ms (mean of the middle two)", m)
	}
	c := DefaultDrain() // factor 3, margin 1 ms
	if l := c.Limit(100 * time.Microsecond); l != 1100*time.Microsecond {
		t.Errorf("limit for idle 100µs = %v, want idle + margin = 1.1ms", l)
	}
	if l := c.Limit(2 * ms); l != 6*ms {
		t.Errorf("limit for idle 2ms = %v, want idle × factor = 6ms", l)
	}
}

// The window's median decides: one fast reply in a backlog does not drain,
// one slow reply on an idle server does not hold the drain back.
func TestObserveWindow(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	cases := [][]struct {
		rtt  time.Duration
		want bool
	}{
		{{50 * ms, false}, {10 * ms, false}, {200 * us, false}, {40 * ms, false}, {30 * ms, false},
			{300 * us, false}, {400 * us, true}},
		{{300 * us, false}, {20 * ms, false}, {400 * us, true}},
	}
	for n, seq := range cases {
		d := &drainer{cfg: DrainConfig{Factor: 3, Margin: ms, Window: 3}, idle: 100 * us} // limit 1.1 ms
		for i, c := range seq {
			if got := d.observe(c.rtt); got != c.want {
				t.Errorf("sequence %d, probe %d (%v): drained %v, want %v", n, i, c.rtt, got, c.want)
			}
		}
	}
}

func TestDrainSlowThenFast(t *testing.T) {
	addr := slowNull(t, 30*time.Millisecond, 300*time.Millisecond)
	d, err := Drain(context.Background(), addr, testDrain(5*time.Second, 200*time.Microsecond), "given")
	if err != nil {
		t.Fatal(err)
	}
	if !d.Drained || d.IdleFrom != "given" || d.LimitUs != 1200 {
		t.Fatalf("drain %+v: want drained against the given idle 200 µs (limit 1200 µs)", d)
	}
	if d.DrainS < 0.3 || d.DrainS > 2 {
		t.Errorf("drain_s %.3f, want the 0.3 s the server was slow (and well under the bound)", d.DrainS)
	}
	for _, us := range d.FirstUs {
		if us < 30e3 {
			t.Errorf("first RTTs %v µs: want each ≥ the 30 ms backlog", d.FirstUs)
		}
	}
	if len(d.LastUs) != DefaultDrainWindow || median(us2d(d.LastUs)) > 1200*time.Microsecond {
		t.Errorf("last window %v µs: want %d RTTs with median ≤ 1200 µs", d.LastUs, DefaultDrainWindow)
	}
	if d.MaxRTTUs < 30e3 || d.Probes < DefaultDrainWindow+5 {
		t.Errorf("max %.0f µs over %d probes: want the slow ones counted", d.MaxRTTUs, d.Probes)
	}
}

func TestDrainAlwaysSlowIsBounded(t *testing.T) {
	addr := slowNull(t, 40*time.Millisecond, -1)
	t0 := time.Now()
	d, err := Drain(context.Background(), addr, testDrain(400*time.Millisecond, 200*time.Microsecond), "state")
	var nd *NotDrainedError
	if !errors.As(err, &nd) || nd.Drain != d || d.Drained {
		t.Fatalf("Drain = %+v, %v; want a NotDrainedError with its record", d, err)
	}
	if el := time.Since(t0); el > 1500*time.Millisecond {
		t.Errorf("the drain took %v, want about its 400 ms bound", el)
	}
	if d.DrainS < 0.4 || d.Probes < 5 || d.MaxRTTUs < 40e3 || d.IdleFrom != "state" {
		t.Errorf("record %+v: want ≥ 0.4 s, ≥ 5 probes of ≥ 40 ms", d)
	}
	if msg := err.Error(); !strings.Contains(msg, "not drained") || !strings.Contains(msg, "limit 1200 µs") {
		t.Errorf("message %q: want it to name the failure and the limit", msg)
	}
}

// A server that never answers NULL: the one outstanding probe ends at the bound.
func TestDrainSilentServer(t *testing.T) {
	port := startServer(t, &nullserver.Server{Drop: func(prog, _, proc, _ uint32) bool {
		return prog == nfs3.Program && proc == uint32(nfs3.ProcNull)
	}})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	d, err := Drain(context.Background(), addr, testDrain(300*time.Millisecond, time.Millisecond), "given")
	var nd *NotDrainedError
	if !errors.As(err, &nd) || d.Probes != 1 || d.MaxRTTUs < 290e3 {
		t.Fatalf("Drain = %+v, %v; want not drained after one probe that lasted the 300 ms bound", d, err)
	}
}

// Idle unknown: the first window on a fresh server is the idle level.
func TestDrainMeasuresIdle(t *testing.T) {
	addr := slowNull(t, 0, 0)
	d, err := Drain(context.Background(), addr, testDrain(5*time.Second, 0), "state")
	if err != nil || !d.Drained || d.IdleFrom != "measured" || d.Probes != DefaultDrainWindow {
		t.Fatalf("Drain = %+v, %v; want drained after one window, idle measured", d, err)
	}
	if want := median(us2d(d.FirstUs)); time.Duration(d.IdleRTTUs*1e3) != want || d.IdleRTTUs > 50e3 {
		t.Errorf("idle %.1f µs, want the first window's median %v (loopback: well under 50 ms)", d.IdleRTTUs, want)
	}
}

func TestDrainCheck(t *testing.T) {
	bad := map[string]func(*DrainConfig){
		"--drain-timeout":  func(c *DrainConfig) { c.Timeout = 0 },
		"--drain-idle-rtt": func(c *DrainConfig) { c.IdleRTT = -1 },
		"--drain-factor":   func(c *DrainConfig) { c.Factor = 0.5 },
		"--drain-margin":   func(c *DrainConfig) { c.Margin = -1 },
		"--drain-window":   func(c *DrainConfig) { c.Window = 0 },
	}
	for want, mod := range bad {
		c := DefaultDrain()
		mod(&c)
		if err := c.Check(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Check() = %v", want, err)
		}
	}
	if _, err := Drain(context.Background(), "127.0.0.1:1", DrainConfig{}, ""); err == nil {
		t.Error("Drain with a zero config: want the Check error")
	}
}

func TestIdleState(t *testing.T) {
	p := filepath.Join(t.TempDir(), "drain.json")
	if idle, err := LoadIdle(p, "s:1", "/e", ProbeNull); idle != 0 || err != nil {
		t.Fatalf("absent file: %v %v, want 0, nil", idle, err)
	}
	if err := SaveIdle(p, "s:1", "/e", ProbeNull, 123.5); err != nil {
		t.Fatal(err)
	}
	if idle, err := LoadIdle(p, "s:1", "/e", ProbeNull); idle != 123500*time.Nanosecond || err != nil {
		t.Errorf("LoadIdle = %v %v, want 123.5µs", idle, err)
	}
	if idle, _ := LoadIdle(p, "s:1", "/e", ProbeRead); idle != 0 {
		t.Errorf("the READ idle RTT before any was saved: %v, want 0", idle)
	}
	// the READ stage's figure joins the NULL stage's
	if err := SaveIdle(p, "s:1", "/e", ProbeRead, 2500); err != nil {
		t.Fatal(err)
	}
	null, _ := LoadIdle(p, "s:1", "/e", ProbeNull)
	read, _ := LoadIdle(p, "s:1", "/e", ProbeRead)
	if null != 123500*time.Nanosecond || read != 2500*time.Microsecond {
		t.Errorf("after saving READ: null %v, read %v; want 123.5µs and 2.5ms", null, read)
	}
	if idle, _ := LoadIdle(p, "s:2", "/e", ProbeNull); idle != 0 {
		t.Errorf("another server's idle RTT was taken: %v", idle)
	}
	// another server's state is replaced, not merged
	if err := SaveIdle(p, "s:2", "/e", ProbeRead, 900); err != nil {
		t.Fatal(err)
	}
	if idle, _ := LoadIdle(p, "s:2", "/e", ProbeNull); idle != 0 {
		t.Errorf("s:2 took s:1's NULL idle RTT: %v", idle)
	}
	if err := SaveIdle(filepath.Join(p, "x"), "s", "/e", ProbeNull, 1); err == nil {
		t.Error("SaveIdle under a file: want an error")
	}
}

func us2d(us []float64) []time.Duration {
	out := make([]time.Duration, len(us))
	for i, u := range us {
		out[i] = time.Duration(u * 1e3)
	}
	return out
}

// TestIdleStateKeepsWholeNanoseconds: an idle RTT saved in µs and loaded back
// is the same Duration (129414 ns was once read back as 129413 ns: 129.414 ×
// 1e3 is 129413.99… in float64, and the conversion truncated).
func TestIdleStateKeepsWholeNanoseconds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "drain.json")
	for ns := time.Duration(129_000); ns <= 131_000; ns++ {
		if err := SaveIdle(p, "s:1", "/e", ProbeNull, micros(ns)); err != nil {
			t.Fatal(err)
		}
		if got, err := LoadIdle(p, "s:1", "/e", ProbeNull); got != ns || err != nil {
			t.Fatalf("saved %d ns, loaded %d ns (%v)", ns, got, err)
		}
	}
}
