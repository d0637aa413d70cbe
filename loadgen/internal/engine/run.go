package engine

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand"
	"time"

	"workbench/loadgen/internal/content"
	"workbench/loadgen/internal/pace"
	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/workload"
)

// RunConfig configures one measured run.
type RunConfig struct {
	Workload       *workload.Workload
	Rate           float64       // offered ops/s (> 0)
	Duration       time.Duration // measured interval
	Warmup         time.Duration // unrecorded interval before it
	Interval       time.Duration // time-series interval (0: results.DefaultInterval)
	Poisson        bool
	Seed           int64
	StartAt        time.Time // zero: start now
	MaxOutstanding int       // 0: derived from rate and timeout
	LagBound       time.Duration
	Quantum        time.Duration // shortest interval between metronome wake-ups at high rates (0: 50 µs)
	Shards         int           // metronome shards (0, 1: one), each with its own connections (shards.go)
	CPUs           []int         // pin shard k's metronome thread to CPUs[k mod len] (nil: no pinning)
	ClientID       int
	BesideNullGap  time.Duration // NULL calls beside the run, one every this long (beside.go; 0: none)
	Log            io.Writer
	Live           *Live // the run's counters published as it goes (live.go; nil: none)
}

// Outcome is what Run returns besides the Result.
type Outcome struct {
	Result          *results.Result
	Saturated       bool
	Reason          string
	Intended, Sent  int64         // in the measured interval
	MinLatency      time.Duration // smallest recorded reply latency
	Skipped         int64         // due calls not sent (cap hit / no target)
	LeftOutstanding int           // calls still unanswered after the drain
	CPUSeconds      float64
	WallSeconds     float64
}

// setUp is the set-up phase: it checks cfg and fills its defaults, builds
// the weighted object sets and the scratch pools (NFS calls, outside the
// measured interval), pre-allocates call slots and opens the sleeper.
//
// Shard k of n (shards.go) takes calls k, k+n, k+2n, ... of the schedule
// (times and procedures), the connections k, k+n, ..., a 1/n share of the
// call slots and its own scratch names; cfg is already checked.
func setUp(ctx context.Context, s *Session, fs *Fileset, cfg RunConfig, k, n int) (*runner, error) {
	pacer, err := pace.New(cfg.Rate, cfg.Poisson, cfg.Seed+1)
	if err != nil {
		return nil, err
	}
	w := cfg.Workload
	r := &runner{cfg: cfg, s: s, fs: fs, w: w, clients: s.Clients, pacer: pacer,
		rng:   rand.New(rand.NewSource(cfg.Seed + int64(k)*shardSeedStep)),
		sched: workload.NewScheduler(w.Mix, cfg.Seed),
		rec:   results.NewRecorder(), minLat: math.MaxInt64, shard: k, nshards: n}
	if n > 1 {
		r.pacer = shardPacer{p: pacer, k: int64(k), n: int64(n)}
		r.cfg.MaxOutstanding = (cfg.MaxOutstanding + n - 1) / n
		r.clients = nil
		for i := k; i < len(s.Clients); i += n {
			r.clients = append(r.clients, s.Clients[i])
		}
	}
	if r.ser, err = results.NewSeriesRecorder(cfg.Interval, cfg.Warmup, cfg.Duration); err != nil {
		return nil, err
	}
	r.setupObjects()
	r.data, r.gen = DataSource(w), writeStream(cfg.ClientID, k)<<32
	if s.V4 != nil {
		r.v4 = newRun4(s)
		r.ser.Version = results.NFSVersion41
	}
	if err := r.setupPools(ctx); err != nil {
		return nil, err
	}
	if r.v4 != nil {
		if err := r.start4(ctx); err != nil {
			r.v4.cancel()
			return nil, err
		}
	}
	// pre-allocate the slots one second of calls needs; more on demand
	for r.nslots < int(math.Min(cfg.Rate/float64(n), float64(r.cfg.MaxOutstanding))) && r.grow() {
	}
	r.q = make([]completion, 0, 4096)
	r.back = make([]completion, 0, 4096)
	r.sl = newSleeper()
	r.nextDue.Store(math.MaxInt64)
	r.warmNs = int64(cfg.Warmup)
	r.endNs = int64(cfg.Warmup + cfg.Duration)
	return r, nil
}

