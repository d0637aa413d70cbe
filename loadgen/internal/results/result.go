package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"workbench/loadgen/internal/nfs3"
)

// Meta is what the engine knows about the run beyond the measurements.
type Meta struct {
	Workload    string
	OfferedRate float64            // ops/s
	DurationS   float64            // measured window (after warm-up), seconds
	MixTarget   map[string]float64 // procedure name → fraction
	StartUnixNs int64              // wall-clock start of the measured window
	Host        string

	// optional, copied to the Result as-is
	Server, Export   string
	Pacing           string // "constant" | "poisson"
	Conns            int
	Seed             int64
	WarmupS          float64
	Saturated        bool
	SaturationReason string
	NFSVersion       string // "" (NFSv3) or NFSVersion41
	Data             string // what WRITEs carried (content.Spec.String)
}

// Lag is the send-lag summary (ms).
type Lag struct {
	Mean float64 `json:"mean"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Exact holds the integer sums that make merging exact.
type Exact struct {
	N        uint64 `json:"n"`         // samples with a latency (replies / sends)
	SumNs    uint64 `json:"sum_ns"`    // Σ x, ns
	SumSqNs2 string `json:"sumsq_ns2"` // Σ x², ns², decimal 128-bit integer
	MaxNs    uint64 `json:"max_ns"`
}

// OpResult is the per-procedure breakdown (seed 003 Table 4).
type OpResult struct {
	Count       uint64  `json:"count"` // replies + failures
	Share       float64 `json:"share"` // count / ops_total
	MeanMs      float64 `json:"mean_ms"`
	StdMs       float64 `json:"std_ms"`
	P50Ms       float64 `json:"p50_ms"`
	P95Ms       float64 `json:"p95_ms"`
	P99Ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"`
	TimePct     float64 `json:"time_pct"` // share of the total latency, %
	Errors      uint64  `json:"errors"`
	Timeouts    uint64  `json:"timeouts"`
	Retransmits uint64  `json:"retransmits"`
	Exact       Exact   `json:"exact"`
	Histogram   string  `json:"histogram"` // base64 HDR V2 compressed, µs
}

