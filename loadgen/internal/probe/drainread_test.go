package probe

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nullserver"
)

// The READ stage reads only files with data, at block-aligned offsets inside
// the file, every block of a file and every file alike often.
func TestReadPicker(t *testing.T) {
	set := Handles{FH: []nfs3.FH{{1}, {2}, {3}, {4}}, Sizes: []uint64{0, 3 * ReadProbeBytes, 100, 5 * ReadProbeBytes}}
	p, err := newReadPicker(set, 7)
	if err != nil {
		t.Fatal(err)
	}
	const n = 30000
	files := map[int]int{}
	blocks := map[uint64]int{} // of file 3
	for range n {
		f, off := p.next()
		files[f]++
		if f == 0 || off%ReadProbeBytes != 0 || off >= set.Sizes[f] {
			t.Fatalf("READ of file %d (size %d) at %d", f, set.Sizes[f], off)
		}
		if f == 3 {
			blocks[off]++
		}
	}
	// uniform: each of 3 files n/3 = 10000 times, each of file 3's 5 blocks 2000 times; 5 standard
	// deviations of a binomial count (sqrt(n·p·(1−p)) ≈ 82 and 40) bound the test's noise
	for _, f := range []int{1, 2, 3} {
		if c := files[f]; c < 10000-5*82 || c > 10000+5*82 {
			t.Errorf("file %d picked %d times of %d, want ≈ 10000 (%v)", f, c, n, files)
		}
	}
	for b := uint64(0); b < 5; b++ {
		if c := blocks[b*ReadProbeBytes]; c < 2000-5*40 || c > 2000+5*40 {
			t.Errorf("block %d of file 3 read %d times, want ≈ 2000 (%v)", b, c, blocks)
		}
	}
	if _, err := newReadPicker(Handles{FH: []nfs3.FH{{1}}, Sizes: []uint64{0}}, 1); !errors.Is(err, ErrNoData) {
		t.Errorf("a file set without data: %v, want ErrNoData", err)
	}
}

// The window's Rank-th largest RTT decides (Rank 0: the median).
func TestRankStatistic(t *testing.T) {
	ms := time.Millisecond
	w := []time.Duration{1 * ms, 9 * ms, 2 * ms, 8 * ms, 3 * ms, 7 * ms, 4 * ms, 6 * ms, 5 * ms}
	for rank, want := range map[int]time.Duration{0: 5 * ms, 1: 9 * ms, 2: 8 * ms, 3: 7 * ms, 9: 1 * ms} {
		c := DrainConfig{Rank: rank}
		if got := c.stat(w); got != want {
			t.Errorf("rank %d (%s) of 1..9 ms = %v, want %v", rank, c.statName(), got, want)
		}
	}
	c := DefaultDrain()
	c.Rank = c.Window + 1
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), "rank") {
		t.Errorf("rank %d of a window of %d: Check() = %v", c.Rank, c.Window, err)
	}
}

// The READ stage's rule, against its default limit for an idle READ RTT of
// 300 µs (max(0.9 ms, 10.3 ms) = 10.3 ms): an idle window with one stray
// slow READ (a miss behind the throttle) and all-miss windows of a disk
// at ≤ 10 ms drain; a window of a backlog's tail — hits back at once,
// misses still queued — does not while two of its READs wait.
func TestReadRule(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	cases := []struct {
		rtts []time.Duration
		want bool
	}{
		{[]time.Duration{300 * us, 25 * ms, 280 * us, 400 * us, 350 * us}, true},    // one stray
		{[]time.Duration{8 * ms, 9 * ms, 10 * ms, 7 * ms, 9500 * us}, true},         // all misses of an idle disk
		{[]time.Duration{87 * ms, 480 * us, 176 * ms, 530 * us, 5 * ms}, false},     // a backlog's tail (measured)
		{[]time.Duration{200 * ms, 190 * ms, 90 * ms, 86 * ms, 190 * ms}, false},    // the backlog
		{[]time.Duration{300 * us, 11 * ms, 280 * us, 400 * us, 10400 * us}, false}, // two above the limit
	}
	for n, c := range cases {
		d := &drainer{cfg: DefaultReadDrain(), idle: 300 * us}
		var got bool
		for _, rtt := range c.rtts {
			got = d.observe(rtt)
		}
		if got != c.want {
			t.Errorf("window %d %v: drained %v, want %v (limit %v)", n, c.rtts, got, c.want, d.cfg.Limit(d.idle))
		}
	}
}

// A server whose READs are slow at first (a disk queue) and whose NULLs are
// not: the READ stage waits for it, the NULL drain does not see it.
func TestDrainReadSeesSlowReads(t *testing.T) {
	var first atomic.Int64
	s := &nullserver.Server{Delay: func(prog, _, proc, _ uint32) time.Duration {
		if prog != nfs3.Program || proc != uint32(nfs3.ProcRead) {
			return 0
		}
		now := time.Now().UnixNano()
		first.CompareAndSwap(0, now)
		if time.Duration(now-first.Load()) < 300*time.Millisecond {
			return 40 * time.Millisecond
		}
		return 0
	}}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(startServer(t, s)))
	set := Handles{FH: []nfs3.FH{{1}, {2}}, Sizes: []uint64{8192, 100}}
	null, err := Drain(context.Background(), addr, testDrain(5*time.Second, 200*time.Microsecond), "given")
	if err != nil || null.DrainS > 0.3 {
		t.Fatalf("NULL drain %+v, %v: want drained at once (the server's NULLs are fast)", null, err)
	}
	cfg := DefaultReadDrain()
	cfg.Timeout, cfg.IdleRTT, cfg.Gap = 5*time.Second, 500*time.Microsecond, 2*time.Millisecond
	d, err := DrainRead(context.Background(), addr, cfg, "state", set, 1)
	if err != nil || !d.Drained || d.Probe != ProbeRead || d.IdleFrom != "state" {
		t.Fatalf("READ drain %+v, %v: want drained against the idle READ RTT from the state", d, err)
	}
	if d.DrainS < 0.3 || d.MaxRTTUs < 40e3 || d.FirstUs[0] < 40e3 {
		t.Errorf("READ drain %+v: want ≥ 0.3 s behind READs of ≥ 40 ms", d)
	}
}
