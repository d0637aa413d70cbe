package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/rpc"
)

// The drain rule (`fstress run` before its load; `--drain-*` flags).
//
// A light stream of probe calls, one at a time on a connection of its own
// with DrainConfig.Gap between them, until the server is back at its idle
// level:
//
//	drained ⇔ stat(last Window RTTs) ≤ limit = max(idle × Factor, idle + Margin)
//
// stat is the window's median (Rank 0) or its Rank-th largest RTT. A
// drain has up to two stages: NULL calls (Drain; the median), which see a
// server that does not answer, then READs of the run's file set
// (DrainRead, drainread.go; the 2nd largest), which wait behind its disk
// queue as the load's calls do — a NULL does not (loadgen/README.md,
// "Drain before the run").
//
// idle is the server's idle RTT of the stage's calls: given (IdleRTT > 0),
// or, when unknown, stat of this drain's first Window RTTs — the first
// trial of a sample on a freshly started server, which then ends drained
// at once; `fstress run --drain-state` remembers it for the later trials.
// The median of a window ignores two stray replies of five either way (a
// slow one on an idle server, a fast one during a backlog); Margin keeps a
// sub-millisecond idle RTT from turning scheduler noise into a wait. The
// drain gives up after Timeout: the server did not drain (NotDrainedError).

// Defaults of DrainConfig (flags of `fstress run`).
const (
	DefaultDrainTimeout = 60 * time.Second
	DefaultDrainFactor  = 3.0
	DefaultDrainMargin  = time.Millisecond
	DefaultDrainWindow  = 5
	DefaultDrainGap     = 10 * time.Millisecond
	MaxDrainWindow      = 100
)

// DrainConfig is the drain rule's parameters.
type DrainConfig struct {
	Timeout time.Duration // bound of the whole drain, > 0
	IdleRTT time.Duration // 0: unknown, measured by this drain
	Factor  float64       // ≥ 1
	Margin  time.Duration // ≥ 0
	Window  int           // 1..MaxDrainWindow RTTs whose statistic decides
	Rank    int           // the statistic: the window's Rank-th largest RTT (0: its median), ≤ Window
	Gap     time.Duration // pause between two probes, ≥ 0
}

// DefaultDrain is the default rule with IdleRTT unknown.
func DefaultDrain() DrainConfig {
	return DrainConfig{Timeout: DefaultDrainTimeout, Factor: DefaultDrainFactor, Margin: DefaultDrainMargin,
		Window: DefaultDrainWindow, Gap: DefaultDrainGap}
}

// Check validates c; its errors name the flags of `fstress run`.
func (c *DrainConfig) Check() error {
	switch {
	case c.Timeout <= 0:
		return fmt.Errorf("--drain-timeout must be > 0 (0 turns the drain off; got %v)", c.Timeout)
	case c.IdleRTT < 0:
		return fmt.Errorf("--drain-idle-rtt must be >= 0 (got %v)", c.IdleRTT)
	case math.IsNaN(c.Factor) || c.Factor < 1 || c.Factor > 1e6:
		return fmt.Errorf("--drain-factor must be in [1, 1e6] (got %v)", c.Factor)
	case c.Margin < 0:
		return fmt.Errorf("--drain-margin must be >= 0 (got %v)", c.Margin)
	case c.Window < 1 || c.Window > MaxDrainWindow:
		return fmt.Errorf("--drain-window must be 1..%d (got %d)", MaxDrainWindow, c.Window)
	case c.Rank < 0 || c.Rank > c.Window:
		return fmt.Errorf("drain rank must be 0..%d (the window; got %d)", c.Window, c.Rank)
	case c.Gap < 0:
		return errors.New("drain gap must be >= 0")
	}
	return nil
}

// Limit is the rule's bound on the window's statistic for an idle RTT.
func (c *DrainConfig) Limit(idle time.Duration) time.Duration {
	return max(time.Duration(float64(idle)*c.Factor), idle+c.Margin)
}

// NotDrainedError is a server that was not back at its idle level within
// the drain's bound; Drain holds what the probe saw.
type NotDrainedError struct {
	Drain *results.Drain
	Stat  string // the window's statistic the rule compared: "median", "2nd largest", ...
}