// Result is one run's (or a merge of several runs') results.
type Result struct {
	Workload           string               `json:"workload"`
	OfferedRate        float64              `json:"offered_rate"`
	AchievedRate       float64              `json:"achieved_rate"`
	DurationS          float64              `json:"duration_s"`
	OpsTotal           uint64               `json:"ops_total"`
	MeanMs             float64              `json:"mean_ms"`
	StdMs              float64              `json:"std_ms"`
	P50Ms              float64              `json:"p50_ms"`
	P95Ms              float64              `json:"p95_ms"`
	P99Ms              float64              `json:"p99_ms"`
	MaxMs              float64              `json:"max_ms"`
	Ops                map[string]*OpResult `json:"ops"`
	MixTarget          map[string]float64   `json:"mix_target"`
	MixActual          map[string]float64   `json:"mix_actual"`
	SendLagMs          Lag                  `json:"send_lag_ms"`
	GeneratorSaturated bool                 `json:"generator_saturated"`
	SaturationReason   string               `json:"saturation_reason"`
	Errors             uint64               `json:"errors"`
	Timeouts           uint64               `json:"timeouts"`
	Retransmits        uint64               `json:"retransmits"`
	Histogram          string               `json:"histogram"` // all replies, base64 HDR V2 compressed, µs

	// HostStealPct is the share of the load host's CPU time its hypervisor
	// stole during the measured window, % (top's %st; package hoststat);
	// absent when unknown. A merge keeps the largest of its inputs.
	HostStealPct *float64 `json:"host_steal_pct,omitempty"`

	Clients          int      `json:"clients"`
	StartUnixNs      int64    `json:"start_unix_ns"`
	Host             string   `json:"host,omitempty"`
	Hosts            []string `json:"hosts,omitempty"`
	Server           string   `json:"server,omitempty"`
	Export           string   `json:"export,omitempty"`
	Pacing           string   `json:"pacing,omitempty"`
	Conns            int      `json:"conns,omitempty"`
	Seed             int64    `json:"seed,omitempty"`
	WarmupS          float64  `json:"warmup_s,omitempty"`
	FirstCalls       []string `json:"first_calls,omitempty"`     // one client's first calls ("PROC target"); not merged
	Shards           int      `json:"shards,omitempty"`          // metronome shards (summed by merge)
	CPUs             string   `json:"cpus,omitempty"`            // the CPU list the generator was pinned to (not merged)
	QuantumUs        float64  `json:"quantum_us,omitempty"`      // the metronome's wake-up quantum, µs (the largest when merged)
	GeneratorCPUS    float64  `json:"generator_cpu_s,omitempty"` // the generator process's CPU time from the common start to the end of the drain, s (summed by merge)
	RepliesPolled    bool     `json:"replies_polled,omitempty"`  // replies timed by the kernel's receive time, read by the metronome (low rates)
	Exact            Exact    `json:"exact"`                     // all replies
	SendLagExact     Exact    `json:"send_lag_exact"`            // send lag
	SendLagHistogram string   `json:"send_lag_histogram"`        // µs

	// Series is the per-interval time series (series.go); absent from
	// results of an fstress without it, and then from their merges.
	Series *Series `json:"series,omitempty"`

	// Drain is the wait for an idle server before the run (drain.go);
	// absent when the probe was off. A merge keeps the longest.
	Drain *Drain `json:"drain,omitempty"`

	// NullRTTMs is the round trip of the NULL calls sent beside the run
	// (nullrtt.go); absent when the beside probe was off (or could not
	// connect). A merge pools the calls of its inputs exactly.
	NullRTTMs *NullRTT `json:"null_rtt_ms,omitempty"`

	// NFSVersion is "4.1" for an NFSv4.1 run (ops then carry the v4.1
	// names, names.go), absent for NFSv3. Results of different versions
	// do not merge.
	NFSVersion string `json:"nfs_version,omitempty"`
	// Data is what the WRITEs carried: "zeros" or "compress_ratio=R
	// dedupe_pct=P data_unit=U" (package content); a merge of different
	// ones joins them with " + ".
	Data string `json:"data,omitempty"`
	// ErrorStatuses counts the errors by NFS status name (NFSv4.1 runs:
	// NFS4ERR_DELAY, NFS4ERR_GRACE, NFS4ERR_BADSESSION, ...); summed by merge.
	ErrorStatuses map[string]uint64 `json:"error_statuses,omitempty"`
	// NFS4 are the NFSv4.1 session's counters; summed by merge.
	NFS4 *NFS4Stats `json:"nfs4,omitempty"`
}

func encodeHist(h *hdr.Histogram) string {
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil { // cannot happen for a histogram built by newHist
		return ""
	}
	return string(b)
}

func decodeHist(s string) (*hdr.Histogram, error) {
	if s == "" {
		return newHist(), nil
	}
	h, err := hdr.Decode([]byte(s))
	if err != nil {
		return nil, err
	}
	// Re-record into the canonical geometry so merges never drop values.
	if h.LowestTrackableValue() != HistMinUs || h.HighestTrackableValue() < HistMaxUs || h.SignificantFigures() != HistSigFigs {
		c := newHist()
		c.Merge(h)
		return c, nil
	}
	return h, nil
}

func (l *lat) exact() Exact {
	return Exact{N: l.n, SumNs: l.sumNs, SumSqNs2: l.sqNs2.String(), MaxNs: l.maxNs}
}

func latFrom(e Exact, hist string) (*lat, error) {
	h, err := decodeHist(hist)
	if err != nil {
		return nil, err
	}
	sq, err := parseU128(e.SumSqNs2)
	if err != nil {
		return nil, err
	}
	if uint64(h.TotalCount()) != e.N {
		return nil, fmt.Errorf("histogram holds %d values but exact count is %d", h.TotalCount(), e.N)
	}
	return &lat{n: e.N, sumNs: e.SumNs, sqNs2: sq, maxNs: e.MaxNs, h: h}, nil
}

