package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"time"

	"workbench/loadgen/internal/engine"
	"workbench/loadgen/internal/probe"
	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/workload"
)

// runOpts are the flags of `run` beyond the common ones (`check` takes them too).
type runOpts struct {
	jsonPath       string
	poisson        bool
	seed           int64
	clientID       int
	maxOutstanding int
	filesetRate    float64
	duration       time.Duration
	warmup         time.Duration
	lagBound       time.Duration
	interval       time.Duration // 0: not given (1 s, or the duration if shorter)
	startAt        time.Time
	drain          probe.DrainConfig // Timeout 0: no drain
	drainState     string            // file remembering the idle RTTs ("": none)
	drainProbe     string            // probe.ProbeRead: a READ stage after the NULL stage; probe.ProbeNull: none
	drainRead      probe.DrainConfig // the READ stage's rule (Timeout: what the NULL stage left)
	quantum        time.Duration     // metronome wake-up quantum (0: engine default)
	shards         int               // metronome shards (0: 1, or one per --cpus CPU)
	cpuList        string            // --cpus as given
	cpus           []int             // parsed --cpus
	besideGap      time.Duration     // NULL calls beside the run, one every this long (0: none)
}

// register adds the flags; withJSON: --json FILE (run), not the bool --json of check.
func (o *runOpts) register(fs *flag.FlagSet, withJSON bool) {
	o.duration, o.warmup, o.lagBound = 10*time.Second, 1*time.Second, engine.DefaultLagBound
	if withJSON {
		fs.StringVar(&o.jsonPath, "json", "", "write the result JSON here")
	}
	fs.BoolVar(&o.poisson, "poisson", false, "Poisson arrivals instead of the fixed-rate metronome")
	fs.Int64Var(&o.seed, "seed", 1, "random seed (op order, targets, Poisson gaps)")
	fs.IntVar(&o.clientID, "client-id", 0, "client number (separates the scratch names of concurrent clients)")
	fs.IntVar(&o.maxOutstanding, "max-outstanding", 0, "cap on calls in flight (0: rate x timeout x attempts x 1.25 + 1024)")
	fs.Float64Var(&o.filesetRate, "fileset-rate", 0, "size the file set for this rate instead of --rate (e.g. the total of all clients)")
	fs.Var(durationValue{&o.duration}, "duration", "measured interval (seconds or duration)")
	fs.Var(durationValue{&o.warmup}, "warmup", "unrecorded warm-up before it (seconds or duration)")
	fs.Var(durationValue{&o.interval}, "interval", "time-series interval, >= 100ms and <= --duration (default 1s)")
	fs.Var(durationValue{&o.lagBound}, "lag-bound", "send-lag p99 above which the generator counts as saturated")
	fs.Var(timeValue{&o.startAt}, "start-at", "wall-clock start (RFC 3339 or Unix seconds), to start several clients together")
	o.drain = probe.DefaultDrain()
	fs.Var(durationValue{&o.drain.Timeout}, "drain-timeout", "bound of the drain probe before the load (0: no probe)")
	fs.Var(durationValue{&o.drain.IdleRTT}, "drain-idle-rtt", "the server's idle NULL RTT (0: from --drain-state, else measured)")
	fs.StringVar(&o.drainState, "drain-state", "", "file remembering the idle RTTs the first drain measured")
	fs.StringVar(&o.drainProbe, "drain-probe", probe.ProbeRead, "read: NULL calls, then READs of the file set; null: NULL calls only")
	o.drainRead = probe.DefaultReadDrain()
	fs.Var(durationValue{&o.drainRead.Margin}, "drain-read-margin", "the READ stage's margin (a cache miss on the idle server)")
	fs.Float64Var(&o.drain.Factor, "drain-factor", o.drain.Factor, "drained: window median <= max(idle x factor, idle + margin)")
	fs.Var(durationValue{&o.drain.Margin}, "drain-margin", "see --drain-factor")
	fs.IntVar(&o.drain.Window, "drain-window", o.drain.Window, "consecutive RTTs whose median the rule compares")
	fs.Var(durationValue{&o.quantum}, "quantum", "shortest interval between metronome wake-ups at high rates (default 50us, at most 1ms)")
	fs.IntVar(&o.shards, "shards", 0, "metronome shards, each with its own connections (default 1, or one per --cpus CPU)")
	fs.StringVar(&o.cpuList, "cpus", "", "pin the process to this CPU list (e.g. 0-3) and shard k's metronome to its k-th CPU")
	o.besideGap = probe.DefaultBesideGap
	fs.Var(durationValue{&o.besideGap}, "beside-null-gap", "NULL calls beside the run on their own connection, one every this long (0: none)")
}

