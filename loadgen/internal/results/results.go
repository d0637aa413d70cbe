// Package results records fstress latencies and writes, reads, merges and
// prints run results.
//
// # Recording
//
// A Recorder keeps, per NFS procedure and for all procedures together, an
// HDR histogram of latencies in microseconds (1 µs .. 120 s, 3 significant
// digits; larger values are clamped to 120 s in the histogram only), exact
// counts, the exact sum of latencies in nanoseconds (uint64) and the exact
// sum of their squares in ns² (128-bit integer), plus the exact maximum. The
// send lag (actual − intended send time) has its own histogram and sums.
// Because every statistic is either an integer sum or a histogram, merging
// is exact: Merge(a, b) equals one recorder fed both streams — same counts,
// same mean and standard deviation (computed from the merged integer sums),
// same percentiles (read from the merged histogram).
//
// Latency is measured from the INTENDED send time (the engine passes it).
// Done counts a reply (any NFS status; status ≠ NFS3_OK also counts as an
// error); Failed counts a request without a usable reply ("timeout" after
// the retransmits, anything else "error"); failed requests carry no latency.
//
// Definitions in the Result:
//
//	ops_total      replies + failures (every request that finished)
//	count (per op) replies + failures of that op;   share = count/ops_total
//	mean/std/p*    over replies only (ms); std is the population standard
//	               deviation: σ² = Σx²/n − (Σx/n)²
//	time_pct       Σ latency of the op / Σ latency of all ops × 100 (Table 4 "% Total Time")
//	achieved_rate  ops_total / duration_s (the engine may override it)
//	mix_actual     per-op share (every op of mix_target is present, 0 if never
//	               done); mix_target is the workload's (from Meta)
//
// # JSON
//
// The top-level keys read by outside checks are offered_rate,
// achieved_rate, duration_s, ops_total, mean_ms, std_ms, p50_ms, p95_ms,
// p99_ms, max_ms, ops, mix_target, mix_actual, send_lag_ms {mean, p99, max},
// generator_saturated, errors, timeouts, retransmits and histogram (base64
// HDR V2 compressed encoding, µs). The remaining keys (per-op histograms and
// exact sums, the send-lag histogram, clients, windows) make Merge exact.
//
// null_rtt_ms {n, mean, p50, p99, max, timeouts, errors, gap_ms, exact,
// histogram} (nullrtt.go) is the round trip of the NFS NULL calls sent
// beside the run, one at a time every gap_ms on a connection of their own,
// each sent inside the measured window; times in ms. The key is absent
// when the probe was off (`--beside-null-gap 0`) or could not connect; it
// is present with n = 0 when no NULL got a reply (timeouts, errors say
// why). mean is exact (exact.sum_ns / n), p50 and p99 come from the HDR
// histogram (µs, 3 significant digits), max is exact.
//
// # Time series
//
// SeriesRecorder keeps the same per interval of intended send time
// (series.go); the result's "series" merges like the rest.
//
// # Merging clients
//
// Merge sums counts, errors, timeouts, retransmits, offered_rate and
// achieved_rate (each client's achieved rate is over its own window) and
// merges histograms; percentiles, mean and std are recomputed. duration_s
// is the common measured window: the intersection of the clients' windows
// [start, start+duration) when every result carries start_unix_ns and the
// windows overlap, otherwise the shortest duration (clients started with
// --start-at run the same window, so both agree). generator_saturated is
// true if any client saturated (reasons are joined). mix_target is the
// offered-rate-weighted mean of the clients' targets. null_rtt_ms pools the
// clients' NULL calls: n, timeouts, errors and the exact sums add, the
// histograms merge, mean and quantiles are recomputed (exactly what one
// probe making all those calls would give); gap_ms is the largest; results
// without the key are skipped.
package results

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"workbench/loadgen/internal/nfs3"
)

// Histogram geometry: 1 µs .. 120 s, 3 significant digits.
const (
	HistMinUs   = 1
	HistMaxUs   = 120_000_000
	HistSigFigs = 3
)

func newHist() *hdr.Histogram { return hdr.New(HistMinUs, HistMaxUs, HistSigFigs) }

// u128 is an unsigned 128-bit accumulator for sums of squares.
type u128 struct{ hi, lo uint64 }

func (a *u128) addSquare(x uint64) {
	hi, lo := bits.Mul64(x, x) // x² as 128 bits
	var c uint64
	a.lo, c = bits.Add64(a.lo, lo, 0)
	a.hi, _ = bits.Add64(a.hi, hi, c)
}

func (a *u128) add(b u128) {
	var c uint64
	a.lo, c = bits.Add64(a.lo, b.lo, 0)
	a.hi, _ = bits.Add64(a.hi, b.hi, c)
}

func (a u128) big() *big.Int {
	z := new(big.Int).SetUint64(a.hi)
	z.Lsh(z, 64)
	return z.Or(z, new(big.Int).SetUint64(a.lo))
}

func (a u128) String() string { return a.big().String() }