// Result computes the summary of everything recorded so far.
func (r *Recorder) Result(m Meta) *Result {
	res := &Result{
		Workload:           m.Workload,
		OfferedRate:        m.OfferedRate,
		DurationS:          m.DurationS,
		MixTarget:          copyMix(m.MixTarget),
		GeneratorSaturated: m.Saturated,
		SaturationReason:   m.SaturationReason,
		Clients:            1,
		StartUnixNs:        m.StartUnixNs,
		Host:               m.Host,
		Server:             m.Server,
		Export:             m.Export,
		Pacing:             m.Pacing,
		Conns:              m.Conns,
		Seed:               m.Seed,
		WarmupS:            m.WarmupS,
		NFSVersion:         m.NFSVersion,
		Data:               m.Data,
	}
	if m.Host != "" {
		res.Hosts = []string{m.Host}
	}
	r.fill(res)
	if res.DurationS > 0 {
		res.AchievedRate = float64(res.OpsTotal) / res.DurationS // achieved = ops finished / window
	}
	return res
}

// fill computes every derived field of res from the recorder state.
func (r *Recorder) fill(res *Result) {
	res.Ops = map[string]*OpResult{}
	res.MixActual = map[string]float64{}
	res.OpsTotal, res.Errors, res.Timeouts, res.Retransmits = 0, 0, 0, 0
	r.each(func(p nfs3.Proc, o *opState) {
		res.OpsTotal += o.count
		res.Errors += o.errors
		res.Timeouts += o.timeouts
		res.Retransmits += o.retransmits
	})
	r.each(func(p nfs3.Proc, o *opState) {
		if o.count == 0 {
			return
		}
		mean, std := o.lat.meanStdMs()
		or := &OpResult{
			Count:       o.count,
			MeanMs:      mean,
			StdMs:       std,
			P50Ms:       o.lat.pctMs(50),
			P95Ms:       o.lat.pctMs(95),
			P99Ms:       o.lat.pctMs(99),
			MaxMs:       float64(o.lat.maxNs) / 1e6,
			Errors:      o.errors,
			Timeouts:    o.timeouts,
			Retransmits: o.retransmits,
			Exact:       o.lat.exact(),
			Histogram:   encodeHist(o.lat.h),
		}
		if res.OpsTotal > 0 {
			or.Share = float64(o.count) / float64(res.OpsTotal)
		}
		if r.all.sumNs > 0 {
			or.TimePct = 100 * float64(o.lat.sumNs) / float64(r.all.sumNs) // % of total time
		}
		name := OpName(p, res.NFSVersion)
		res.Ops[name] = or
		res.MixActual[name] = or.Share
	})
	res.MeanMs, res.StdMs = r.all.meanStdMs()
	res.P50Ms, res.P95Ms, res.P99Ms = r.all.pctMs(50), r.all.pctMs(95), r.all.pctMs(99)
	res.MaxMs = float64(r.all.maxNs) / 1e6
	res.Exact = r.all.exact()
	res.Histogram = encodeHist(r.all.h)
	lm, _ := r.lag.meanStdMs()
	res.SendLagMs = Lag{Mean: lm, P99: r.lag.pctMs(99), Max: float64(r.lag.maxNs) / 1e6}
	res.SendLagExact = r.lag.exact()
	res.SendLagHistogram = encodeHist(r.lag.h)
	if res.MixTarget == nil {
		res.MixTarget = map[string]float64{}
	}
	for k := range res.MixTarget { // every target op appears in mix_actual, 0 if never done
		if _, ok := res.MixActual[k]; !ok {
			res.MixActual[k] = 0
		}
	}
}

