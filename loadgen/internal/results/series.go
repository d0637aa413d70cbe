package results

// The time series of a run: per-interval counts and latency histograms.
//
// Call i belongs to interval k = ⌊(t_i − warmup) / interval⌋ of its
// INTENDED send time t_i (k < 0: warm-up, flagged). Its send, completion,
// status and latency all count in that interval, whenever it completes, so
// the measured intervals (k ≥ 0) sum exactly to the whole-run figures:
// Σ count = ops_total, Σ errors, Σ timeouts, Σ retransmits, Σ exact sums and
// the merged histograms equal the run's (same HDR geometry and encoding).
// `arrived` counts completions by their arrival time instead (throughput as
// the generator saw it). Histograms are sparse (hdr.PackedHistogram) while
// recording, but for each operation's latest interval, which records into a
// dense histogram until the next interval starts (hotHist); the total of an
// interval is the merge of its operations'.

import (
	"fmt"
	"math"
	"sort"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"workbench/loadgen/internal/nfs3"
)

// Interval bounds (fstress run --interval).
const (
	DefaultInterval = time.Second
	MinInterval     = 100 * time.Millisecond
	MaxIntervals    = 3600 // warm-up and measured intervals together
)

// IntervalCount is the number of warm-up and measured intervals:
// ⌈warmup/interval⌉ and ⌈duration/interval⌉.
func IntervalCount(interval, warmup, duration time.Duration) (nWarm, nMeas int64) {
	if interval <= 0 {
		return 0, 0
	}
	ceil := func(d time.Duration) int64 { return (int64(d) + int64(interval) - 1) / int64(interval) }
	return ceil(warmup), ceil(duration)
}

// CheckInterval validates an interval for a run: ≥ 100 ms, ≤ the duration,
// at most MaxIntervals intervals with the warm-up's.
func CheckInterval(interval, warmup, duration time.Duration) error {
	if interval < MinInterval {
		return fmt.Errorf("--interval must be >= %v (got %v)", MinInterval, interval)
	}
	if interval > duration {
		return fmt.Errorf("--interval %v must be <= --duration %v", interval, duration)
	}
	return CheckIntervalCount(interval, warmup, duration)
}

// CheckIntervalCount bounds the number of intervals (MaxIntervals).
func CheckIntervalCount(interval, warmup, duration time.Duration) error {
	if interval <= 0 {
		return fmt.Errorf("--interval must be > 0 (got %v)", interval)
	}
	if w, m := IntervalCount(interval, warmup, duration); w+m > MaxIntervals {
		return fmt.Errorf("--interval %v gives %d intervals (warm-up %d + measured %d); at most %d: use a longer interval",
			interval, w+m, w, m, MaxIntervals)
	}
	return nil
}

// IntervalStats is one interval's figures, per operation or in total.
type IntervalStats struct {
	Sent        uint64 `json:"sent"`  // calls sent
	Count       uint64 `json:"count"` // of those, finished: replies + errors + timeouts
	Errors      uint64 `json:"errors"`
	Timeouts    uint64 `json:"timeouts"`
	Retransmits uint64 `json:"retransmits"`
	Exact       Exact  `json:"exact"`     // replies' latencies
	Histogram   string `json:"histogram"` // base64 HDR V2 compressed, µs
}

// Interval is interval K: [t_s, t_s + len_s) of intended send times, s from
// the start of the measured window (negative: warm-up).
type Interval struct {
	K       int64   `json:"k"`
	StartS  float64 `json:"t_s"`
	LenS    float64 `json:"len_s"`
	Warmup  bool    `json:"warmup,omitempty"`
	Arrived uint64  `json:"arrived"` // completions whose arrival fell in the interval
	IntervalStats
	Ops map[string]*IntervalStats `json:"ops,omitempty"`
}

// Series is the run's time series and what was in flight when sending
// stopped: outstanding_at_stop = stop_replied + stop_errors + stop_timeouts.
type Series struct {
	IntervalS         float64    `json:"interval_s"`
	Intervals         []Interval `json:"intervals"`
	OutstandingAtStop uint64     `json:"outstanding_at_stop"`
	StopReplied       uint64     `json:"stop_replied"`
	StopErrors        uint64     `json:"stop_errors"`
	StopTimeouts      uint64     `json:"stop_timeouts"`
}

