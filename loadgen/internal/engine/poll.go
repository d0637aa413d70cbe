package engine

import (
	"os"
	"runtime"
)

// Polled replies (rpc.Client.SetPolled). At low rates a call costs two
// wake-ups of the process — the metronome's timer and the reply — and on
// a VM a wake-up costs more CPU than everything else a call needs. From
// pollMinRate ops/s per shard (NFSv3) upwards the reader
// goroutines park for the run and the metronome reads the replies itself
// at each wake-up (it wakes at every send anyway), so a call costs one
// wake-up. The late read does not shift latency: a reply's time is the kernel's receive
// time of its socket read (SO_TIMESTAMPNS), not the moment it is read.
// Below pollMinRate the reader goroutines stay (the metronome wakes too
// rarely for prompt retransmits), and above pollSharedMaxRate when shards
// share the Ps (GOMAXPROCS < shards: a polled metronome sleeps holding its
// P, so the other one waits for it — measured with 2 shards on one core,
// send-lag p99 1–10 ms polled against 0.2–3.8 ms). At high rates one read takes the
// replies of several segments, which share the latest one's time: their
// latency is overstated by at most the time since the previous read
// (about a quantum) — less than the reader
// goroutines overstate it, which wait for the metronome's P (measured at
// 400k GETATTR/s, quantum 500 µs: p50 0.34–0.38 ms polled, 0.41–0.53 ms).
// A polled metronome wakes at most once per quantum even when behind
// (pacePolled), so each wake-up's write and read carry a whole batch.
// Polled, the metronome also sleeps on its own thread (sleepThread) and
// writes its calls itself (rpc Flush), so that nothing else wakes the
// process: with --cpus (GOMAXPROCS = the shards) no idle P is left
// blocking in the netpoller, where every reply's arrival would wake it.
// FSTRESS_REPLY_POLL=0 turns it off, =1 on at any NFSv3 rate.
const (
	pollMinRate       = 500
	pollSharedMaxRate = 15_000 // per shard, when the shards share the Ps (GOMAXPROCS < shards)
)

var replyPoll = os.Getenv("FSTRESS_REPLY_POLL")

// wantPoll reports whether this shard reads its replies itself.
func (r *runner) wantPoll() bool {
	rate := r.cfg.Rate / float64(max(r.nshards, 1))
	switch {
	case r.v4 != nil || replyPoll == "0":
		return false
	case replyPoll == "1":
		return true
	}
	if rate < pollMinRate {
		return false
	}
	// shards sharing Ps: a polled metronome holds its P while it sleeps
	return rate <= pollSharedMaxRate || runtime.GOMAXPROCS(0) >= max(r.nshards, 1)
}

// startPolling switches the shard's connections to polled replies when
// wantPoll (all or none).
func (r *runner) startPolling() {
	if !r.wantPoll() {
		return
	}
	for _, c := range r.clients {
		if c.SetPolled(true) != nil {
			r.stopPolling()
			return
		}
	}
	r.polled, r.polledRun = true, true
	r.sharedP = runtime.GOMAXPROCS(0) < r.nshards
	exactThread()
}

// stopPolling gives the connections back to their reader goroutines.
func (r *runner) stopPolling() {
	for _, c := range r.clients {
		c.SetPolled(false)
	}
	r.polled = false
}

// pollReplies reads the replies that arrived (polled mode); their
// completions are queued as the reader goroutines would queue them. A
// connection that failed fails its calls through their callbacks.
func (r *runner) pollReplies() {
	if !r.polled {
		return
	}
	for _, c := range r.clients {
		c.Poll()
	}
}
