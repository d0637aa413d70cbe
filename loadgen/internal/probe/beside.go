package probe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/rpc"
)

// NULL calls beside a run (`fstress run --beside-null-gap`; the result's
// null_rtt_ms, results.NullRTT).
//
// While the run's load is measured, one NFS NULL call at a time goes to the
// same NFS service on a connection of its own, on a fixed schedule over the
// measured window [from, to): call k is due at from + k·Gap. A call due
// while the one before is still out is skipped (never two at once), so at
// most ⌈(to − from) / Gap⌉ calls go out, each sent inside the window. A
// call's RTT runs from before it is handed to the RPC client (a few µs of
// the client's RPC stack included) to its reply's arrival: on Linux the
// kernel's receive time (a polled connection, roundTripPolled), so that it
// does not include a goroutine's wait for a P on a busy load host;
// elsewhere when the client's reader goroutine has it. A call without a
// reply within Timeout is a timeout (no RTT); any other failure is an error,
// and a lost connection is dialled again at the next due call. The probe
// stops when its context ends (the run's end): a call still out then is not
// counted.

// Defaults and bounds of BesideConfig.
const (
	DefaultBesideGap     = 100 * time.Millisecond
	DefaultBesideTimeout = 2 * time.Second
	MinBesideGap         = time.Millisecond // a light probe: at most 1 000 NULLs/s
)

// BesideConfig says where and how often the beside probe calls.
type BesideConfig struct {
	Addr    string        // HOST:PORT of the NFS service (the run's, port resolved)
	Vers    uint32        // NFS version of the NULL calls: 3 or 4 (nfs3.Version, nfs4.Version)
	Gap     time.Duration // the schedule's step, ≥ MinBesideGap
	Timeout time.Duration // per call and per connect (0: DefaultBesideTimeout)
}

// Beside is a connected beside probe; Run uses it once.
type Beside struct {
	cfg    BesideConfig
	c      *rpc.Client // nil after a lost connection, until dialled again
	polled bool        // c's replies are read by Run's goroutine (rpc.Client.SetPolled; Linux)
	rec    *results.NullRecorder
}

// DialBeside connects the probe (before the run's start, so that the
// connect falls in no window).
func DialBeside(ctx context.Context, cfg BesideConfig) (*Beside, error) {
	if cfg.Gap < MinBesideGap {
		return nil, fmt.Errorf("beside probe: gap must be >= %v (got %v)", MinBesideGap, cfg.Gap)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultBesideTimeout
	}
	b := &Beside{cfg: cfg, rec: results.NewNullRecorder(cfg.Gap)}
	if err := b.dial(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// dial opens the probe's connection, within Timeout.
func (b *Beside) dial(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	c, err := rpc.DialContext(dctx, b.cfg.Addr, rpc.Options{Timeout: b.cfg.Timeout, Auth: rpc.HostAuthSys()})
	if err != nil {
		return fmt.Errorf("beside probe: cannot connect to the NFS service at %s: %v", b.cfg.Addr, err)
	}
	b.c = c
	b.polled = c.SetPolled(true) == nil
	return nil
}

// Run sends the NULL calls of the window [from, to), one at a time, until
// the window ends or ctx does, and returns their record. It closes the
// connection.
func (b *Beside) Run(ctx context.Context, from, to time.Time) *results.NullRTT {
	defer b.close()
	for due := from; due.Before(to); due = b.next(due, from) {
		if !sleepUntil(ctx, due) || !time.Now().Before(to) {
			break
		}
		b.call(ctx)
	}
	return b.rec.Result()
}

// next is the first due time after due that has not passed yet: the
// schedule's slots a slow call overran are skipped.
func (b *Beside) next(due, from time.Time) time.Time {
	n := due.Add(b.cfg.Gap)
	if time.Now().After(n) {
		k := (time.Since(from) + b.cfg.Gap - 1) / b.cfg.Gap // ⌈(now − from) / gap⌉
		n = from.Add(k * b.cfg.Gap)
	}
	return n
}

// sleepUntil waits for t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// call makes one NULL call and records its outcome.
func (b *Beside) call(ctx context.Context) {
	if b.c == nil && b.dial(ctx) != nil {
		b.rec.Error()
		return
	}
	rtt, err := b.roundTrip(ctx)
	switch {
	case err == nil:
		b.rec.Done(rtt)
	case ctx.Err() != nil: // the run ended during the call: not counted
	case errors.Is(err, rpc.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		b.rec.Timeout()
	default:
		b.rec.Error()
		if errors.Is(err, rpc.ErrClosed) {
			b.close()
		}
	}
}

// roundTrip makes one NULL call and returns its RTT: polled (Linux), or
// through the client's reader and writer goroutines.
func (b *Beside) roundTrip(ctx context.Context) (time.Duration, error) {
	if b.polled {
		return b.roundTripPolled(ctx)
	}
	cctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	t0 := time.Now()
	_, err := b.c.CallContext(cctx, nfs3.Program, b.cfg.Vers, uint32(nfs3.ProcNull), nil)
	return time.Since(t0), err
}

// Waits between two reads of a polled NULL's reply: doubling from the
// first to the last (the reply's time is the kernel's, however late the
// read).
const (
	pollFirstWait = 100 * time.Microsecond
	pollLastWait  = 10 * time.Millisecond
)

// reply is a NULL call's outcome as its callback saw it.
type reply struct {
	arrived time.Time // the kernel's receive time (polled reads)
	err     error
}

// roundTripPolled makes one NULL call on the polled connection: written by
// this goroutine, its reply read by Poll with the kernel's receive time, so
// that the RTT waits for no other goroutine's turn on a P (a polled
// metronome holds its P up to 10 ms between yields: --cpus with one CPU).
// The RTT is the reply's receive time − the time before the send.
func (b *Beside) roundTripPolled(ctx context.Context) (time.Duration, error) {
	ch := make(chan reply, 1) // the callback may run on the reader goroutine (a lost connection)
	t0 := time.Now()
	err := b.c.GoQueued(nfs3.Program, b.cfg.Vers, uint32(nfs3.ProcNull), nil, func(_ []byte, info rpc.CallInfo, err error) {
		ch <- reply{info.Arrived, err}
	})
	if err == nil {
		err = b.c.Flush()
	}
	if err != nil {
		return 0, err
	}
	deadline := t0.Add(b.cfg.Timeout)
	for wait := pollFirstWait; ; wait = min(2*wait, pollLastWait) {
		select {
		case r := <-ch:
			if r.arrived.IsZero() {
				r.arrived = time.Now()
			}
			return r.arrived.Sub(t0), r.err
		default:
		}
		if !time.Now().Before(deadline) {
			return 0, rpc.ErrTimeout
		}
		if !sleepUntil(ctx, earliest(time.Now().Add(wait), deadline)) {
			return 0, ctx.Err()
		}
		b.c.Poll() // an error fails the client: the callback brings it
	}
}

// earliest is the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// close closes the probe's connection.
func (b *Beside) close() {
	if b.c != nil {
		b.c.Close()
		b.c = nil
	}
}
