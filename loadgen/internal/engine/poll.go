package engine

import (
	"os"
)

// Polled replies (rpc.Client.SetPolled). At low rates a call costs two
// wake-ups of the process — the metronome's timer and the reply — and on
// a VM a wake-up costs more CPU than everything else a call needs. Between
// pollMinRate and pollMaxRate ops/s per shard (NFSv3) the reader
// goroutines park for the run and the metronome reads the replies itself
// at each wake-up (it wakes at every send anyway), so a call costs one
// wake-up. Latency is unchanged: a reply's time is the kernel's receive
// time of its socket read (SO_TIMESTAMPNS), not the moment it is read.
// Outside that range the reader goroutines stay: below it the metronome
// wakes too rarely for prompt retransmits, above it the replies arrive in
// several segments per wake-up and would share the latest one's time.
// Polled, the metronome also sleeps on its own thread (sleepThread) and
// writes its calls itself (rpc Flush), so that nothing else wakes the
// process: with --cpus (GOMAXPROCS = the shards) no idle P is left
// blocking in the netpoller, where every reply's arrival would wake it.
// FSTRESS_REPLY_POLL=0 turns it off, =1 on at any NFSv3 rate.
const (
	pollMinRate = 500
	pollMaxRate = 15_000
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
	return rate >= pollMinRate && rate <= pollMaxRate
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
