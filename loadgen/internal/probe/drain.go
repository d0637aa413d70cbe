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
// A light stream of NFS NULL calls, one at a time on a connection of its
// own with DrainConfig.Gap between them, until the server is back at its
// idle level:
//
//	drained ⇔ median(last Window RTTs) ≤ limit = max(idle × Factor, idle + Margin)
//
// idle is the server's idle NULL round-trip time: given (IdleRTT > 0), or,
// when unknown, the median of this drain's first Window RTTs — the first
// trial of a sample on a freshly started server, which then ends drained
// at once; `fstress run --drain-state` remembers it for the later trials.
// The median of a window ignores one stray reply either way (a slow one on
// an idle server, a fast one during a backlog); Margin keeps a
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
	Window  int           // 1..MaxDrainWindow RTTs whose median decides
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
	case c.Gap < 0:
		return errors.New("drain gap must be >= 0")
	}
	return nil
}

// Limit is the rule's bound on the window's median for an idle RTT.
func (c *DrainConfig) Limit(idle time.Duration) time.Duration {
	return max(time.Duration(float64(idle)*c.Factor), idle+c.Margin)
}

// NotDrainedError is a server that was not back at its idle level within
// the drain's bound; Drain holds what the probe saw.
type NotDrainedError struct{ Drain *results.Drain }

func (e *NotDrainedError) Error() string {
	d := e.Drain
	last := make([]string, len(d.LastUs))
	for i, us := range d.LastUs {
		last[i] = strconv.FormatFloat(us, 'f', 0, 64)
	}
	return fmt.Sprintf("server not drained after %.1f s: the median of its last NULL round trips (%s µs) is above "+
		"the limit %.0f µs (idle %.0f µs, %s; %d probes, slowest %.0f µs)",
		d.DrainS, strings.Join(last, " "), d.LimitUs, d.IdleRTTUs, d.IdleFrom, d.Probes, d.MaxRTTUs)
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

// drainer is one drain's state.
type drainer struct {
	cfg   DrainConfig
	idle  time.Duration // 0 while unknown
	rtts  []time.Duration
	start time.Time
}

// observe adds one RTT and reports whether the rule now holds.
func (d *drainer) observe(rtt time.Duration) bool {
	d.rtts = append(d.rtts, rtt)
	k := d.cfg.Window
	if len(d.rtts) < k {
		return false
	}
	last := median(d.rtts[len(d.rtts)-k:])
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
	rec := &results.Drain{DrainS: time.Since(d.start).Seconds(), Drained: drained, IdleRTTUs: micros(d.idle),
		IdleFrom: idleFrom, LimitUs: micros(d.cfg.Limit(d.idle)), Probes: len(d.rtts),
		FirstUs: us(d.rtts[:k]), LastUs: us(d.rtts[len(d.rtts)-k:])}
	if len(d.rtts) > 0 {
		rec.MaxRTTUs = micros(slices.Max(d.rtts))
	}
	return rec
}

// Drain probes the NFS service at addr (HOST:PORT) by the drain rule.
// idleFrom names where cfg.IdleRTT came from ("given", "state"); it is
// "measured" when cfg.IdleRTT is 0. It returns the record, and with it a
// *NotDrainedError when the bound passed first; other errors (no
// connection, an RPC failure, ctx ended) come without a record.
func Drain(ctx context.Context, addr string, cfg DrainConfig, idleFrom string) (*results.Drain, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.IdleRTT == 0 {
		idleFrom = "measured"
	}
	d := &drainer{cfg: cfg, idle: cfg.IdleRTT, start: time.Now()}
	bound, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	c, err := rpc.DialContext(bound, addr, rpc.Options{Timeout: cfg.Timeout, Auth: rpc.HostAuthSys()})
	if err != nil {
		return nil, fmt.Errorf("drain: cannot connect to the NFS service at %s: %v", addr, err)
	}
	defer c.Close()
	for {
		t0 := time.Now()
		_, err := c.CallContext(bound, nfs3.Program, nfs3.Version, uint32(nfs3.ProcNull), nil)
		rtt := time.Since(t0)
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("drain: interrupted")
		case bound.Err() != nil: // the bound passed during the call: it counts as one slow reply
			d.rtts = append(d.rtts, rtt)
			return d.notDrained(idleFrom)
		case err != nil:
			return nil, fmt.Errorf("drain: NULL call to %s: %v", addr, err)
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
	return rec, &NotDrainedError{Drain: rec}
}

// idleState is the file `--drain-state` names: the idle RTT a drain
// measured on this server and export, for the later runs of a sample.
type idleState struct {
	Server    string  `json:"server"`
	Export    string  `json:"export"`
	IdleRTTUs float64 `json:"idle_rtt_us"`
}

// LoadIdle returns the idle RTT path remembers for server and export; 0
// when the file is absent or describes another server or export.
func LoadIdle(path, server, export string) (time.Duration, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var st idleState
	if err := json.Unmarshal(data, &st); err != nil {
		return 0, fmt.Errorf("%s: %v", path, err)
	}
	if st.Server != server || st.Export != export || !(st.IdleRTTUs > 0) || st.IdleRTTUs > 1e9 {
		return 0, nil
	}
	return time.Duration(st.IdleRTTUs * 1e3), nil
}

// SaveIdle writes the idle RTT of server and export to path (atomically).
func SaveIdle(path, server, export string, idleUs float64) error {
	data, err := results.MarshalIndented(idleState{Server: server, Export: export, IdleRTTUs: idleUs}, "drain state")
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(path, data)
}