func copyMix(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// recorder rebuilds the exact recorder state from a Result.
func (res *Result) recorder() (*Recorder, error) {
	r := NewRecorder()
	var err error
	if r.all, err = latFrom(res.Exact, res.Histogram); err != nil {
		return nil, fmt.Errorf("histogram: %v", err)
	}
	if r.lag, err = latFrom(res.SendLagExact, res.SendLagHistogram); err != nil {
		return nil, fmt.Errorf("send_lag_histogram: %v", err)
	}
	for name, o := range res.Ops {
		p, ok := opByName(name)
		if !ok {
			return nil, fmt.Errorf("ops: unknown procedure %q", name)
		}
		st := r.op(p)
		st.count, st.errors, st.timeouts, st.retransmits = o.Count, o.Errors, o.Timeouts, o.Retransmits
		if st.lat, err = latFrom(o.Exact, o.Histogram); err != nil {
			return nil, fmt.Errorf("ops.%s: %v", name, err)
		}
	}
	return r, nil
}

// Merge combines the results of several clients exactly (see package doc).
func Merge(rs []*Result) (*Result, error) {
	if len(rs) == 0 {
		return nil, errors.New("merge: no results")
	}
	m := newMerger()
	for i, r := range rs {
		if r == nil {
			return nil, fmt.Errorf("merge: result %d is nil", i+1)
		}
		rec, err := r.recorder()
		if err != nil {
			return nil, fmt.Errorf("merge: result %d: %v", i+1, err)
		}
		m.acc.Merge(rec)
		m.series = append(m.series, r.Series)
		m.addTotals(r)
		m.addHosts(r)
		m.addMix(r)
		m.addWindow(r)
		if err := m.addVersion(r, i == 0); err != nil {
			return nil, fmt.Errorf("merge: result %d: %v", i+1, err)
		}
		if i == 0 {
			out := m.out
			out.Server, out.Export, out.Pacing, out.Conns, out.Seed, out.WarmupS = r.Server, r.Export, r.Pacing, r.Conns, r.Seed, r.WarmupS
		}
	}
	out := m.finish()
	m.acc.fill(out)
	var err error
	if out.Series, err = MergeSeries(m.series); err != nil {
		return nil, fmt.Errorf("merge: %v", err)
	}
	out.Drain = mergeDrain(rs)
	if out.NullRTTMs, err = mergeNullRTT(rs); err != nil {
		return nil, fmt.Errorf("merge: %v", err)
	}
	return out, nil
}

// merger accumulates the clients' results for Merge.
type merger struct {
	out        *Result
	acc        *Recorder
	names      []string // the workloads, in order of first appearance
	data       []string // the data specs, in order of first appearance
	reasons    []string // the saturation reasons given
	series     []*Series
	hostSeen   map[string]bool
	offeredSum float64 // the sum of the weights of MixTarget
	minDur     float64
	allStart   bool    // every result has a start time
	winLo      float64 // the intersection of the clients' windows,
	winHi      float64 // seconds since epoch
}

func newMerger() *merger {
	return &merger{
		out:      &Result{MixTarget: map[string]float64{}},
		acc:      NewRecorder(),
		hostSeen: map[string]bool{},
		minDur:   math.Inf(1),
		allStart: true,
		winLo:    math.Inf(-1),
		winHi:    math.Inf(1),
	}
}

// addTotals sums the rates and clients, and gathers the saturation verdicts,
// the worst host steal and the workload names.
func (m *merger) addTotals(r *Result) {
	out := m.out
	out.OfferedRate += r.OfferedRate
	out.AchievedRate += r.AchievedRate
	c := r.Clients
	if c < 1 {
		c = 1
	}
	out.Clients += c
	out.Shards += r.Shards
	out.GeneratorCPUS += r.GeneratorCPUS
	out.QuantumUs = math.Max(out.QuantumUs, r.QuantumUs)
	if r.GeneratorSaturated {
		out.GeneratorSaturated = true
		if r.SaturationReason != "" {
			m.reasons = append(m.reasons, r.SaturationReason)
		}
	}
	if r.HostStealPct != nil && (out.HostStealPct == nil || *r.HostStealPct > *out.HostStealPct) {
		v := *r.HostStealPct
		out.HostStealPct = &v
	}
	if !contains(m.names, r.Workload) {
		m.names = append(m.names, r.Workload)
	}
	if r.Data != "" && !contains(m.data, r.Data) {
		m.data = append(m.data, r.Data)
	}
}

// addHosts adds the client hosts not seen yet, in order.
func (m *merger) addHosts(r *Result) {
	hs := r.Hosts
	if len(hs) == 0 && r.Host != "" {
		hs = []string{r.Host}
	}
	for _, h := range hs {
		if !m.hostSeen[h] {
			m.hostSeen[h] = true
			m.out.Hosts = append(m.out.Hosts, h)
		}
	}
}

// addMix adds the target mix weighted by the offered rate (1 when none).
func (m *merger) addMix(r *Result) {
	w := r.OfferedRate
	if !(w > 0) {
		w = 1
	}
	m.offeredSum += w
	for k, v := range r.MixTarget {
		m.out.MixTarget[k] += w * v
	}
}

// addWindow narrows the shortest duration, the window common to all the
// clients and the earliest start.
func (m *merger) addWindow(r *Result) {
	if r.DurationS < m.minDur {
		m.minDur = r.DurationS
	}
	if r.StartUnixNs <= 0 {
		m.allStart = false
		return
	}
	s := float64(r.StartUnixNs) / 1e9
	m.winLo = math.Max(m.winLo, s)
	m.winHi = math.Min(m.winHi, s+r.DurationS)
	if m.out.StartUnixNs == 0 || r.StartUnixNs < m.out.StartUnixNs {
		m.out.StartUnixNs = r.StartUnixNs
	}
}

// finish sets what the whole of the results decides: the mean target mix,
// the names, the reasons, the duration and window, the single host.
func (m *merger) finish() *Result {
	out := m.out
	for k := range out.MixTarget {
		out.MixTarget[k] /= m.offeredSum // offered-rate-weighted mean target
	}
	out.Workload = strings.Join(m.names, "+")
	out.Data = strings.Join(m.data, " + ")
	out.SaturationReason = strings.Join(m.reasons, "; ")
	out.DurationS = m.minDur
	if m.allStart && m.winHi > m.winLo {
		out.DurationS = m.winHi - m.winLo // intersection of the clients' windows
		out.StartUnixNs = int64(math.Round(m.winLo * 1e9))
	}
	if len(out.Hosts) == 1 {
		out.Host = out.Hosts[0]
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// WriteJSONFile writes the result atomically: a temporary file in the same
// directory, fsync, then rename over path — readers never see a partial file.
func (r *Result) WriteJSONFile(path string) error {
	data, err := r.marshal()
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, data)
}

// WriteFileAtomic writes data to path (mode 0644) through a temporary file
// in the same directory, fsync and rename, so readers never see a partial
// file; on error no temporary file is left. Errors are "write <path>: ...".
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %v", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %v", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %v", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %v", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %v", path, err)
	}
	ok = true
	return nil
}