// checkFleet checks --quantum, --shards and --cpus and fills the shard count.
func (o *runOpts) checkFleet() error {
	if o.quantum < 0 || o.quantum > engine.MaxQuantum {
		return fmt.Errorf("--quantum must be in [0, %v] (got %v)", engine.MaxQuantum, o.quantum)
	}
	if o.shards < 0 || o.shards > engine.MaxShards {
		return fmt.Errorf("--shards must be in 1..%d (got %d)", engine.MaxShards, o.shards)
	}
	if o.cpuList != "" {
		cpus, err := engine.ParseCPUs(o.cpuList)
		if err != nil {
			return fmt.Errorf("--cpus: %v", err)
		}
		o.cpus = cpus
	}
	if o.shards == 0 {
		o.shards = max(1, len(o.cpus))
	}
	return nil
}

// pin applies --cpus: the process's threads to the list, GOMAXPROCS to its length.
func (o *runOpts) pin() error {
	if len(o.cpus) == 0 {
		return nil
	}
	if err := engine.PinProcess(o.cpus); err != nil {
		return err
	}
	runtime.GOMAXPROCS(len(o.cpus))
	return nil
}

// checkVersion refuses shards for NFSv4.1 (one session's slots are not split).
func (o *runOpts) checkVersion(c *common) error {
	if c.v41() && o.shards > 1 {
		return errors.New("--shards/--cpus with more than one shard is NFSv3 only (one NFSv4.1 session's slots are not split)")
	}
	return nil
}

// connFor is the connection config for the run: at least one connection per shard.
func (o *runOpts) connFor(c *common) engine.ConnConfig {
	cc := c.conn()
	cc.Conns = max(cc.Conns, o.shards)
	return cc
}

// runConfig is the engine's configuration of the run.
func (o *runOpts) runConfig(w *workload.Workload, rate float64, log io.Writer) engine.RunConfig {
	return engine.RunConfig{Workload: w, Rate: rate, Duration: o.duration, Warmup: o.warmup,
		Poisson: o.poisson, Seed: o.seed, StartAt: o.startAt, Interval: o.interval, MaxOutstanding: o.maxOutstanding,
		LagBound: o.lagBound, ClientID: o.clientID, Log: log, Quantum: o.quantum, Shards: o.shards, CPUs: o.cpus,
		BesideNullGap: o.besideGap}
}

// check validates the run flags (not --json, which only run needs).
func (o *runOpts) check() error {
	switch {
	case o.duration <= 0:
		return fmt.Errorf("--duration must be > 0 (got %v)", o.duration)
	case o.warmup < 0:
		return fmt.Errorf("--warmup must be >= 0 (got %v)", o.warmup)
	case o.clientID < 0:
		return fmt.Errorf("--client-id must be >= 0")
	case o.maxOutstanding < 0:
		return fmt.Errorf("--max-outstanding must be >= 0")
	case math.IsNaN(o.filesetRate) || o.filesetRate < 0 || o.filesetRate > workload.MaxRate:
		return fmt.Errorf("--fileset-rate must be in [0, %g] ops/s (got %v)", float64(workload.MaxRate), o.filesetRate)
	case o.lagBound <= 0:
		return fmt.Errorf("--lag-bound must be > 0")
	case o.drain.Timeout < 0:
		return fmt.Errorf("--drain-timeout must be >= 0 (got %v)", o.drain.Timeout)
	case o.besideGap < 0 || (o.besideGap > 0 && o.besideGap < probe.MinBesideGap):
		return fmt.Errorf("--beside-null-gap must be 0 (none) or >= %v (got %v)", probe.MinBesideGap, o.besideGap)
	case o.drainProbe != probe.ProbeRead && o.drainProbe != probe.ProbeNull:
		return fmt.Errorf("--drain-probe must be read or null (got %q)", o.drainProbe)
	case o.drain.Timeout > 0:
		if err := o.drain.Check(); err != nil {
			return err
		}
		if o.drainRead.Margin < 0 {
			return fmt.Errorf("--drain-read-margin must be >= 0 (got %v)", o.drainRead.Margin)
		}
	}
	if err := o.checkFleet(); err != nil {
		return err
	}
	if o.interval != 0 {
		return results.CheckInterval(o.interval, o.warmup, o.duration)
	}
	return results.CheckIntervalCount(min(results.DefaultInterval, o.duration), o.warmup, o.duration)
}