// ivOp is one operation's state in one interval.
type ivOp struct {
	sent, count, errors, timeouts, retrans uint64
	n, sumNs, maxNs                        uint64
	sq                                     u128
	h                                      *hdr.PackedHistogram
}

// SeriesRecorder records the series on the engine's scheduling goroutine.
// Slot j holds interval k = j − nWarm. Memory: one pointer array per
// interval, an ivOp per used (interval, op), histograms ∝ populated buckets,
// and a dense histogram per operation used (hotHist, ~150 KB).
type SeriesRecorder struct {
	intNs, warmNs, endNs int64
	nWarm                int64
	iv                   [][nfs3.NumProcs]*ivOp
	arrived              []uint64
	hot                  [nfs3.NumProcs]hotHist // each op's latest interval, dense (recordHist)
	stopped              bool
	stop                 Series // the stop_* counters
	Version              string // names the ops: "" (NFSv3) or NFSVersion41
}

// NewSeriesRecorder prepares the intervals of a run (checked by the caller
// with CheckInterval; here only their number).
func NewSeriesRecorder(interval, warmup, duration time.Duration) (*SeriesRecorder, error) {
	if err := CheckIntervalCount(interval, warmup, duration); err != nil {
		return nil, err
	}
	w, m := IntervalCount(interval, warmup, duration)
	return &SeriesRecorder{intNs: int64(interval), warmNs: int64(warmup), endNs: int64(warmup + duration),
		nWarm: w, iv: make([][nfs3.NumProcs]*ivOp, w+m), arrived: make([]uint64, w+m)}, nil
}

// Slot is the interval slot of time t (ns from the start), −1 outside.
func (s *SeriesRecorder) Slot(t int64) int32 {
	if t < 0 || t >= s.endNs {
		return -1
	}
	d := t - s.warmNs // floor division (d may be negative)
	k := d / s.intNs
	if d < 0 && k*s.intNs != d {
		k--
	}
	j := k + s.nWarm
	if j < 0 {
		return -1
	}
	return int32(j)
}

func (s *SeriesRecorder) op(j int32, p nfs3.Proc) *ivOp {
	if j < 0 || int(p) >= nfs3.NumProcs {
		return nil
	}
	o := s.iv[j][p]
	if o == nil {
		o = &ivOp{}
		s.iv[j][p] = o
	}
	return o
}

// Sent counts a call sent in slot j.
func (s *SeriesRecorder) Sent(j int32, p nfs3.Proc) {
	if o := s.op(j, p); o != nil {
		o.sent++
	}
}

// Done records a reply to a call of slot j, as Recorder.Done.
func (s *SeriesRecorder) Done(j int32, p nfs3.Proc, latency time.Duration, nfsStatus uint32, retransmits int) {
	o := s.op(j, p)
	if o == nil {
		return
	}
	o.count++
	if nfsStatus != 0 {
		o.errors++
	}
	o.retrans += uint64(max(retransmits, 0))
	ns := uint64(max(latency, 0))
	o.n++
	o.sumNs += ns
	o.sq.addSquare(ns)
	o.maxNs = max(o.maxNs, ns)
	s.recordHist(j, p, o, histUs(ns))
}

// hotHist is the dense histogram of one operation's latest interval
// (slot j): recording there is an index computation, where the sparse
// histograms of the intervals take a binary search per value. Its counts
// move to the interval's sparse histogram (exactly: same geometry) when a
// later interval's first value comes, and at Series.
type hotHist struct {
	j int32
	h *hdr.Histogram
}

// recordHist records v (µs) for a reply of slot j: into the dense
// histogram of p's latest interval, or of a later one (the latest's counts
// move to its sparse histogram first), or — a late reply of an earlier
// interval — straight into that interval's sparse histogram.
func (s *SeriesRecorder) recordHist(j int32, p nfs3.Proc, o *ivOp, v int64) {
	hh := &s.hot[p]
	switch {
	case hh.h != nil && hh.j == j:
	case hh.h == nil || j > hh.j:
		s.foldHot(p)
		if hh.h == nil {
			hh.h = newHist()
		}
		hh.j = j
	default:
		_ = o.packed().RecordValue(v)
		return
	}
	_ = hh.h.RecordValue(v)
}

