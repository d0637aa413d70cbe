package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// The live view of a run (issue 50): counters the metronome keeps anyway,
// published for a reader on another goroutine — the agent's /metrics
// endpoint (cmd/fstress/metrics.go) — while the run goes on.
//
// The hot path stays as it was: complete() counts each completion by kind
// in plain fields of the runner (the metronome goroutine's own: no atomic,
// no lock, no allocation); with RunConfig.Live set, recordLags also counts
// each send lag into a fixed-bucket histogram (a few comparisons), and the
// metronome copies its counts into its shard's atomics at most once per
// livePeriod (one clock comparison per wake-up, the clock already read).
// A reader (Live.Snapshot) adds up the shards' published values under
// Live's mutex, which only the readers and a run's start and end take.
// The published figures lag the metronome's by at most livePeriod, or by
// liveMaxPark when it sleeps on a long gap between sends.

// LagBounds are the upper bounds (inclusive) of the live send-lag
// histogram's buckets; a last bucket takes the lags above the last bound.
var LagBounds = [...]time.Duration{
	10 * time.Microsecond, 25 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond,
	250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond,
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, time.Second,
}

// NumLagBuckets is the number of buckets of the live send-lag histogram.
const NumLagBuckets = len(LagBounds) + 1

const (
	livePeriod  = 100 * time.Millisecond // the metronome publishes at most this often
	liveMaxPark = 250 * time.Millisecond // with a live view, a coarse park ends at least this often
)

// LiveCounts are a run's counters as published (totals over the runs of a
// Live, but InFlight: the run in progress).
type LiveCounts struct {
	Completed       int64                // calls finished: replies (any NFS status), timeouts, transport errors
	Timeouts        int64                // of them, no reply after every retransmit (and calls left after the drain)
	TransportErrors int64                // of them, a send or connection error
	NFSErrors       int64                // of them, replies with an NFS status other than OK
	Skipped         int64                // due calls not sent (no free call slot at the cap, or no target)
	InFlight        int64                // calls sent and not finished yet
	Lag             [NumLagBuckets]int64 // send lags of the measured calls per bucket (LagBounds; not cumulative)
	LagSumNs        int64                // their sum, ns
}

// Sent is the number of calls sent: the finished ones and those in flight.
func (c *LiveCounts) Sent() int64 { return c.Completed + c.InFlight }

func (c *LiveCounts) add(o *LiveCounts) {
	c.Completed += o.Completed
	c.Timeouts += o.Timeouts
	c.TransportErrors += o.TransportErrors
	c.NFSErrors += o.NFSErrors
	c.Skipped += o.Skipped
	c.InFlight += o.InFlight
	for i := range c.Lag {
		c.Lag[i] += o.Lag[i]
	}
	c.LagSumNs += o.LagSumNs
}

// Live carries the counters of the runs given it (RunConfig.Live, one run
// at a time) to readers on other goroutines. Its totals add up over those
// runs, as Prometheus counters do. The zero value is ready to use.
type Live struct {
	mu    sync.Mutex
	ended LiveCounts   // the runs that ended
	cur   []*liveShard // the shards of the run in progress
}

// Snapshot is the totals so far, the run in progress included.
func (l *Live) Snapshot() LiveCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.ended
	for _, s := range l.cur {
		p := s.load()
		c.add(&p)
	}
	return c
}

// attach gives a run of n shards its published counters.
func (l *Live) attach(n int) []*liveShard {
	shards := make([]*liveShard, n)
	for k := range shards {
		shards[k] = &liveShard{}
	}
	l.mu.Lock()
	l.cur = shards
	l.mu.Unlock()
	return shards
}

// detach folds the ended run's last published counters into the totals.
func (l *Live) detach() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.cur {
		p := s.load()
		p.InFlight = 0
		l.ended.add(&p)
	}
	l.cur = nil
}

// liveShard is one shard's published counters (written by its metronome
// goroutine, read by Snapshot).
type liveShard struct {
	completed, timeouts, transport, nfsErrors, skipped, inFlight atomic.Int64
	lag                                                          [NumLagBuckets]atomic.Int64
	lagSum                                                       atomic.Int64
}

func (s *liveShard) load() LiveCounts {
	c := LiveCounts{Completed: s.completed.Load(), Timeouts: s.timeouts.Load(), TransportErrors: s.transport.Load(),
		NFSErrors: s.nfsErrors.Load(), Skipped: s.skipped.Load(), InFlight: s.inFlight.Load(), LagSumNs: s.lagSum.Load()}
	for i := range c.Lag {
		c.Lag[i] = s.lag[i].Load()
	}
	return c
}

// liveRec is what a runner counts for the live view, unpublished: its
// metronome goroutine's own fields.
type liveRec struct {
	pub    *liveShard // nil: no live view
	last   int64      // when last published, ns from the start
	done   [3]int64   // completions by kind (completedReply, completedTimeout, completedError)
	nfsErr int64      // replies with an NFS status other than OK
	lag    [NumLagBuckets]int64
	lagSum int64
}

// lags counts send lags (now − intended, ns) into the histogram.
func (l *liveRec) lags(intended []int64, now int64) {
	for _, t := range intended {
		d := now - t
		i := 0
		for i < len(LagBounds) && d > int64(LagBounds[i]) {
			i++
		}
		l.lag[i]++
		l.lagSum += d
	}
}

// liveTick publishes the runner's counts when livePeriod has passed since
// the last time (t: now, ns from the start).
func (r *runner) liveTick(t int64) {
	if r.lv.pub != nil && t-r.lv.last >= int64(livePeriod) {
		r.publishLive(t)
	}
}

// publishLive copies the runner's counts into its shard's atomics.
func (r *runner) publishLive(t int64) {
	l, p := &r.lv, r.lv.pub
	p.completed.Store(l.done[completedReply] + l.done[completedTimeout] + l.done[completedError])
	p.timeouts.Store(l.done[completedTimeout])
	p.transport.Store(l.done[completedError])
	p.nfsErrors.Store(l.nfsErr)
	p.skipped.Store(r.skipped)
	p.inFlight.Store(int64(r.inFlight))
	for i := range l.lag {
		p.lag[i].Store(l.lag[i])
	}
	p.lagSum.Store(l.lagSum)
	l.last = t
}

// publishLast publishes the runner's final counts after its drain: the
// calls left unanswered count as timeouts (as the result counts them).
func (r *runner) publishLast(left int) {
	if r.lv.pub == nil {
		return
	}
	r.lv.done[completedTimeout] += int64(left)
	r.publishLive(r.now())
	r.lv.pub.inFlight.Store(int64(r.inFlight - left))
}

// liveBound shortens a coarse park to liveMaxPark when a live view is on,
// so that the counts are published while the metronome waits for a send
// far ahead (a rate below a few ops/s).
func (r *runner) liveBound(d time.Duration) time.Duration {
	if r.lv.pub != nil && d > liveMaxPark {
		return liveMaxPark
	}
	return d
}
