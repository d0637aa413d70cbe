package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/pace"
	"workbench/loadgen/internal/results"
)

// Shards. One schedule — call i intended at t_i with the i-th procedure of
// the workload's scheduler — is split over n metronome shards: shard k
// sends calls i ≡ k (mod n), each from its own goroutine (pinned to a CPU
// of RunConfig.CPUs when given), on its own connections (k, k+n, ...)
// with its own reader goroutines, call slots, completion queue, sleeper
// and recorders. No call is sent twice or skipped: shard k's j-th call is
// call j·n + k, its time from the one pacer (shardPacer) and its procedure
// from its own copy of the scheduler advanced n steps per call. Targets
// are drawn by each shard's own generator (seed + k·shardSeedStep; shard 0
// draws exactly as a run without shards) and name-space ops use
// per-shard scratch names. At the end the shards' recorders and series
// merge exactly (histograms add) and the verdict is the one rule applied
// to the merged counts.

// shardSeedStep separates the target generators of the shards.
const shardSeedStep = 1_000_003

// shardPacer is shard k of n of a pacer: its j-th time is the pacer's
// (j·n + k)-th. Poisson pacers advance in order, so each shard's copy
// replays the whole sequence (n draws per call, a few ns each).
type shardPacer struct {
	p    pace.Pacer
	k, n int64
}

func (s shardPacer) Next(j int64) time.Duration { return s.p.Next(j*s.n + s.k) }

// nextOp is the procedure of this shard's next call: the scheduler's
// (j·n + k)-th.
func (r *runner) nextOp() nfs3.Proc {
	if r.nshards <= 1 {
		return r.sched.Next()
	}
	var op nfs3.Proc
	for i := 0; i < r.nshards; i++ {
		if o := r.sched.Next(); i == r.shard {
			op = o
		}
	}
	return op
}

// checkShards checks cfg (checkRunConfig), fills MaxOutstanding and
// returns the number of shards: at least 1, at most the connections.
func checkShards(s *Session, cfg *RunConfig) (int, error) {
	if err := checkRunConfig(cfg); err != nil {
		return 0, err
	}
	if cfg.MaxOutstanding <= 0 {
		cfg.MaxOutstanding = defaultMaxOutstanding(cfg.Rate, s.callLifetime())
	}
	n := max(cfg.Shards, 1)
	switch {
	case n > MaxShards:
		return 0, fmt.Errorf("shards must be <= %d (got %d)", MaxShards, n)
	case n > 1 && s.V4 != nil:
		return 0, fmt.Errorf("--shards > 1 is NFSv3 only (one NFSv4.1 session's slots are not split yet)")
	case n > len(s.Clients):
		return 0, fmt.Errorf("%d shards need at least %d connections (have %d)", n, n, len(s.Clients))
	case n > 1 && cfg.Rate/float64(n) < 1:
		return 0, fmt.Errorf("rate %v ops/s is too low for %d shards", cfg.Rate, n)
	}
	return n, nil
}

// MaxShards bounds RunConfig.Shards.
const MaxShards = 256