// foldHot moves p's dense histogram's counts into its interval's sparse one.
func (s *SeriesRecorder) foldHot(p nfs3.Proc) {
	hh := &s.hot[p]
	if hh.h == nil || hh.h.TotalCount() == 0 {
		return
	}
	s.iv[hh.j][p].packed().MergeFrom(hh.h)
	hh.h.Reset()
}

// packed is o's sparse histogram, made on first use.
func (o *ivOp) packed() *hdr.PackedHistogram {
	if o.h == nil {
		o.h = hdr.NewPacked(HistMinUs, HistMaxUs, HistSigFigs)
	}
	return o.h
}

// Failed records a call of slot j without a usable reply, as Recorder.Failed.
func (s *SeriesRecorder) Failed(j int32, p nfs3.Proc, timeout bool, retransmits int) {
	o := s.op(j, p)
	if o == nil {
		return
	}
	o.count++
	if timeout {
		o.timeouts++
	} else {
		o.errors++
	}
	o.retrans += uint64(max(retransmits, 0))
}

// Arrived counts a completion at time at (ns from the start); after Stop it
// counts toward the stop_* figures by kind (0 reply, 1 timeout, 2 error).
func (s *SeriesRecorder) Arrived(at int64, kind int) {
	if j := s.Slot(at); j >= 0 {
		s.arrived[j]++
	}
	if s.stopped {
		switch kind {
		case 0:
			s.stop.StopReplied++
		case 1:
			s.stop.StopTimeouts++
		default:
			s.stop.StopErrors++
		}
	}
}

// Stop marks the end of sending with inFlight calls outstanding.
func (s *SeriesRecorder) Stop(inFlight int) {
	s.stopped = true
	s.stop.OutstandingAtStop = uint64(max(inFlight, 0))
}

// histUs is a latency in ns as the histograms record it (µs, rounded, ≤ HistMaxUs).
func histUs(ns uint64) int64 {
	return int64(min((ns+500)/1000, HistMaxUs))
}

// Series encodes the recorded series (at the end of the run).
func (s *SeriesRecorder) Series() *Series {
	for p := range s.hot {
		s.foldHot(nfs3.Proc(p))
	}
	out := s.stop
	out.IntervalS = float64(s.intNs) / 1e9
	out.Intervals = make([]Interval, len(s.iv))
	for j := range s.iv {
		iv := &out.Intervals[j]
		iv.K = int64(j) - s.nWarm
		lo, hi := max(iv.K*s.intNs, -s.warmNs), min((iv.K+1)*s.intNs, s.endNs-s.warmNs)
		iv.StartS, iv.LenS, iv.Warmup, iv.Arrived = float64(lo)/1e9, float64(hi-lo)/1e9, iv.K < 0, s.arrived[j]
		iv.Exact.SumSqNs2 = "0"
		total := hdr.NewPacked(HistMinUs, HistMaxUs, HistSigFigs)
		for p, o := range s.iv[j] {
			if o == nil {
				continue
			}
			st := &IntervalStats{Sent: o.sent, Count: o.count, Errors: o.errors, Timeouts: o.timeouts,
				Retransmits: o.retrans, Exact: Exact{N: o.n, SumNs: o.sumNs, SumSqNs2: o.sq.String(), MaxNs: o.maxNs}}
			if o.h != nil {
				st.Histogram = encodePacked(o.h)
				total.Merge(o.h)
			} else {
				st.Histogram = encodePacked(hdr.NewPacked(HistMinUs, HistMaxUs, HistSigFigs))
			}
			if iv.Ops == nil {
				iv.Ops = map[string]*IntervalStats{}
			}
			iv.Ops[OpName(nfs3.Proc(p), s.Version)] = st
			iv.IntervalStats.add(st)
		}
		iv.Histogram = encodePacked(total)
	}
	return &out
}

func encodePacked(h *hdr.PackedHistogram) string {
	b, err := h.Encode()
	if err != nil { // cannot happen for a histogram of our geometry
		return ""
	}
	return string(b)
}

// add sums o's counts and exact sums into a (not the histogram).
func (a *IntervalStats) add(o *IntervalStats) {
	a.Sent += o.Sent
	a.Count += o.Count
	a.Errors += o.Errors
	a.Timeouts += o.Timeouts
	a.Retransmits += o.Retransmits
	sa, _ := parseU128(a.Exact.SumSqNs2)
	so, _ := parseU128(o.Exact.SumSqNs2)
	sa.add(so)
	a.Exact = Exact{N: a.Exact.N + o.Exact.N, SumNs: a.Exact.SumNs + o.Exact.SumNs, SumSqNs2: sa.String(),
		MaxNs: max(a.Exact.MaxNs, o.Exact.MaxNs)}
}

