package engine

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"time"
)

const (
	// fineQuantum is the shortest timer the metronome arms: below it the
	// metronome relies on reply wake-ups and batches every due send, so
	// timers cost at most one arm per 100 µs.
	fineQuantum = 100 * time.Microsecond

	// coarseAbove: a wait longer than this is a Go timer (ms resolution)
	// that ends coarseEarly before the target, then the metronome re-plans.
	coarseAbove = 2 * time.Millisecond
	coarseEarly = 1500 * time.Microsecond

	// sendBatchDrain: within one wake-up, the queued calls are written,
	// completions applied and the clock re-read every this many sends.
	sendBatchDrain = 512
)

// minBatch is the default quantum (RunConfig.Quantum): the shortest
// interval between reply-driven wake-ups of the metronome
// (FSTRESS_BATCH_US overrides it, for tuning).
var minBatch = func() time.Duration {
	if v, err := strconv.Atoi(os.Getenv("FSTRESS_BATCH_US")); err == nil && v >= 0 {
		return time.Duration(v) * time.Microsecond
	}
	return 50 * time.Microsecond
}()

// metronome is the metronome-loop phase. Call i is intended at
// t_i = pacer.Next(i) (ns from the start); at each wake-up the loop applies
// the queued completions, sends every call with t_i ≤ now (a batch when it
// woke late) and parks until the next t_i. It ends once every call
// intended before the end of the interval (endNs) has been sent, or when
// ctx ends (calls not yet sent then are not counted as intended).
func (r *runner) metronome(ctx context.Context) {
	var i int64
	next := int64(r.pacer.Next(0))
	for {
		t := r.now()
		r.lastWake = t
		r.pollReplies()
		r.drain()
		if ctx.Err() != nil {
			return
		}
		if r.v4 != nil && len(r.v4.backlog) > 0 {
			r.flush4()
		}
		batch := 0
		for next <= t && next < r.endNs {
			r.send(next)
			i++
			next = int64(r.pacer.Next(i))
			if batch++; batch%sendBatchDrain == 0 {
				r.recordLags()
				r.flushSends()
				r.pollReplies()
				r.drain()
				t = r.now()
			}
		}
		r.recordLags()
		if batch > 0 || r.v4 != nil {
			r.flushSends()
		}
		r.liveTick(t)
		if t >= r.endNs {
			return // every call intended before the end has been sent
		}
		r.park(ctx, min(next, r.endNs))
	}
}

// park waits for target (ns from the start), with d = target − now:
//
//	d ≤ 0          behind schedule: return at once;
//	d > 2 ms       a coarse Go timer for d − 1.5 ms (no CPU), then re-plan;
//	otherwise      parkFine.
func (r *runner) park(ctx context.Context, target int64) {
	t := r.now()
	d := time.Duration(target - t)
	switch {
	case d <= 0 && r.polled:
		r.pacePolled(t)
	case d <= 0:
	case d > coarseAbove:
		sleepCoarse(ctx, r.liveBound(d-coarseEarly))
	default:
		r.parkFine(ctx, t, target, d)
	}
}

// sleepCoarse sleeps d on a Go timer, or until ctx ends.
func sleepCoarse(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	select {
	case <-tm.C:
	case <-ctx.Done():
		tm.Stop()
	}
}

// yieldEvery: a polled metronome (which sleeps holding its P) yields its P
// this often, so that the other goroutines of the P (timers, signals)
// run, and at once when a flush left calls to a writer goroutine (a full
// socket: rpc.Client.HandedOff). When shards share the Ps (GOMAXPROCS <
// shards) the other metronome waits for this one's P: it yields every
// yieldSharedEvery. It is locked to its thread (exactThread, or pinned by
// --cpus), so a yield hands the P to another thread and back — two thread
// wake-ups, a noticeable cost at every wake-up.
const (
	yieldEvery       = 10 * time.Millisecond
	yieldSharedEvery = time.Millisecond
)

func (r *runner) yield() {
	every := int64(yieldEvery)
	if r.sharedP {
		every = int64(yieldSharedEvery)
	}
	if now := r.now(); r.handedOff || now-r.lastYield >= every {
		runtime.Gosched()
		r.lastYield, r.handedOff = now, false
	}
}

// pacePolled: a polled metronome that is behind still waits out the
// quantum since its last wake-up, so that its batches (one write and one
// read each) stay large; re-entering at once would shrink them to the few
// calls due during one pass, whose fixed cost then keeps it behind.
func (r *runner) pacePolled(t int64) {
	if d := r.lastWake + int64(r.cfg.Quantum) - t; d > 0 {
		sleepThread(time.Duration(d))
	}
	r.yield()
}

// parkFine parks on the sleeper until its timer, armed for
// max(d, fineQuantum, quantum) after t, fires or a reply arrives once the
// send is due. Replies wake the metronome at most once per quantum
// (RunConfig.Quantum, default minBatch): the wake-up time is max(target,
// t + quantum), so at high rates every wake-up sends a batch and the
// wake-ups — each a timer arm at most, a write per connection and the
// scheduler's round trip — number at most one per quantum, not one per
// call. The quantum bounds the send lag the batching adds.
func (r *runner) parkFine(ctx context.Context, t, target int64, d time.Duration) {
	q := r.cfg.Quantum
	if d < max(fineQuantum, q) {
		d = max(fineQuantum, q)
	}
	due := target
	if lim := t + int64(q); due < lim {
		due = lim
	}
	if r.polled { // until max(target, t + quantum), like the timer
		sleepThread(time.Duration(max(target, t+int64(q)) - r.now()))
		r.yield()
		return
	}
	r.nextDue.Store(due)
	r.sl.arm(t, d)
	r.waiting.Store(true)
	if r.now() < target {
		r.sl.wait(ctx.Done())
	}
	r.waiting.Store(false)
}
