package engine

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/results"
)

// A run with a Live publishes while it goes (a reader sees completions grow
// before the run ends) and, at its end, exactly the run's counts: every call
// (warm-up included) completed, none in flight, the send lags of the
// measured calls; a second run (2 shards) adds to the totals.
func TestLiveCountsOfRuns(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	_, port, _ := net.SplitHostPort(addr)
	mp, _ := strconv.Atoi(port)
	s, err := Connect(context.Background(), ConnConfig{Server: addr, MountPort: mp, Export: "/export", Timeout: 2 * time.Second,
		Retransmits: 1, Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	w := loadWL(t, "name = t_live\nmix = getattr:80, null:20\nfileset_files_per_ops = 0.02\n")
	fs, err := PrepareFileset(context.Background(), s, w, 1000, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	live := &Live{}
	cfg := RunConfig{Workload: w, Rate: 1000, Duration: time.Second, Warmup: 200 * time.Millisecond, Seed: 5, Live: live}
	seen := make(chan int64, 1)
	go func() { // the largest count seen while the run goes on
		var most int64
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && most < 600; {
			most = max(most, live.Snapshot().Completed)
			time.Sleep(10 * time.Millisecond)
		}
		seen <- most
	}()
	out, err := Run(context.Background(), s, fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if most := <-seen; most < 600 {
		t.Errorf("a reader saw at most %d completions during the run", most)
	}
	c := live.Snapshot()
	var lags int64
	for _, n := range c.Lag {
		lags += n
	}
	if c.Completed != 1200 || c.Sent() != 1200 || c.InFlight != 0 || c.Timeouts+c.TransportErrors+c.NFSErrors != 0 {
		t.Errorf("after the run: %+v, want 1200 completed (warm-up included), none in flight or failed", c)
	}
	if lags != out.Sent || c.LagSumNs <= 0 {
		t.Errorf("send lags counted %d (sum %d ns), want the %d measured calls", lags, c.LagSumNs, out.Sent)
	}
	cfg.Shards, cfg.Duration, cfg.Warmup = 2, 500*time.Millisecond, 0
	if _, err := Run(context.Background(), s, fs, cfg); err != nil {
		t.Fatal(err)
	}
	if c := live.Snapshot(); c.Completed != 1700 || c.InFlight != 0 {
		t.Errorf("after a second run on 2 shards: completed %d in flight %d, want 1700 and 0", c.Completed, c.InFlight)
	}
}

// The live send-lag histogram: bounds inclusive, the last bucket above them.
func TestLiveLagBuckets(t *testing.T) {
	var l liveRec
	now := int64(10 * time.Second)
	l.lags([]int64{now, now - int64(10*time.Microsecond), now - int64(11*time.Microsecond), now - int64(2*time.Second)}, now)
	if l.lag[0] != 2 || l.lag[1] != 1 || l.lag[NumLagBuckets-1] != 1 {
		t.Errorf("buckets %v", l.lag)
	}
	if want := int64(2*time.Second + 21*time.Microsecond); l.lagSum != want {
		t.Errorf("sum %d, want %d", l.lagSum, want)
	}
}

// BenchmarkRecordLags is the send-lag recording of a batch of lagBatch
// calls (recordLags), without and with a live view.
func BenchmarkRecordLags(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "live"
		}
		b.Run(name, func(b *testing.B) {
			r := &runner{rec: results.NewRecorder(), start: time.Now()}
			if on {
				r.lv.pub = &liveShard{}
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				t := r.now() - int64(30*time.Microsecond)
				for k := 0; k < lagBatch; k++ {
					r.lagLater(t)
				}
			}
		})
	}
}
