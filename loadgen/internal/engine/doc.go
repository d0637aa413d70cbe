// Package engine runs fstress trials: it mounts the export (Connect),
// builds or reuses the file set a workload needs (PrepareFileset) and
// offers the workload's calls at a fixed rate for a measured interval
// (Run), open-loop: the schedule never waits for the server.
//
// # The metronome
//
// Call i (i = 0, 1, 2, ...) has an intended send time t_i from the common
// start, given by package pace:
//
//	t_i = i / rate                                  constant pacing (default)
//	t_0 = 0, t_i = t_{i−1} + G_i, G_i ~ Exp(rate)   Poisson pacing (RunConfig.Poisson)
//
// One goroutine — the metronome — does all scheduling (per shard: with
// RunConfig.Shards = N, shard k's metronome sends calls i ≡ k (mod N) of
// the one schedule on its own connections; shards.go). At each wake-up it
// applies the completions the RPC reader goroutines queued, sends every
// call with t_i ≤ now (a batch, when it woke late) and parks until the next
// t_i: a Go timer for waits over 2 ms (it ends 1.5 ms early, then the
// metronome re-plans), else a timerfd armed for at least max(100 µs,
// quantum), cut short by a reply once the send is due — at most once per
// quantum (RunConfig.Quantum, default 50 µs), so at high rates every
// wake-up sends a batch, queued on the connections and written with one
// write per connection (rpc.Client.GoQueued, Flush). From 500 to 15 000
// ops/s per shard (NFSv3) the metronome also reads the replies itself at
// each wake-up, timed by the kernel's receive time, and sleeps on its own
// thread (poll.go): one wake-up per call instead of two. Each
// call takes its procedure from the workload's scheduler and its target
// from the weighted object sets (requestBuilders has one function per
// procedure); a call with no possible target, or no free call slot
// (MaxOutstanding in flight), is skipped.
//
// # Latency from the intended send time
//
// A reply's latency is its arrival time minus t_i, not minus the actual
// send time, so a stall of the generator or the server delays the calls
// behind it and shows as latency (no coordinated omission). The send lag,
// actual send − t_i, is recorded for every measured call. Only calls with
// t_i in [Warmup, Warmup+Duration) are recorded: replies, NFS errors
// (status ≠ NFS3_OK), transport errors and timeouts.
//
// # The time series
//
// The result's series (results.Series, RunConfig.Interval, default 1 s)
// splits the run into intervals of the intended send time, k =
// ⌊(t_i − Warmup) / Interval⌋, aligned on the start of the measured
// interval. Warm-up intervals (k < 0) are recorded too, flagged warmup, so
// that a later rule can judge where the warm-up really ended; the measured
// ones (k ≥ 0) add up exactly to the whole-run figures. Per interval and
// operation: calls sent, finished, errors, timeouts, retransmits, exact
// latency sums and an HDR histogram (sparse while recording, encoded like
// the whole run's at the end); arrived counts completions by arrival time.
// When sending stops the calls in flight are outstanding_at_stop, split
// by how they ended in the drain (stop_replied, stop_errors,
// stop_timeouts). Memory: one small record per interval and operation
// (at most results.MaxIntervals intervals), histograms ∝ their populated
// buckets; recording allocates only when an interval's histogram first
// sees a bucket.
//
// # The phases of Run
//
//  1. set-up (setUp): check the configuration and fill its defaults
//     (LagBound 2 ms; MaxOutstanding = min(rate · timeout · (retransmits+1)
//     · 1.25 + 1024, 2^20)), build the weighted object sets from the file
//     set, initialise the scratch pools over NFS, pre-allocate call slots;
//     connect the NULL probe beside the run (when on).
//  2. common start (commonStart, awaitStart): wait for RunConfig.StartAt, so that
//     several clients share one schedule; a start already past starts now,
//     with a warning. The host's steal is read when the warm-up ends.
//  3. metronome loop (metronome): send every call intended before
//     Warmup+Duration, then stop sending. If ctx ends first the loop stops
//     at once; calls not yet sent then are not counted as intended.
//  4. drain (drainOutstanding): the calls in flight are counted
//     (outstanding_at_stop); wait for them up to
//     timeout · (retransmits+1) + 0.5 s; calls still unanswered then count
//     as timeouts.
//  5. verdict (verdict): build the Result and apply the saturation rule.
//
// # NULL calls beside the run
//
// With RunConfig.BesideNullGap > 0 (fstress run's default: 100 ms) a probe
// (probe.Beside, beside.go) connects to the same NFS service on a
// connection of its own during set-up and, on a goroutine of its own, sends
// NULL calls of the run's version one at a time, due every gap from the
// start of the measured interval, each sent inside it; it stops when the
// run ends. Their RTTs are the result's null_rtt_ms (results.NullRTT): the
// network round trip, beside the calls' latency and send lag.
//
// # The verdict
//
// The generator — not the server — is saturated (generator_saturated:
// true, with saturation_reason; fstress exits 3) when, over the measured
// interval, any of:
//
//   - it sent fewer than 99 % of the calls it intended (it fell behind, or
//     calls were skipped); or, when the sends kept up and at least 99 % of
//     rate · duration calls were intended, fewer than 99 % of the offered
//     rate completed (a safety net: every sent call ends as a reply, an
//     error or a timeout);
//   - the send-lag p99 exceeds LagBound (default 2 ms); the reason names
//     the host's steal over the interval when /proc/stat was readable, to
//     tell a VM stall from a generator that could not keep up;
//   - the outstanding-calls cap was hit (a call was due while
//     MaxOutstanding calls were in flight);
//   - calls had no target object (an empty object set or scratch pool, e.g.
//     READLINK without symlinks);
//   - a call could not be sent (the first send error).
//
// A slow server is not generator saturation: its replies count with their
// full latency from t_i, its lost calls as timeouts, and achieved_rate
// (calls finished in the measured interval per second) falls below
// offered_rate.
//
// # File set and scratch pools
//
// The file set's size follows the offered rate (workload.FilesetSize), its
// shape is a prefix-stable layout (GenLayout), and a manifest in the export
// lets later runs look objects up instead of creating them (see
// fileset.go). Name-space operations (CREATE, REMOVE, MKDIR, ...) work on
// per-client scratch names that alternate between present and absent, so
// the file set does not drift however long the run (see pool.go).
package engine