// Run runs the measured interval against a prepared file set, in the five
// phases of the package doc — set-up, common start, metronome loop, drain,
// verdict — on RunConfig.Shards metronome shards (default 1).
func Run(ctx context.Context, s *Session, fs *Fileset, cfg RunConfig) (*Outcome, error) {
	n, err := checkShards(s, &cfg)
	if err != nil {
		return nil, err
	}
	rs := make([]*runner, 0, n)
	defer func() {
		for _, r := range rs {
			r.sl.close()
		}
	}()
	for k := 0; k < n; k++ {
		r, err := setUp(ctx, s, fs, cfg, k, n)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	if cfg.Live != nil {
		for k, p := range cfg.Live.attach(n) {
			rs[k].lv.pub = p
		}
		defer cfg.Live.detach()
	}
	beside := dialBeside(ctx, s, &cfg)
	start := commonStart(&cfg)
	startWall := time.Now().Add(time.Until(start))
	cpu0 := cpuTime()
	stopBeside := startBeside(ctx, beside, start, &cfg)
	left, stealPct, stealOK := runShards(ctx, rs, start, cfg)
	nullRTT := stopBeside()
	tot, series := mergeShards(rs, cfg)
	out := &Outcome{Intended: tot.intended, Sent: tot.sent, Skipped: tot.skipped, LeftOutstanding: left,
		WallSeconds: time.Since(startWall).Seconds(), CPUSeconds: cpuTime() - cpu0, MinLatency: tot.minLat}
	res := tot.result(startWall, series)
	res.Shards, res.QuantumUs = n, float64(cfg.Quantum)/1e3
	res.CPUs = FormatCPUs(cfg.CPUs)
	res.GeneratorCPUS = out.CPUSeconds
	res.RepliesPolled = rs[0].polledRun
	res.NullRTTMs = nullRTT
	if stealOK {
		res.HostStealPct = &stealPct
	}
	tot.verdict(out, res, stealPct, stealOK)
	return out, nil
}

// runShards runs the shards' metronome loops and drains, each on its own
// goroutine, from the common start; the host's steal is read over the
// measured interval (until the last shard stops sending). It returns the
// calls left unanswered.
func runShards(ctx context.Context, rs []*runner, start time.Time, cfg RunConfig) (left int, stealPct float64, stealOK bool) {
	var sending, done sync.WaitGroup
	lefts := make([]int, len(rs))
	for k, r := range rs {
		r.start = start
		sending.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			if len(cfg.CPUs) > 0 {
				pinThread(cfg.CPUs[k%len(cfg.CPUs)]) // the thread ends with the goroutine
			}
			r.startPolling()
			defer r.stopPolling()
			r.awaitStart(ctx)
			r.metronome(ctx)
			r.nextDue.Store(math.MaxInt64) // no more reply wake-ups
			r.drain()
			r.ser.Stop(r.inFlight)
			sending.Done()
			lefts[k] = r.drainOutstanding()
			r.publishLast(lefts[k])
			if r.v4 != nil {
				r.finish4()
			}
		}()
	}
	select {
	case <-time.After(time.Until(start)):
	case <-ctx.Done():
	}
	steal := watchSteal(cfg.Warmup)
	sending.Wait()
	stealPct, stealOK = steal.stop()
	done.Wait()
	for _, l := range lefts {
		left += l
	}
	return left, stealPct, stealOK
}

// mergeShards folds the shards into one runner that carries the merged
// recorder and counters for the result and the verdict (cfg: the whole
// run's), and merges their time series. One shard: itself.
func mergeShards(rs []*runner, cfg RunConfig) (*runner, *results.Series) {
	if len(rs) == 1 {
		return rs[0], rs[0].ser.Series()
	}
	t := &runner{cfg: cfg, s: rs[0].s, fs: rs[0].fs, w: rs[0].w, rec: results.NewRecorder(), minLat: math.MaxInt64}
	ss := make([]*results.Series, len(rs))
	for k, r := range rs {
		t.rec.Merge(r.rec)
		t.intended += r.intended
		t.sent += r.sent
		t.skipped += r.skipped
		t.noTarget += r.noTarget
		t.capHit = t.capHit || r.capHit
		if t.sendErr == nil {
			t.sendErr = r.sendErr
		}
		t.minLat = min(t.minLat, r.minLat)
		ss[k] = r.ser.Series()
	}
	// first calls in schedule order: call j·n + k is shard k's j-th
	for j := 0; len(t.firstCalls) < FirstCallsKept && j < FirstCallsKept; j++ {
		for _, r := range rs {
			if j < len(r.firstCalls) && len(t.firstCalls) < FirstCallsKept {
				t.firstCalls = append(t.firstCalls, r.firstCalls[j])
			}
		}
	}
	series, err := results.MergeSeries(ss) // same interval: cannot fail
	if err != nil && t.sendErr == nil {
		t.sendErr = fmt.Errorf("merging the shards' series: %v", err)
	}
	return t, series
}

// ParseCPUs parses a CPU list as taskset -c and /sys take it: "0-3,6,8-9".
func ParseCPUs(s string) ([]int, error) {
	var cpus []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= maxCPU {
			return nil, fmt.Errorf("bad CPU list %q (want e.g. 0-3,6)", s)
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				cpus = append(cpus, c)
			}
		}
	}
	return cpus, nil
}

// FormatCPUs is the CPU list as given to ParseCPUs ("": none).
func FormatCPUs(cpus []int) string {
	parts := make([]string, len(cpus))
	for i, c := range cpus {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}

// maxCPU bounds the CPU numbers of a CPU list (the affinity mask's size).
const maxCPU = 1024
