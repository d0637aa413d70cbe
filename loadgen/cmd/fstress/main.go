// Command fstress is the NFSv3 open-loop workload generator (seed 003):
//
//	fstress run       measure one trial at a fixed offered rate, write JSON
//	fstress fileset   create / augment the file set for a workload and rate
//	fstress check     validate a workload, its files and its file set (no server)
//	fstress workloads list the canned workloads
//	fstress merge     merge the JSON results of several clients exactly
//	fstress probe     describe an NFSv3 server as a client sees it, as JSON
//	fstress nullserver answer every MOUNT/NFS call with success (capacity tests)
//
// Exit codes: 0 success; 1 error (bad input, unreachable server, ...; one
// line on stderr, no JSON file); 2 usage error (and `check`: any invalid
// input); 3 generator saturated (the JSON file is written, with
// generator_saturated: true); 4 server not drained before the run (no
// load sent, no JSON file).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"workbench/loadgen/internal/engine"
	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/probe"
	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/workload"
)

const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitSaturated  = 3
	exitNotDrained = 4
)

func main() {
	// FSTRESS_CPUPROFILE=file writes a Go CPU profile (performance work).
	if p := os.Getenv("FSTRESS_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			pprof.StartCPUProfile(f)
			code := run(os.Args[1:], os.Stdout, os.Stderr)
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: fstress <command> [flags]
  run        --server HOST:PORT --export PATH --workload NAME|FILE --rate OPS --duration S --warmup S --json FILE
             [--mount-port PORT] [--poisson] [--conns N] [--start-at T] [--timeout D] [--retransmits N] [--seed N]
             [--client-id N] [--fileset-rate OPS] [--max-outstanding N] [--lag-bound D] [--interval D]
             [--drain-timeout D] [--drain-idle-rtt D] [--drain-state FILE] [--drain-factor F]
             [--drain-margin D] [--drain-window K] [--drain-probe read|null] [--drain-read-margin D]
  fileset    --server HOST:PORT --export PATH --workload NAME|FILE --rate OPS [--mount-port PORT]
  check      --workload NAME|FILE [--fileset-rate OPS | --rate OPS] [--json] [any other run flag]
             validate without a server: exit 0 with a one-line summary, 2 with one line naming the field
  workloads  list the canned workloads
  merge      a.json b.json ... [--json OUT]
  probe      --server HOST[:PORT] --export PATH [--mount-port PORT] [--pings N] [--timeout D] [--json FILE]
             [--portmap-port PORT]
  nullserver --listen HOST:PORT
`

// errLine prints one line "fstress: <msg>" (newlines flattened).
func errLine(w io.Writer, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	msg = strings.ReplaceAll(strings.ReplaceAll(msg, "\r", " "), "\n", " ")
	fmt.Fprintf(w, "fstress: %s\n", msg)
}

// run is main without os.Exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stderr)
	case "fileset":
		return cmdFileset(args[1:], stderr)
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "workloads":
		return cmdWorkloads(stdout, stderr)
	case "merge":
		return cmdMerge(args[1:], stdout, stderr)
	case "probe":
		return cmdProbe(args[1:], stdout, stderr)
	case "nullserver":
		return cmdNullserver(args[1:], stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	errLine(stderr, "unknown command %q (want run, fileset, check, workloads, merge, probe or nullserver)", args[0])
	return exitUsage
}

// durationValue accepts seconds ("30", "0.5") or a Go duration ("1m", "250ms").
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

// maxDuration bounds every duration flag (a float beyond it would overflow time.Duration).
const maxDuration = 1e6 * time.Second

func (v durationValue) Set(s string) error {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("not a finite number")
		}
		if math.Abs(f) > maxDuration.Seconds() {
			return fmt.Errorf("%g s is out of range; at most %g s", f, maxDuration.Seconds())
		}
		*v.d = time.Duration(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want seconds or a duration like 500ms")
	}
	if d > maxDuration || d < -maxDuration {
		return fmt.Errorf("%v is out of range; at most %v", d, maxDuration)
	}
	*v.d = d
	return nil
}

// timeValue accepts RFC 3339 or Unix seconds (fractional allowed).
type timeValue struct{ t *time.Time }

func (v timeValue) String() string {
	if v.t == nil || v.t.IsZero() {
		return ""
	}
	return v.t.Format(time.RFC3339Nano)
}

func (v timeValue) Set(s string) error {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e11 {
			return errors.New("not a finite Unix time")
		}
		sec, frac := math.Modf(f)
		*v.t = time.Unix(int64(sec), int64(frac*1e9))
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("want RFC 3339 (2026-01-02T15:04:05Z) or Unix seconds")
	}
	*v.t = t
	return nil
}

type common struct {
	server, export, wl string
	mountPort, conns   int
	retransmits        int
	timeout            time.Duration
	rate               float64
	rateSet            bool
	rateOptional       bool // check: no --rate and no workload rate is fine (rate 0)
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", "", "NFS server HOST:PORT (PORT 0: ask the portmapper on HOST)")
	fs.IntVar(&c.mountPort, "mount-port", 0, "MOUNT v3 port (0: ask the portmapper on the server host)")
	fs.StringVar(&c.export, "export", "", "export path")
	fs.StringVar(&c.wl, "workload", "", "canned workload name or workload file")
	fs.Float64Var(&c.rate, "rate", 0, "offered load, ops/s")
	fs.IntVar(&c.conns, "conns", 1, "TCP connections")
	fs.IntVar(&c.retransmits, "retransmits", 1, "retransmits per call before it counts as a timeout")
	c.timeout = 5 * time.Second
	fs.Var(durationValue{&c.timeout}, "timeout", "per-attempt RPC timeout (seconds or duration)")
}

// check validates the common flags and loads the workload.
func (c *common) check(fs *flag.FlagSet) (*workload.Workload, error) {
	if c.server == "" {
		return nil, errors.New("--server HOST:PORT is required")
	}
	if c.export == "" {
		return nil, errors.New("--export PATH is required")
	}
	return c.checkOffline(fs)
}

// checkOffline is check without the need for a server (`fstress check`): the flags given and
// the workload, its files and its bounds.
func (c *common) checkOffline(fs *flag.FlagSet) (*workload.Workload, error) {
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "rate" {
			c.rateSet = true
		}
	})
	if c.server != "" {
		if _, _, err := net.SplitHostPort(c.server); err != nil {
			return nil, fmt.Errorf("bad --server %q: want HOST:PORT", c.server)
		}
	}
	if c.wl == "" {
		return nil, errors.New("--workload NAME|FILE is required (see: fstress workloads)")
	}
	if c.mountPort < 0 || c.mountPort > 65535 {
		return nil, fmt.Errorf("--mount-port %d out of range", c.mountPort)
	}
	if c.conns < 1 || c.conns > 1024 {
		return nil, fmt.Errorf("--conns must be 1..1024 (got %d)", c.conns)
	}
	if c.timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be > 0 (got %v)", c.timeout)
	}
	if c.retransmits < 0 {
		return nil, fmt.Errorf("--retransmits must be >= 0 (got %d)", c.retransmits)
	}
	w, err := workload.Load(c.wl)
	if err != nil {
		return nil, err
	}
	if !c.rateSet && w.Rate > 0 {
		c.rate = w.Rate
	}
	if !c.rateSet && !(w.Rate > 0) {
		if c.rateOptional {
			return w, nil
		}
		return nil, errors.New("--rate OPS is required")
	}
	if !(c.rate > 0) || c.rate > workload.MaxRate {
		return nil, fmt.Errorf("--rate must be in (0, %g] ops/s (got %v)", float64(workload.MaxRate), c.rate)
	}
	return w, nil
}

func (c *common) conn() engine.ConnConfig {
	return engine.ConnConfig{Server: c.server, MountPort: c.mountPort, Export: c.export,
		Conns: c.conns, Timeout: c.timeout, Retransmits: c.retransmits}
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) bool {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usage)
		} else {
			errLine(stderr, "%s: %v", fs.Name(), err)
		}
		return false
	}
	if fs.NArg() > 0 {
		errLine(stderr, "%s: unexpected argument %q", fs.Name(), fs.Arg(0))
		return false
	}
	return true
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

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

func cmdRun(args []string, stderr io.Writer) int {
	fs := newFlagSet("run")
	var c common
	c.register(fs)
	var o runOpts
	o.register(fs, true)
	if !parseFlags(fs, args, stderr) {
		return exitUsage
	}
	w, err := c.check(fs)
	if err != nil {
		errLine(stderr, "%v", err)
		return exitError
	}
	if o.jsonPath == "" {
		err = errors.New("--json FILE is required")
	}
	if err == nil {
		err = o.check()
	}
	if err == nil {
		_, err = w.CheckFileset(o.filesetFor(c.rate))
	}
	if err == nil {
		err = checkJSONPath(o.jsonPath)
	}
	if err != nil {
		errLine(stderr, "%v", err)
		return exitError
	}
	ctx, cancel := signalContext()
	defer cancel()
	jsonPath := o.jsonPath
	var drained *results.Drain
	if o.drain.Timeout > 0 {
		if drained, err = drainServer(ctx, &c, &o, stderr); err != nil {
			return drainFailed(err, stderr)
		}
	}
	sess, err := engine.Connect(ctx, c.conn())
	if err != nil {
		errLine(stderr, "%v", err)
		return exitError
	}
	defer sess.Close()
	fset, drained, err := readStageAndFileset(ctx, &c, &o, w, sess, drained, stderr)
	if err != nil {
		return drainFailed(err, stderr)
	}
	out, err := engine.Run(ctx, sess, fset, engine.RunConfig{Workload: w, Rate: c.rate, Duration: o.duration, Warmup: o.warmup,
		Poisson: o.poisson, Seed: o.seed, StartAt: o.startAt, Interval: o.interval, MaxOutstanding: o.maxOutstanding, LagBound: o.lagBound,
		ClientID: o.clientID, Log: stderr})
	if err != nil {
		errLine(stderr, "%v", err)
		return exitError
	}
	out.Result.Drain = drained
	if ctx.Err() != nil {
		errLine(stderr, "interrupted; no result written")
		return exitError
	}
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

// drainFailed reports a drain's error: exit 4 for a server that did not
// drain, 1 for any other failure.
func drainFailed(err error, stderr io.Writer) int {
	errLine(stderr, "%v", err)
	if nd := (*probe.NotDrainedError)(nil); errors.As(err, &nd) {
		return exitNotDrained
	}
	return exitError
}

// drainServer is the NULL stage of the drain probe (package probe) —
// before the run's connect and file-set lookup, which a backlog would slow
// or time out.
func drainServer(ctx context.Context, c *common, o *runOpts, stderr io.Writer) (*results.Drain, error) {
	addr, err := engine.NFSAddr(ctx, c.server)
	if err != nil {
		return nil, err
	}
	cfg := o.drain
	from := idleFrom(c, o, probe.ProbeNull, &cfg, stderr)
	d, err := probe.Drain(ctx, addr, cfg, from)
	rememberIdle(c, o, d, err, stderr)
	return d, err
}

// readStageAndFileset is the READ stage of the drain probe (when the NULL
// stage ran, --drain-probe is read and the workload has files) and the
// file-set lookup: the READ stage first, looking up the files it picks, so
// that it, not the lookup of the whole set, waits out a backlog; on an
// export without the file set, after building it. The drain record is the
// READ stage's with the NULL stage's (null) in it.
func readStageAndFileset(ctx context.Context, c *common, o *runOpts, w *workload.Workload, sess *engine.Session,
	null *results.Drain, stderr io.Writer) (*engine.Fileset, *results.Drain, error) {
	rate := o.filesetFor(c.rate)
	if null == nil || o.drainProbe != probe.ProbeRead || !engine.NeedsFileset(w) {
		fset, err := engine.PrepareFileset(ctx, sess, w, rate, stderr)
		return fset, null, err
	}
	d, err := drainReads(ctx, c, o, sess.Cfg.Server, engine.NewDrainFiles(w, rate, sess.Root), null, stderr)
	switch {
	case errors.Is(err, probe.ErrNoData): // nothing to READ: the NULL stage alone
		d, err = null, nil
	case errors.Is(err, engine.ErrNoFileset): // the first run on this export: READ the set it builds
		fset, err := engine.PrepareFileset(ctx, sess, w, rate, stderr)
		if err != nil {
			return nil, nil, err
		}
		d, err = drainReads(ctx, c, o, sess.Cfg.Server, probe.Handles{FH: fset.FileFH, Sizes: fset.FileSize}, null, stderr)
		return fset, d, err
	}
	if err != nil {
		return nil, nil, err
	}
	fset, err := engine.PrepareFileset(ctx, sess, w, rate, stderr)
	return fset, d, err
}

// drainReads is the READ stage on the NFS service at addr, within what the
// NULL stage left of --drain-timeout.
func drainReads(ctx context.Context, c *common, o *runOpts, addr string, files probe.ReadFiles, null *results.Drain,
	stderr io.Writer) (*results.Drain, error) {
	cfg := o.drainRead
	cfg.Timeout = max(o.drain.Timeout-time.Duration(null.DrainS*float64(time.Second)), time.Millisecond)
	from := idleFrom(c, o, probe.ProbeRead, &cfg, stderr)
	d, err := probe.DrainRead(ctx, addr, cfg, from, files, o.seed)
	rememberIdle(c, o, d, err, stderr)
	if d != nil {
		d.Null, d.DrainS = null, d.DrainS+null.DrainS
	}
	return d, err
}

// idleFrom sets cfg.IdleRTT for the stage of probe kind k: --drain-idle-rtt
// (NULL stage), else the one --drain-state remembers, else 0 (measured by
// this drain); it returns where the figure came from.
func idleFrom(c *common, o *runOpts, k string, cfg *probe.DrainConfig, stderr io.Writer) string {
	if cfg.IdleRTT > 0 || o.drainState == "" {
		return "given"
	}
	idle, err := probe.LoadIdle(o.drainState, c.server, c.export, k)
	if err != nil {
		fmt.Fprintf(stderr, "fstress: warning: drain state ignored: %v\n", err)
	}
	cfg.IdleRTT = idle
	return "state"
}

// rememberIdle keeps an idle RTT a drain measured in --drain-state.
func rememberIdle(c *common, o *runOpts, d *results.Drain, err error, stderr io.Writer) {
	if err != nil || d.IdleFrom != "measured" || o.drainState == "" {
		return
	}
	if serr := probe.SaveIdle(o.drainState, c.server, c.export, d.Probe, d.IdleRTTUs); serr != nil {
		fmt.Fprintf(stderr, "fstress: warning: drain state not saved: %v\n", serr)
	}
}

// checkJSONPath reports an output file that cannot be written: a directory,
// or in a directory that does not exist (so that no work is wasted).
func checkJSONPath(jsonPath string) error {
	if st, e := os.Stat(jsonPath); e == nil && st.IsDir() {
		return fmt.Errorf("--json %s is a directory", jsonPath)
	}
	if dir := dirOf(jsonPath); dir != "" {
		if st, e := os.Stat(dir); e != nil || !st.IsDir() {
			return fmt.Errorf("--json %s: directory %s does not exist", jsonPath, dir)
		}
	}
	return nil
}

func dirOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	if i == 0 {
		return "/"
	}
	return p[:i]
}

func cmdFileset(args []string, stderr io.Writer) int {
	fs := newFlagSet("fileset")
	var c common
	c.register(fs)
	if !parseFlags(fs, args, stderr) {
		return exitUsage
	}
	w, err := c.check(fs)
	if err == nil {
		_, err = w.CheckFileset(c.rate)
	}
	if err != nil {
		errLine(stderr, "%v", err)
		return exitError
	}
	ctx, cancel := signalContext()
	defer cancel()
	sess, _, err := connectFileset(ctx, &c, w, c.rate, stderr)
	if err != nil {
		errLine(stderr, "%v", err)
		return exitError
	}
	sess.Close()
	return exitOK
}

// connectFileset mounts the export and creates (or reuses) the file set sized for rate, the
// first two steps of both `run` and `fileset`. The caller closes the session.
func connectFileset(ctx context.Context, c *common, w *workload.Workload, rate float64, log io.Writer) (*engine.Session, *engine.Fileset, error) {
	sess, err := engine.Connect(ctx, c.conn())
	if err != nil {
		return nil, nil, err
	}
	fset, err := engine.PrepareFileset(ctx, sess, w, rate, log)
	if err != nil {
		sess.Close()
		return nil, nil, err
	}
	return sess, fset, nil
}

func cmdWorkloads(stdout, stderr io.Writer) int {
	for _, name := range workload.Canned() {
		w, err := workload.Load(name)
		if err != nil {
			errLine(stderr, "canned workload %s: %v", name, err)
			return exitError
		}
		fmt.Fprintf(stdout, "%-12s %s\n", name, w.Description)
	}
	return exitOK
}

func cmdMerge(args []string, stdout, stderr io.Writer) int {
	var files []string
	out := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--json" || a == "-json":
			if i+1 >= len(args) {
				errLine(stderr, "merge: --json needs a file name")
				return exitUsage
			}
			out = args[i+1]
			i++
		case strings.HasPrefix(a, "--json="):
			out = strings.TrimPrefix(a, "--json=")
		case strings.HasPrefix(a, "-") && a != "-":
			errLine(stderr, "merge: unknown flag %s", a)
			return exitUsage
		default:
			files = append(files, a)
		}
	}
	if len(files) == 0 {
		errLine(stderr, "merge: no result files given")
		return exitUsage
	}
	var rs []*results.Result
	for _, f := range files {
		r, err := results.ReadJSONFile(f)
		if err != nil {
			errLine(stderr, "merge: %s: %v", f, err)
			return exitError
		}
		rs = append(rs, r)
	}
	m, err := results.Merge(rs)
	if err != nil {
		errLine(stderr, "merge: %v", err)
		return exitError
	}
	m.Summary(stderr)
	if out == "" {
		if err := m.WriteJSON(stdout); err != nil {
			errLine(stderr, "merge: %v", err)
			return exitError
		}
	} else if err := m.WriteJSONFile(out); err != nil {
		errLine(stderr, "merge: writing %s: %v", out, err)
		return exitError
	}
	if m.GeneratorSaturated {
		return exitSaturated
	}
	return exitOK
}

// cmdProbe describes a server (package probe) as JSON on stdout or in the
// --json file, written only when the probe succeeded.
func cmdProbe(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("probe")
	cfg := probe.Config{Pings: probe.DefaultPings, Timeout: probe.DefaultTimeout}
	var jsonPath string
	fs.StringVar(&cfg.Server, "server", "", "NFS server HOST[:PORT] (no port: ask the portmapper)")
	fs.StringVar(&cfg.Export, "export", "", "export path")
	fs.IntVar(&cfg.MountPort, "mount-port", 0, "MOUNT v3 port (0: ask the portmapper on the server host)")
	fs.IntVar(&cfg.PortmapPort, "portmap-port", 111, "portmapper port on the server host")
	fs.IntVar(&cfg.Pings, "pings", cfg.Pings, "NULL calls timed for the round-trip time (1..1000)")
	fs.Var(durationValue{&cfg.Timeout}, "timeout", "per connect or call (seconds or duration)")
	fs.StringVar(&jsonPath, "json", "", "write the JSON here instead of stdout")
	if !parseFlags(fs, args, stderr) {
		return exitUsage
	}
	err := cfg.Check()
	if err == nil && jsonPath != "" {
		err = checkJSONPath(jsonPath)
	}
	if err != nil {
		errLine(stderr, "probe: %v", err)
		return exitError
	}
	ctx, cancel := signalContext()
	defer cancel()
	res, err := probe.Run(ctx, cfg)
	if err != nil {
		errLine(stderr, "probe: %v", err)
		return exitError
	}
	if jsonPath == "" {
		err = res.WriteJSON(stdout)
	} else {
		err = res.WriteJSONFile(jsonPath)
	}
	if err != nil {
		errLine(stderr, "probe: %v", err)
		return exitError
	}
	return exitOK
}

func cmdNullserver(args []string, stderr io.Writer) int {
	fs := newFlagSet("nullserver")
	listen := fs.String("listen", "127.0.0.1:2049", "HOST:PORT to listen on (MOUNT, NFS and portmapper GETPORT all on it)")
	if !parseFlags(fs, args, stderr) {
		return exitUsage
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		errLine(stderr, "nullserver: %v", err)
		return exitError
	}
	fmt.Fprintf(stderr, "fstress: nullserver listening on %s\n", ln.Addr())
	ctx, cancel := signalContext()
	defer cancel()
	if err := nullserver.Serve(ctx, ln); err != nil && ctx.Err() == nil {
		errLine(stderr, "nullserver: %v", err)
		return exitError
	}
	return exitOK
}