func (r *Result) marshal() ([]byte, error) { return MarshalIndented(r, "result") }

// MarshalIndented is the indented JSON of v with a final newline; errors say
// "encode <what>: ...".
func MarshalIndented(v any, what string) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %v", what, err)
	}
	return append(data, '\n'), nil
}

// WriteJSON writes the result as indented JSON to w.
func (r *Result) WriteJSON(w io.Writer) error {
	data, err := r.marshal()
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// ReadJSONFile reads a result written by WriteJSONFile and checks that its
// exact state decodes (so it can be merged). Errors do not repeat the path
// (callers prefix it).
func ReadJSONFile(path string) (*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	return ReadJSON(data)
}

// ReadJSON decodes a result and checks that its exact state decodes.
func ReadJSON(data []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("not a result file: %v", err)
	}
	if _, err := r.recorder(); err != nil {
		return nil, fmt.Errorf("inconsistent result: %v", err)
	}
	if r.Series != nil {
		if _, err := MergeSeries([]*Series{r.Series}); err != nil {
			return nil, fmt.Errorf("inconsistent result: %v", err)
		}
	}
	if r.NullRTTMs != nil {
		if _, err := r.NullRTTMs.recorder(); err != nil {
			return nil, fmt.Errorf("inconsistent result: %v", err)
		}
	}
	return &r, nil
}

