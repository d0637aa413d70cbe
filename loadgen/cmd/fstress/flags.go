package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"workbench/loadgen/internal/content"
	"workbench/loadgen/internal/engine"
	"workbench/loadgen/internal/workload"
)

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

// common are the flags of run, fileset and check: the server, the workload
// and the rate.
type common struct {
	server, export, wl string
	mountPort, conns   int
	retransmits        int
	timeout            time.Duration
	rate               float64
	rateSet            bool
	rateOptional       bool // check: no --rate and no workload rate is fine (rate 0)
	nfsVersion         string
	retransmitsSet     bool
	data               []*string // --compress-ratio, --dedupe-pct, --data-unit: workload.DataKeys, in order
}

// v41 reports whether --nfs-version 4.1 was given.
func (c *common) v41() bool { return c.nfsVersion == engine.NFSVersion41 }

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", "", "NFS server HOST:PORT (PORT 0: ask the portmapper on HOST)")
	fs.IntVar(&c.mountPort, "mount-port", 0, "MOUNT v3 port (0: ask the portmapper on the server host)")
	fs.StringVar(&c.export, "export", "", "export path")
	fs.StringVar(&c.wl, "workload", "", "canned workload name or workload file")
	fs.Float64Var(&c.rate, "rate", 0, "offered load, ops/s")
	fs.IntVar(&c.conns, "conns", 1, "TCP connections")
	fs.IntVar(&c.retransmits, "retransmits", 1, "retransmits per call before it counts as a timeout (NFSv4.1: default 0)")
	fs.StringVar(&c.nfsVersion, "nfs-version", "3", "NFS version: 3, or 4.1 (no portmapper, no MOUNT; --export is the pseudo path, port 0 means 2049)")
	c.timeout = 5 * time.Second
	fs.Var(durationValue{&c.timeout}, "timeout", "per-attempt RPC timeout (seconds or duration)")
	for _, k := range workload.DataKeys {
		c.data = append(c.data, fs.String(dataFlag(k.Key), "", k.Help+"; over the workload's "+k.Key))
	}
}

// dataFlag is the flag of data key `key` (compress_ratio → compress-ratio).
func dataFlag(key string) string { return strings.ReplaceAll(key, "_", "-") }

// dataFlags applies --compress-ratio, --dedupe-pct and --data-unit to w's
// data spec; an error names the flag.
func (c *common) dataFlags(w *workload.Workload) error {
	for i, k := range workload.DataKeys {
		if i < len(c.data) && *c.data[i] != "" {
			if err := k.Set(&w.Data, *c.data[i]); err != nil {
				return fmt.Errorf("--%s: %v", dataFlag(k.Key), err)
			}
		}
	}
	var se *content.SpecError
	if err := w.Data.Check(); errors.As(err, &se) {
		return fmt.Errorf("--%s: %s", dataFlag(se.Key), se.Problem)
	}
	return nil
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
		switch f.Name {
		case "rate":
			c.rateSet = true
		case "retransmits":
			c.retransmitsSet = true
		}
	})
	if err := engine.CheckNFSVersion(c.nfsVersion); err != nil {
		return nil, err
	}
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
	if err := c.dataFlags(w); err != nil {
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

// conn is the connection the flags describe. NFSv4.1 forbids a retransmission
// on the connection that carried the call (RFC 8881 §2.9.2), so its
// --retransmits default is 0.
func (c *common) conn() engine.ConnConfig {
	cfg := engine.ConnConfig{Server: c.server, MountPort: c.mountPort, Export: c.export,
		Conns: c.conns, Timeout: c.timeout, Retransmits: c.retransmits}
	if c.v41() {
		cfg.NFSVersion = engine.NFSVersion41
		if !c.retransmitsSet {
			cfg.Retransmits = 0
		}
	}
	return cfg
}

// flagSetMade, when set (by the tests), sees every command's flag set as it is made.
var flagSetMade func(*flag.FlagSet)

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if flagSetMade != nil {
		flagSetMade(fs)
	}
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