func (e *NotDrainedError) Error() string {
	d := e.Drain
	last := make([]string, len(d.LastUs))
	for i, us := range d.LastUs {
		last[i] = strconv.FormatFloat(us, 'f', 0, 64)
	}
	return fmt.Sprintf("server not drained after %.1f s: the %s of its last %s round trips (%s µs) is above "+
		"the limit %.0f µs (idle %.0f µs, %s; %d probes, slowest %.0f µs)",
		d.DrainS, e.Stat, strings.ToUpper(d.Probe), strings.Join(last, " "), d.LimitUs, d.IdleRTTUs, d.IdleFrom,
		d.Probes, d.MaxRTTUs)
}

// median of a window (the mean of the two middle values when its length is
// even); w is not modified.
func median(w []time.Duration) time.Duration {
	s := slices.Clone(w)
	slices.Sort(s)
	n := len(s)
	if n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[n/2]
}

// stat is the rule's statistic of a window: its Rank-th largest RTT, or
// its median when Rank is 0.
func (c *DrainConfig) stat(w []time.Duration) time.Duration {
	if c.Rank == 0 {
		return median(w)
	}
	s := slices.Clone(w)
	slices.Sort(s)
	return s[len(s)-c.Rank]
}

// statName names the statistic in messages.
func (c *DrainConfig) statName() string {
	if names := []string{"median", "largest", "2nd largest", "3rd largest"}; c.Rank < len(names) {
		return names[c.Rank]
	}
	return strconv.Itoa(c.Rank) + "th largest"
}

// drainer is one drain's state.
type drainer struct {
	cfg   DrainConfig
	idle  time.Duration // 0 while unknown
	rtts  []time.Duration
	start time.Time
	probe string // ProbeNull, ProbeRead
}

// observe adds one RTT and reports whether the rule now holds.
func (d *drainer) observe(rtt time.Duration) bool {
	d.rtts = append(d.rtts, rtt)
	k := d.cfg.Window
	if len(d.rtts) < k {
		return false
	}
	last := d.cfg.stat(d.rtts[len(d.rtts)-k:])
	if d.idle == 0 { // the first window on a fresh server is its idle level
		d.idle = max(last, time.Nanosecond)
	}
	return last <= d.cfg.Limit(d.idle)
}

// record is what the drain saw, as JSON.
func (d *drainer) record(drained bool, idleFrom string) *results.Drain {
	us := func(ds []time.Duration) []float64 {
		out := make([]float64, len(ds))
		for i, x := range ds {
			out[i] = micros(x)
		}
		return out
	}
	k := min(d.cfg.Window, len(d.rtts))
	rec := &results.Drain{DrainS: time.Since(d.start).Seconds(), Drained: drained, Probe: d.probe, IdleRTTUs: micros(d.idle),
		IdleFrom: idleFrom, LimitUs: micros(d.cfg.Limit(d.idle)), Probes: len(d.rtts),
		FirstUs: us(d.rtts[:k]), LastUs: us(d.rtts[len(d.rtts)-k:])}
	if len(d.rtts) > 0 {
		rec.MaxRTTUs = micros(slices.Max(d.rtts))
	}
	return rec
}

// Probe kinds of a drain stage (results.Drain.Probe).
const (
	ProbeNull = "null"
	ProbeRead = "read"
)

// call is one probe call on the drain's connection.
type call func(ctx context.Context, c *rpc.Client) error

func nullCall(ctx context.Context, c *rpc.Client) error {
	_, err := c.CallContext(ctx, nfs3.Program, nfs3.Version, uint32(nfs3.ProcNull), nil)
	return err
}

// Drain probes the NFS service at addr (HOST:PORT) with NULL calls by the
// drain rule. idleFrom names where cfg.IdleRTT came from ("given",
// "state"); it is "measured" when cfg.IdleRTT is 0. It returns the record,
// and with it a *NotDrainedError when the bound passed first; other errors
// (no connection, an RPC failure, ctx ended) come without a record.
func Drain(ctx context.Context, addr string, cfg DrainConfig, idleFrom string) (*results.Drain, error) {
	return drain(ctx, addr, cfg, idleFrom, ProbeNull, nullCall)
}