func parseU128(s string) (u128, error) {
	if s == "" {
		return u128{}, nil
	}
	z, ok := new(big.Int).SetString(s, 10)
	if !ok || z.Sign() < 0 || z.BitLen() > 128 {
		return u128{}, fmt.Errorf("bad 128-bit integer %q", s)
	}
	lo := new(big.Int).And(z, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	hi := new(big.Int).Rsh(z, 64).Uint64()
	return u128{hi: hi, lo: lo}, nil
}

// lat is the exact state of one latency population.
type lat struct {
	n     uint64 // samples (replies)
	sumNs uint64
	sqNs2 u128
	maxNs uint64
	h     *hdr.Histogram
}

func newLat() *lat { return &lat{h: newHist()} }

func (l *lat) record(d time.Duration) {
	ns := uint64(0)
	if d > 0 {
		ns = uint64(d)
	}
	l.n++
	l.sumNs += ns
	l.sqNs2.addSquare(ns)
	if ns > l.maxNs {
		l.maxNs = ns
	}
	us := int64((ns + 500) / 1000) // round to µs
	if us > HistMaxUs {
		us = HistMaxUs
	}
	_ = l.h.RecordValue(us)
}

func (l *lat) merge(o *lat) {
	l.n += o.n
	l.sumNs += o.sumNs
	l.sqNs2.add(o.sqNs2)
	if o.maxNs > l.maxNs {
		l.maxNs = o.maxNs
	}
	l.h.Merge(o.h)
}

// meanMs = Σx/n; stdMs = sqrt(n·Σx² − (Σx)²)/n (exact integer numerator).
func (l *lat) meanStdMs() (mean, std float64) {
	if l.n == 0 {
		return 0, 0
	}
	n := new(big.Int).SetUint64(l.n)
	s := new(big.Int).SetUint64(l.sumNs)
	num := new(big.Int).Mul(n, l.sqNs2.big())
	num.Sub(num, new(big.Int).Mul(s, s)) // n·Σx² − (Σx)² ≥ 0
	if num.Sign() < 0 {
		num.SetInt64(0)
	}
	v, _ := new(big.Float).SetInt(num).Float64()
	fn := float64(l.n)
	mean = float64(l.sumNs) / fn / 1e6
	std = math.Sqrt(v) / fn / 1e6
	return mean, std
}

func (l *lat) pctMs(q float64) float64 {
	if l.h.TotalCount() == 0 {
		return 0
	}
	return float64(l.h.ValueAtQuantile(q)) / 1e3
}

type opState struct {
	count       uint64 // replies + failures
	errors      uint64
	timeouts    uint64
	retransmits uint64
	lat         *lat
}

// Recorder accumulates one client's measurements. Not safe for concurrent use.
type Recorder struct {
	ops   [nfs3.NumProcs]*opState
	all   *lat
	lag   *lat
	extra map[nfs3.Proc]*opState // procedures beyond NumProcs (never in practice)
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{all: newLat(), lag: newLat()}
}

func (r *Recorder) op(p nfs3.Proc) *opState {
	if int(p) < len(r.ops) {
		o := r.ops[p]
		if o == nil {
			o = &opState{lat: newLat()}
			r.ops[p] = o
		}
		return o
	}
	if r.extra == nil {
		r.extra = map[nfs3.Proc]*opState{}
	}
	o := r.extra[p]
	if o == nil {
		o = &opState{lat: newLat()}
		r.extra[p] = o
	}
	return o
}

// Done records a reply: latency from the intended send time, the NFS
// status (≠ 0 counts as an error) and the retransmits the call needed.
func (r *Recorder) Done(op nfs3.Proc, latency time.Duration, nfsStatus uint32, retransmits int) {
	o := r.op(op)
	o.count++
	if nfsStatus != 0 {
		o.errors++
	}
	if retransmits > 0 {
		o.retransmits += uint64(retransmits)
	}
	o.lat.record(latency)
	r.all.record(latency)
}

// Failed records a request that got no usable reply; kind "timeout" counts
// as a timeout, anything else as an error.
func (r *Recorder) Failed(op nfs3.Proc, kind string, retransmits int) {
	o := r.op(op)
	o.count++
	if kind == "timeout" {
		o.timeouts++
	} else {
		o.errors++
	}
	if retransmits > 0 {
		o.retransmits += uint64(retransmits)
	}
}

// SendLag records actual − intended send time of one request.
func (r *Recorder) SendLag(d time.Duration) { r.lag.record(d) }

// Count is the number of finished requests recorded so far.
func (r *Recorder) Count() uint64 {
	var n uint64
	for _, o := range r.ops {
		if o != nil {
			n += o.count
		}
	}
	for _, o := range r.extra {
		n += o.count
	}
	return n
}

// Reset clears everything (e.g. at the end of the warm-up).
func (r *Recorder) Reset() { *r = *NewRecorder() }

// Merge adds another recorder's data into r.
func (r *Recorder) Merge(o *Recorder) {
	o.each(func(p nfs3.Proc, s *opState) {
		d := r.op(p)
		d.count += s.count
		d.errors += s.errors
		d.timeouts += s.timeouts
		d.retransmits += s.retransmits
		d.lat.merge(s.lat)
	})
	r.all.merge(o.all)
	r.lag.merge(o.lag)
}

func (r *Recorder) each(f func(nfs3.Proc, *opState)) {
	for i, o := range r.ops {
		if o != nil {
			f(nfs3.Proc(i), o)
		}
	}
	for p, o := range r.extra {
		f(p, o)
	}
}

// SendLagQuantile returns the send-lag quantile q ∈ [0,1] (e.g. 0.99) from
// the send-lag histogram (µs resolution, 3 significant digits).
func (r *Recorder) SendLagQuantile(q float64) time.Duration {
	return quantile(r.lag, q)
}

// LatencyQuantile returns the latency quantile q ∈ [0,1] over all replies.
func (r *Recorder) LatencyQuantile(q float64) time.Duration {
	return quantile(r.all, q)
}

func quantile(l *lat, q float64) time.Duration {
	if l.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(l.h.ValueAtQuantile(100*q)) * time.Microsecond
}
