package results

import (
	"fmt"
	"math"
	"time"
)

// NullRTT is the round-trip time of the NFS NULL calls sent beside a run
// (package probe, Beside; `fstress run --beside-null-gap`): one call at a
// time on a connection of its own, each sent inside the measured window.
// A NULL does no work on the server, so its RTT is the network round trip
// with both RPC stacks — the part of a call's latency that is neither the
// server's work nor the client's queueing (send lag).
//
// Times in ms: Mean from the exact sum (Exact.SumNs / N), P50 and P99 from
// the HDR histogram (µs, 3 significant digits, as the latencies), Max the
// exact maximum. Timeouts: calls without a reply within the probe's call
// timeout; Errors: calls that failed otherwise (a lost connection); neither
// has an RTT. GapMs is the probe's schedule step. Merge keeps every sum
// exact (N, Timeouts, Errors, Exact) and adds the histograms; GapMs is the
// largest of the inputs'.
type NullRTT struct {
	N         uint64  `json:"n"` // calls with an RTT
	Mean      float64 `json:"mean"`
	P50       float64 `json:"p50"`
	P99       float64 `json:"p99"`
	Max       float64 `json:"max"`
	Timeouts  uint64  `json:"timeouts"`
	Errors    uint64  `json:"errors"`
	GapMs     float64 `json:"gap_ms"`
	Exact     Exact   `json:"exact"`     // the RTTs' exact sums, ns
	Histogram string  `json:"histogram"` // base64 HDR V2 compressed, µs
}

// NullRecorder accumulates the beside probe's NULL calls. Not safe for
// concurrent use.
type NullRecorder struct {
	rtt      *lat
	timeouts uint64
	errors   uint64
	gap      time.Duration
}

// NewNullRecorder returns an empty recorder of a probe with schedule step gap.
func NewNullRecorder(gap time.Duration) *NullRecorder {
	return &NullRecorder{rtt: newLat(), gap: gap}
}

// Done records the RTT of a NULL call that got its reply.
func (r *NullRecorder) Done(rtt time.Duration) { r.rtt.record(rtt) }

// Timeout records a NULL call without a reply within the call timeout.
func (r *NullRecorder) Timeout() { r.timeouts++ }

// Error records a NULL call that failed otherwise.
func (r *NullRecorder) Error() { r.errors++ }

// Result is the summary of everything recorded so far.
func (r *NullRecorder) Result() *NullRTT {
	mean, _ := r.rtt.meanStdMs()
	return &NullRTT{N: r.rtt.n, Mean: mean, P50: r.rtt.pctMs(50), P99: r.rtt.pctMs(99),
		Max: float64(r.rtt.maxNs) / 1e6, Timeouts: r.timeouts, Errors: r.errors,
		GapMs: float64(r.gap) / 1e6, Exact: r.rtt.exact(), Histogram: encodeHist(r.rtt.h)}
}

// recorder rebuilds the exact state of n (checks that it is consistent).
func (n *NullRTT) recorder() (*NullRecorder, error) {
	l, err := latFrom(n.Exact, n.Histogram)
	if err != nil {
		return nil, fmt.Errorf("null_rtt_ms: %v", err)
	}
	gap := time.Duration(math.Round(n.GapMs * 1e6))
	return &NullRecorder{rtt: l, timeouts: n.Timeouts, errors: n.Errors, gap: gap}, nil
}

// merge adds o's calls to r; the gap becomes the larger of the two.
func (r *NullRecorder) merge(o *NullRecorder) {
	r.rtt.merge(o.rtt)
	r.timeouts += o.timeouts
	r.errors += o.errors
	r.gap = max(r.gap, o.gap)
}

// mergeNullRTT combines the beside probes of several results exactly;
// results without one (the probe off) are skipped, and nil is returned
// when none has one.
func mergeNullRTT(rs []*Result) (*NullRTT, error) {
	var acc *NullRecorder
	for i, r := range rs {
		if r.NullRTTMs == nil {
			continue
		}
		rec, err := r.NullRTTMs.recorder()
		if err != nil {
			return nil, fmt.Errorf("result %d: %v", i+1, err)
		}
		if acc == nil {
			acc = NewNullRecorder(0)
		}
		acc.merge(rec)
	}
	if acc == nil {
		return nil, nil
	}
	return acc.Result(), nil
}
