// Command fstress is the NFSv3 open-loop workload generator (seed 003):
//
//	fstress run       measure one trial at a fixed offered rate, write JSON
//	fstress fileset   create / augment the file set for a workload and rate
//	fstress workloads list the canned workloads
//	fstress merge     merge the JSON results of several clients exactly
//	fstress probe     describe an NFSv3 server as a client sees it, as JSON
//	fstress nullserver answer every MOUNT/NFS call with success (capacity tests)
//
// Exit codes: 0 success; 1 error (bad input, unreachable server, ...; one
// line on stderr, no JSON file); 2 usage error; 3 generator saturated (the
// JSON file is written, with generator_saturated: true).
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
	exitOK        = 0
	exitError     = 1
	exitUsage     = 2
	exitSaturated = 3
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
             [--client-id N] [--fileset-rate OPS] [--max-outstanding N] [--lag-bound D]
  fileset    --server HOST:PORT --export PATH --workload NAME|FILE --rate OPS [--mount-port PORT]
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
	errLine(stderr, "unknown command %q (want run, fileset, workloads, merge, probe or nullserver)", args[0])
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

func (v durationValue) Set(s string) error {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("not a finite number")
		}
		*v.d = time.Duration(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want seconds or a duration like 500ms")
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
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "rate" {
			c.rateSet = true
		}
	})
	if c.server == "" {
		return nil, errors.New("--server HOST:PORT is required")
	}
	if _, _, err := net.SplitHostPort(c.server); err != nil {
		return nil, fmt.Errorf("bad --server %q: want HOST:PORT", c.server)
	}
	if c.export == "" {
		return nil, errors.New("--export PATH is required")
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
		return nil, errors.New("--rate OPS is required")
	}
	if !(c.rate > 0) || math.IsInf(c.rate, 0) {
		return nil, fmt.Errorf("--rate must be > 0 ops/s (got %v)", c.rate)
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

func cmdRun(args []string, stderr io.Writer) int {
	fs := newFlagSet("run")
	var c common
	c.register(fs)
	var (
		jsonPath       string
		poisson        bool
		seed           int64
		clientID       int
		maxOutstanding int
		filesetRate    float64
		duration       = 10 * time.Second
		warmup         = 1 * time.Second
		lagBound       = engine.DefaultLagBound
		startAt        time.Time
	)
	fs.StringVar(&jsonPath, "json", "", "write the result JSON here")
	fs.BoolVar(&poisson, "poisson", false, "Poisson arrivals instead of the fixed-rate metronome")
	fs.Int64Var(&seed, "seed", 1, "random seed (op order, targets, Poisson gaps)")
	fs.IntVar(&clientID, "client-id", 0, "client number (separates the scratch names of concurrent clients)")
	fs.IntVar(&maxOutstanding, "max-outstanding", 0, "cap on calls in flight (0: rate x timeout x attempts x 1.25 + 1024)")
	fs.Float64Var(&filesetRate, "fileset-rate", 0, "size the file set for this rate instead of --rate (e.g. the total of all clients)")
	fs.Var(durationValue{&duration}, "duration", "measured interval (seconds or duration)")
	fs.Var(durationValue{&warmup}, "warmup", "unrecorded warm-up before it (seconds or duration)")
	fs.Var(durationValue{&lagBound}, "lag-bound", "send-lag p99 above which the generator counts as saturated")
	fs.Var(timeValue{&startAt}, "start-at", "wall-clock start (RFC 3339 or Unix seconds), to start several clients together")
	if !parseFlags(fs, args, stderr) {
		return exitUsage
	}
	w, err := c.check(fs)
	if err != nil {
		errLine(stderr, "%v", err)
		return exitError
	}
	switch {
	case jsonPath == "":
		err = errors.New("--json FILE is required")
	case duration <= 0:
		err = fmt.Errorf("--duration must be > 0 (got %v)", duration)
	case warmup < 0:
		err = fmt.Errorf("--warmup must be >= 0 (got %v)", warmup)
	case clientID < 0:
		err = fmt.Errorf("--client-id must be >= 0")
	case filesetRate < 0:
		err = fmt.Errorf("--fileset-rate must be >= 0")
	case lagBound <= 0:
		err = fmt.Errorf("--lag-bound must be > 0")
	}
	if err == nil {
		err = checkJSONPath(jsonPath)
	}
	if err != nil {
		errLine(stderr, "%v", err)
		return exitError
	}
	ctx, cancel := signalContext()
	defer cancel()
	fr := c.rate
	if filesetRate > 0 {
		fr = filesetRate
	}
	sess, fset, err := connectFileset(ctx, &c, w, fr, stderr)
	if err != nil {
		errLine(stderr, "%v", err)
		return exitError
	}
	defer sess.Close()
	out, err := engine.Run(ctx, sess, fset, engine.RunConfig{Workload: w, Rate: c.rate, Duration: duration, Warmup: warmup,
		Poisson: poisson, Seed: seed, StartAt: startAt, MaxOutstanding: maxOutstanding, LagBound: lagBound,
		ClientID: clientID, Log: stderr})
	if err != nil {
		errLine(stderr, "%v", err)
		return exitError
	}
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