// Summary prints a human-readable table like seed 003 Table 4 plus the
// headline numbers.
func (r *Result) Summary(w io.Writer) {
	fmt.Fprintf(w, "workload %s: offered %.1f ops/s, achieved %.1f ops/s over %.1f s (%d ops",
		r.Workload, r.OfferedRate, r.AchievedRate, r.DurationS, r.OpsTotal)
	if r.Clients > 1 {
		fmt.Fprintf(w, ", %d clients", r.Clients)
	}
	fmt.Fprintf(w, ")\n")
	fmt.Fprintf(w, "latency ms: mean %.3f  std %.3f  p50 %.3f  p95 %.3f  p99 %.3f  max %.3f\n",
		r.MeanMs, r.StdMs, r.P50Ms, r.P95Ms, r.P99Ms, r.MaxMs)
	fmt.Fprintf(w, "send lag ms: mean %.3f  p99 %.3f  max %.3f   errors %d  timeouts %d  retransmits %d\n",
		r.SendLagMs.Mean, r.SendLagMs.P99, r.SendLagMs.Max, r.Errors, r.Timeouts, r.Retransmits)
	if r.GeneratorSaturated {
		reason := r.SaturationReason
		if reason == "" {
			reason = "schedule not kept"
		}
		fmt.Fprintf(w, "GENERATOR SATURATED: %s\n", reason)
	}
	if d := r.Drain; d != nil {
		fmt.Fprintf(w, "drain: %.3f s, %d NULL probes, max RTT %.0f µs, last %v µs (limit %.0f µs, idle %.0f µs %s)\n",
			d.DrainS, d.Probes, d.MaxRTTUs, d.LastUs, d.LimitUs, d.IdleRTTUs, d.IdleFrom)
	}
	if n := r.NullRTTMs; n != nil {
		fmt.Fprintf(w, "NULL beside (every %g ms): n %d  mean %.3f  p50 %.3f  p99 %.3f  max %.3f ms   timeouts %d  errors %d\n",
			n.GapMs, n.N, n.Mean, n.P50, n.P99, n.Max, n.Timeouts, n.Errors)
	}
	r.summaryNFS4(w)
	if s := r.Series; s != nil {
		fmt.Fprintf(w, "series: %d intervals of %g s; outstanding at stop %d (replied %d, errors %d, timed out %d)\n",
			len(s.Intervals), s.IntervalS, s.OutstandingAtStop, s.StopReplied, s.StopErrors, s.StopTimeouts)
	}
	names := make([]string, 0, len(r.Ops))
	for k := range r.Ops {
		names = append(names, k)
	}
	for k := range r.MixTarget {
		if _, ok := r.Ops[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		ci, cj := opCount(r, names[i]), opCount(r, names[j])
		if ci != cj {
			return ci > cj
		}
		return names[i] < names[j]
	})
	fmt.Fprintf(w, "%-12s %10s %8s %8s %10s %10s %10s %8s %7s %7s\n",
		"op", "count", "mix %", "target %", "mean ms", "std ms", "p95 ms", "% time", "errors", "tmo")
	for _, n := range names {
		o := r.Ops[n]
		if o == nil {
			o = &OpResult{}
		}
		fmt.Fprintf(w, "%-12s %10d %8.2f %8.2f %10.3f %10.3f %10.3f %7.1f%% %7d %7d\n",
			n, o.Count, 100*o.Share, 100*r.MixTarget[n], o.MeanMs, o.StdMs, o.P95Ms, o.TimePct, o.Errors, o.Timeouts)
	}
}

func opCount(r *Result, n string) uint64 {
	if o := r.Ops[n]; o != nil {
		return o.Count
	}
	return 0
}