// DrainVersion is Drain with NULL calls of NFS version vers (3 or 4).
func DrainVersion(ctx context.Context, addr string, cfg DrainConfig, idleFrom string, vers uint32) (*results.Drain, error) {
	call := func(ctx context.Context, c *rpc.Client) error {
		_, err := c.CallContext(ctx, nfs3.Program, vers, uint32(nfs3.ProcNull), nil)
		return err
	}
	return drain(ctx, addr, cfg, idleFrom, ProbeNull, call)
}

// drain runs the rule with one probe call at a time on a connection of its
// own; the call's timeout is the drain's bound, without retransmissions.
func drain(ctx context.Context, addr string, cfg DrainConfig, idleFrom, probe string, probeCall call) (*results.Drain, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.IdleRTT == 0 {
		idleFrom = "measured"
	}
	d := &drainer{cfg: cfg, idle: cfg.IdleRTT, start: time.Now(), probe: probe}
	bound, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	c, err := rpc.DialContext(bound, addr, rpc.Options{Timeout: cfg.Timeout, Auth: rpc.HostAuthSys()})
	if err != nil {
		return nil, fmt.Errorf("drain: cannot connect to the NFS service at %s: %v", addr, err)
	}
	defer c.Close()
	for {
		t0 := time.Now()
		err := probeCall(bound, c)
		rtt := time.Since(t0)
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("drain: interrupted")
		case bound.Err() != nil: // the bound passed during the call: it counts as one slow reply
			d.rtts = append(d.rtts, rtt)
			return d.notDrained(idleFrom)
		case err != nil:
			return nil, fmt.Errorf("drain: %s call to %s: %w", strings.ToUpper(probe), addr, err)
		}
		if d.observe(rtt) {
			return d.record(true, idleFrom), nil
		}
		select {
		case <-time.After(cfg.Gap):
		case <-bound.Done():
			if ctx.Err() != nil {
				return nil, fmt.Errorf("drain: interrupted")
			}
			return d.notDrained(idleFrom)
		}
	}
}

func (d *drainer) notDrained(idleFrom string) (*results.Drain, error) {
	rec := d.record(false, idleFrom)
	return rec, &NotDrainedError{Drain: rec, Stat: d.cfg.statName()}
}

// idleState is the file `--drain-state` names: the idle RTTs the drains
// measured on this server and export, for the later runs of a sample — of
// NULL (IdleRTTUs) and of the READ stage (ReadIdleRTTUs; 0 until measured).
type idleState struct {
	Server        string  `json:"server"`
	Export        string  `json:"export"`
	IdleRTTUs     float64 `json:"idle_rtt_us"`
	ReadIdleRTTUs float64 `json:"read_idle_rtt_us,omitempty"`
}

// field is the state's idle RTT of probe (ProbeNull or ProbeRead), in µs.
func (st *idleState) field(probe string) *float64 {
	if probe == ProbeRead {
		return &st.ReadIdleRTTUs
	}
	return &st.IdleRTTUs
}

// loadState reads path; an absent file or one of another server or export
// is an empty state.
func loadState(path, server, export string) (idleState, error) {
	empty := idleState{Server: server, Export: export}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return empty, err
	}
	var st idleState
	if err := json.Unmarshal(data, &st); err != nil {
		return empty, fmt.Errorf("%s: %v", path, err)
	}
	if st.Server != server || st.Export != export {
		return empty, nil
	}
	return st, nil
}

// LoadIdle returns the idle RTT of probe (ProbeNull or ProbeRead) that path
// remembers for server and export; 0 when the file is absent, describes
// another server or export, or has none for probe.
func LoadIdle(path, server, export, probe string) (time.Duration, error) {
	st, err := loadState(path, server, export)
	us := *st.field(probe)
	if err != nil || !(us > 0) || us > 1e9 {
		return 0, err
	}
	return time.Duration(math.Round(us * 1e3)), nil // µs → whole ns: 129.414 µs is 129413.99… ns
}

// SaveIdle writes the idle RTT of probe on server and export to path
// (atomically), keeping the other probe's.
func SaveIdle(path, server, export, probe string, idleUs float64) error {
	st, _ := loadState(path, server, export) // an unreadable old state is replaced
	*st.field(probe) = idleUs
	data, err := results.MarshalIndented(st, "drain state")
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(path, data)
}