// checkRunConfig rejects a rate or duration ≤ 0 and a bad Interval
// (results.CheckInterval); defaults LagBound and Interval.
func checkRunConfig(cfg *RunConfig) error {
	if !(cfg.Rate > 0) {
		return fmt.Errorf("rate must be > 0 ops/s (got %v)", cfg.Rate)
	}
	if cfg.Duration <= 0 {
		return fmt.Errorf("duration must be > 0 (got %v)", cfg.Duration)
	}
	if cfg.LagBound <= 0 {
		cfg.LagBound = DefaultLagBound
	}
	if cfg.Quantum <= 0 {
		cfg.Quantum = minBatch
	}
	if cfg.Quantum > MaxQuantum {
		return fmt.Errorf("quantum must be <= %v (got %v)", MaxQuantum, cfg.Quantum)
	}
	if cfg.Interval == 0 { // the default, shortened to a shorter run (even below MinInterval)
		cfg.Interval = min(results.DefaultInterval, cfg.Duration)
		return results.CheckIntervalCount(cfg.Interval, cfg.Warmup, cfg.Duration)
	}
	return results.CheckInterval(cfg.Interval, cfg.Warmup, cfg.Duration)
}

// MaxQuantum bounds RunConfig.Quantum: half the default send-lag bound.
const MaxQuantum = time.Millisecond

// defaultMaxOutstanding is enough call slots for every call of one full
// call lifetime at the offered rate, with a margin:
//
//	min(rate · lifetime · 1.25 + 1024, 2^20).
func defaultMaxOutstanding(rateOpsPerS float64, lifetime time.Duration) int {
	m := rateOpsPerS*lifetime.Seconds()*1.25 + 1024
	return int(math.Min(m, 1<<20))
}

// callLifetime is the longest a call can stay unanswered before the RPC
// layer gives up on it: timeout × (retransmits + 1).
func (s *Session) callLifetime() time.Duration {
	return s.Cfg.Timeout * time.Duration(s.Cfg.Retransmits+1)
}

// commonStart is the start instant of the common-start phase:
// cfg.StartAt (so that several clients share one schedule), or now when it
// is zero or already past (with a warning).
func commonStart(cfg *RunConfig) time.Time {
	now := time.Now()
	if at := cfg.StartAt; !at.IsZero() {
		if late := now.Sub(at); late > 0 {
			if cfg.Log != nil {
				fmt.Fprintf(cfg.Log, "fstress: warning: --start-at is %.3fs in the past; starting now\n", late.Seconds())
			}
		} else {
			now = now.Add(-late) // monotonic reading of the start instant
		}
	}
	return now
}

// awaitStart waits for r.start: a Go timer until 10 ms before, then the
// sleeper. Returns early when ctx ends.
func (r *runner) awaitStart(ctx context.Context) {
	for d := time.Until(r.start); d > 0 && ctx.Err() == nil; d = time.Until(r.start) {
		if d > 20*time.Millisecond {
			select {
			case <-time.After(d - 10*time.Millisecond):
			case <-ctx.Done():
			}
		} else {
			r.sl.arm(r.now(), d)
			r.sl.wait(ctx.Done())
		}
	}
}

// drainGrace is how long the drain waits beyond the call lifetime.
const drainGrace = 500 * time.Millisecond

// drainOutstanding is the drain phase: after the last send it applies
// completions until no call is in flight or timeout × (retransmits+1) +
// 0.5 s have passed; calls still unanswered then are recorded as timeouts.
// It returns their number.
func (r *runner) drainOutstanding() int {
	deadline := time.Now().Add(r.s.callLifetime() + drainGrace)
	for r.inFlight > 0 && time.Now().Before(deadline) {
		r.pollReplies()
		r.drain()
		r.liveTick(r.now())
		if r.v4 != nil && len(r.v4.backlog) > 0 {
			r.flush4()
			r.flushSends()
		}
		if r.inFlight > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	r.drain()
	left := r.inFlight
	if left > 0 {
		r.countLeftovers()
	}
	return left
}

func cpuTime() float64 {
	return processCPU()
}

// writeStream is the high half of a runner's WRITE generations (the low
// half counts its WRITEs): the clock, the client and the shard mixed, so
// that runs, clients and shards write units unlike each other's.
func writeStream(clientID, shard int) uint64 {
	return uint64(uint32(content.Mix(uint64(time.Now().UnixNano()) ^ uint64(clientID)<<48 ^ uint64(shard)<<40)))
}