// mergeStats adds o into a, histograms included (h is a's decoded histogram).
func mergeStats(a *IntervalStats, h *hdr.PackedHistogram, o *IntervalStats) error {
	if _, err := parseU128(o.Exact.SumSqNs2); err != nil {
		return err
	}
	a.add(o)
	if o.Histogram == "" {
		return nil
	}
	oh, err := hdr.DecodePacked([]byte(o.Histogram))
	if err != nil {
		return err
	}
	if uint64(oh.TotalCount()) != o.Exact.N {
		return fmt.Errorf("histogram holds %d values but exact count is %d", oh.TotalCount(), o.Exact.N)
	}
	h.Merge(oh)
	return nil
}

// MergeSeries merges the series of several clients exactly, interval by
// interval (by k; clients started with --start-at share their intervals).
// nil when any input has none; an error when their intervals differ.
func MergeSeries(ss []*Series) (*Series, error) {
	if len(ss) == 0 {
		return nil, nil
	}
	for _, s := range ss {
		if s == nil {
			return nil, nil
		}
		if s.IntervalS != ss[0].IntervalS {
			return nil, fmt.Errorf("series: interval_s %g and %g differ", ss[0].IntervalS, s.IntervalS)
		}
	}
	out := &Series{IntervalS: ss[0].IntervalS}
	byK := map[int64]*Interval{}
	hists := map[*IntervalStats]*hdr.PackedHistogram{}
	hist := func(st *IntervalStats) *hdr.PackedHistogram {
		if hists[st] == nil {
			hists[st] = hdr.NewPacked(HistMinUs, HistMaxUs, HistSigFigs)
		}
		return hists[st]
	}
	for _, s := range ss {
		out.OutstandingAtStop += s.OutstandingAtStop
		out.StopReplied += s.StopReplied
		out.StopErrors += s.StopErrors
		out.StopTimeouts += s.StopTimeouts
		for i := range s.Intervals {
			if err := mergeInterval(byK, hist, &s.Intervals[i]); err != nil {
				return nil, fmt.Errorf("series: interval %d: %v", s.Intervals[i].K, err)
			}
		}
	}
	for _, iv := range byK { // encode before copying: hists is keyed by address
		iv.Histogram = encodePacked(hist(&iv.IntervalStats))
		for _, st := range iv.Ops {
			st.Histogram = encodePacked(hist(st))
		}
		out.Intervals = append(out.Intervals, *iv)
	}
	sort.Slice(out.Intervals, func(a, b int) bool { return out.Intervals[a].K < out.Intervals[b].K })
	return out, nil
}

func mergeInterval(byK map[int64]*Interval, hist func(*IntervalStats) *hdr.PackedHistogram, src *Interval) error {
	d := byK[src.K]
	if d == nil {
		d = &Interval{K: src.K, StartS: src.StartS, LenS: src.LenS, Warmup: src.Warmup,
			IntervalStats: IntervalStats{Exact: Exact{SumSqNs2: "0"}}}
		byK[src.K] = d
	}
	if src.StartS < d.StartS { // a longer warm-up: the union of the clients' spans
		d.LenS += d.StartS - src.StartS
		d.StartS = src.StartS
	}
	d.LenS = math.Max(d.LenS, src.StartS+src.LenS-d.StartS)
	d.Arrived += src.Arrived
	if err := mergeStats(&d.IntervalStats, hist(&d.IntervalStats), &src.IntervalStats); err != nil {
		return err
	}
	for name, st := range src.Ops {
		if _, ok := opByName(name); !ok {
			return fmt.Errorf("ops: unknown procedure %q", name)
		}
		if d.Ops == nil {
			d.Ops = map[string]*IntervalStats{}
		}
		o := d.Ops[name]
		if o == nil {
			o = &IntervalStats{Exact: Exact{SumSqNs2: "0"}}
			d.Ops[name] = o
		}
		if err := mergeStats(o, hist(o), st); err != nil {
			return fmt.Errorf("ops.%s: %v", name, err)
		}
	}
	return nil
}