// filesetFor is the rate the file set is sized for: --fileset-rate, else the offered rate.
func (o *runOpts) filesetFor(rate float64) float64 {
	if o.filesetRate > 0 {
		return o.filesetRate
	}
	return rate
}

// cmdRun is `fstress run`: one trial at a fixed offered rate (after the
// drain probe, when asked), its JSON written to --json.
func cmdRun(args []string, _, stderr io.Writer) int {
	t, code := parseTrial(args, true, stderr)
	if t == nil {
		return code
	}
	ctx, cancel := signalContext()
	defer cancel()
	var kept keptSession
	defer kept.close()
	out, code := t.execute(ctx, &kept, stderr)
	if out == nil {
		return code
	}
	jsonPath := t.o.jsonPath
	out.Result.Summary(stderr)
	if err := out.Result.WriteJSONFile(jsonPath); err != nil {
		errLine(stderr, "writing %s: %v", jsonPath, err)
		return exitError
	}
	if out.Saturated {
		errLine(stderr, "generator saturated: %s (result written to %s)", out.Reason, jsonPath)
		return exitSaturated
	}
	return exitOK
}

// trial is one parsed and checked `run` (or agent run request).
type trial struct {
	c    common
	o    runOpts
	w    *workload.Workload
	live *engine.Live // the agent's live view of the run (metrics.go; nil: none)
}

// parseTrial parses and checks the flags of run; needJSON: --json FILE is
// required (run), else it is refused (agent). nil and the exit code on an
// error (one line on stderr).
func parseTrial(args []string, needJSON bool, stderr io.Writer) (*trial, int) {
	t := &trial{}
	fs := newFlagSet("run")
	t.c.register(fs)
	t.o.register(fs, true)
	if !parseFlags(fs, args, stderr) {
		return nil, exitUsage
	}
	w, err := t.c.check(fs)
	switch {
	case err != nil:
	case needJSON && t.o.jsonPath == "":
		err = errors.New("--json FILE is required")
	case !needJSON && t.o.jsonPath != "":
		err = errors.New("--json: the agent returns the result in its reply")
	default:
		err = t.o.check()
	}
	if err == nil {
		err = t.o.checkVersion(&t.c)
	}
	if err == nil {
		_, err = w.CheckFileset(t.o.filesetFor(t.c.rate))
	}
	if err == nil && needJSON {
		err = checkJSONPath(t.o.jsonPath)
	}
	if err != nil { // a refusal of the input: one line, exit 2
		errLine(stderr, "%v", err)
		return nil, exitUsage
	}
	t.w = w
	return t, exitOK
}

// execute runs the trial: the drain's NULL stage, the connections and the
// file set (reused from kept when they match, kept for the next trial),
// the drain's READ stage, the measured run. nil and the exit code on an
// error (one line on stderr): 1, or 4 when the server did not drain.
func (t *trial) execute(ctx context.Context, kept *keptSession, stderr io.Writer) (*engine.Outcome, int) {
	c, o := &t.c, &t.o
	var drained *results.Drain
	var err error
	if o.drain.Timeout > 0 {
		if drained, err = drainServer(ctx, c, o, stderr); err != nil {
			return nil, drainFailed(err, stderr)
		}
	}
	if err := o.pin(); err != nil {
		errLine(stderr, "%v", err)
		return nil, exitError
	}
	sess, err := kept.session(ctx, o.connFor(c))
	if err != nil {
		errLine(stderr, "%v", err)
		return nil, exitError
	}
	fset, drained, err := kept.fileset(ctx, t, sess, drained, stderr)
	if err != nil {
		return nil, drainFailed(err, stderr)
	}
	cfg := o.runConfig(t.w, c.rate, stderr)
	cfg.Live = t.live
	out, err := engine.Run(ctx, sess, fset, cfg)
	if err != nil {
		errLine(stderr, "%v", err)
		return nil, exitError
	}
	out.Result.Drain = drained
	if ctx.Err() != nil {
		errLine(stderr, "interrupted; no result written")
		return nil, exitError
	}
	return out, exitOK
}
