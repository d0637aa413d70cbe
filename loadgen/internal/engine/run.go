package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"workbench/loadgen/internal/dist"
	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/objset"
	"workbench/loadgen/internal/pace"
	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/workload"
	"workbench/loadgen/internal/xdr"
)

// Saturation rule (documented in loadgen/README.md). The generator — not the
// server — is declared saturated (generator_saturated: true, exit code 3)
// when, over the measured interval:
//   - it SENT fewer than 99% of the intended sends (the metronome fell
//     behind or ran out of call slots), or
//   - the send-lag p99 (actual send − intended send) exceeds LagBound
//     (default 2 ms), or
//   - the outstanding-calls cap was hit (a call was due while MaxOutstanding
//     calls were in flight, so it was skipped).
//
// A slow server that answers late or not at all is NOT generator saturation:
// its replies still count from the intended send time (high latency) and its
// lost calls count as timeouts; achieved_rate (completed calls in the
// measured interval per second) then falls below offered_rate.
const (
	// fineQuantum is the shortest timer the metronome arms: below it the
	// metronome relies on reply wake-ups and batches every due send, so
	// timers cost at most one arm per 100 µs.
	fineQuantum = 100 * time.Microsecond

	DefaultLagBound = 2 * time.Millisecond
)

// minBatch is the shortest interval between reply-driven wake-ups of the
// metronome (FSTRESS_BATCH_US overrides it, for tuning).
var minBatch = func() time.Duration {
	if v, err := strconv.Atoi(os.Getenv("FSTRESS_BATCH_US")); err == nil && v >= 0 {
		return time.Duration(v) * time.Microsecond
	}
	return 50 * time.Microsecond
}()

const (
	SentFraction = 0.99
)

// RunConfig configures one measured run.
type RunConfig struct {
	Workload       *workload.Workload
	Rate           float64       // offered ops/s (> 0)
	Duration       time.Duration // measured interval
	Warmup         time.Duration // unrecorded interval before it
	Poisson        bool
	Seed           int64
	StartAt        time.Time // zero: start now
	MaxOutstanding int       // 0: derived from rate and timeout
	LagBound       time.Duration
	ClientID       int
	Log            io.Writer
}

// Outcome is what Run returns besides the Result.
type Outcome struct {
	Result          *results.Result
	Saturated       bool
	Reason          string
	Intended, Sent  int64         // in the measured interval
	MinLatency      time.Duration // smallest recorded reply latency
	Skipped         int64         // due calls not sent (cap hit / no target)
	LeftOutstanding int           // calls still unanswered after the drain
	CPUSeconds      float64
	WallSeconds     float64
}

type completion struct {
	slot    int32
	retrans int32
	status  uint32
	kind    uint8 // 0 reply, 1 timeout, 2 error
	at      int64
}

type slot struct {
	r        *runner
	idx      int32
	op       nfs3.Proc
	intended int64
	file     int32 // file index (READ/WRITE side effects)
	pool     int32 // pool entry (CREATE/REMOVE/...)
	pool2    int32 // second pool entry (RENAME)
	end      uint64
	req      nfs3.Request
	encode   func(*xdr.Encoder)
	done     func([]byte, rpc.CallInfo, error)
}

type seqRun struct {
	file int32
	off  uint64
	stop uint64 // file size when the run began ("whole" runs end there)
	left int    // ops left in the run; -1: until the end of the file
}

type runner struct {
	cfg RunConfig
	s   *Session
	fs  *Fileset
	w   *workload.Workload
	rec *results.Recorder

	sched   *workload.Scheduler
	rng     *rand.Rand
	files   *objset.Set
	dirs    *objset.Set
	links   *objset.Set
	fileOf  []int32 // objset id → file index
	dirOf   []int32
	linkOf  []int32
	rd, wr  seqRun
	files2  *pool // scratch file names (CREATE/REMOVE/LINK/SYMLINK/RENAME)
	dirs2   *pool // scratch directory names (MKDIR/RMDIR)
	clients []*rpc.Client
	rr      int

	chunks [][]slot // call slots, allocated slotChunk at a time up to MaxOutstanding (stable addresses)
	nslots int
	free   []int32

	mu   sync.Mutex
	q    []completion
	qn   atomic.Int32
	back []completion

	start    time.Time
	warmNs   int64
	endNs    int64
	inFlight int

	intended, sent, skipped, noTarget int64
	capHit                            bool
	minLat                            time.Duration
	sl                                *sleeper
	nextDue                           atomic.Int64 // intended time of the next send (ns), for reply wake-ups
	waiting                           atomic.Bool  // the metronome is parked
	sendErr                           error
}

func (r *runner) now() int64 { return int64(time.Since(r.start)) }

// done runs on an RPC reader goroutine: timestamp, status, queue.
func (s *slot) onDone(body []byte, info rpc.CallInfo, err error) {
	r := s.r
	c := completion{slot: s.idx, retrans: int32(info.Retransmits), at: r.now()}
	switch {
	case err == nil:
		if s.op != nfs3.ProcNull && len(body) >= 4 {
			c.status = binary.BigEndian.Uint32(body)
		}
	case errors.Is(err, rpc.ErrTimeout):
		c.kind = 1
	default:
		c.kind = 2
	}
	r.mu.Lock()
	r.q = append(r.q, c)
	r.mu.Unlock()
	r.qn.Add(1)
	if c.at >= r.nextDue.Load() && r.waiting.Load() {
		r.sl.notify()
	}
}

const slotChunk = 1024

func (r *runner) slot(i int32) *slot { return &r.chunks[i/slotChunk][i%slotChunk] }

// grow adds a chunk of free slots; false at the MaxOutstanding cap.
func (r *runner) grow() bool {
	n := min(slotChunk, r.cfg.MaxOutstanding-r.nslots)
	if n <= 0 {
		return false
	}
	c := make([]slot, slotChunk)
	r.chunks = append(r.chunks, c)
	for i := n - 1; i >= 0; i-- {
		sl := &c[i]
		sl.r, sl.idx = r, int32(r.nslots+i)
		sl.encode = sl.encodeArgs
		sl.done = sl.onDone
		r.free = append(r.free, sl.idx)
	}
	r.nslots += n
	return true
}

func (s *slot) encodeArgs(e *xdr.Encoder) { s.req.Encode(e) }

// drain applies queued completions on the scheduling goroutine.
func (r *runner) drain() {
	if r.qn.Load() == 0 {
		return
	}
	r.mu.Lock()
	r.q, r.back = r.back[:0], r.q
	r.qn.Store(0)
	r.mu.Unlock()
	for i := range r.back {
		r.complete(&r.back[i])
	}
}

func (r *runner) complete(c *completion) {
	s := r.slot(c.slot)
	if s.intended >= r.warmNs && s.intended < r.endNs {
		switch c.kind {
		case 0:
			if l := time.Duration(c.at - s.intended); l < r.minLat {
				r.minLat = l
			}
			r.rec.Done(s.op, time.Duration(c.at-s.intended), c.status, int(c.retrans))
		case 1:
			r.rec.Failed(s.op, "timeout", int(c.retrans))
		default:
			r.rec.Failed(s.op, "error", int(c.retrans))
		}
	}
	ok := c.kind == 0 && c.status == nfsOK
	r.sideEffect(s, ok)
	r.inFlight--
	s.req.FH, s.req.ToFH = nil, nil
	r.free = append(r.free, s.idx)
}

func (r *runner) sideEffect(s *slot, ok bool) {
	switch s.op {
	case nfs3.ProcWrite:
		if ok && s.end > r.fs.FileSize[s.file] {
			r.fs.FileSize[s.file] = s.end
		}
	case nfs3.ProcCreate, nfs3.ProcSymlink, nfs3.ProcLink:
		r.files2.finish(s.pool, ok, true)
	case nfs3.ProcRemove:
		r.files2.finish(s.pool, ok, false)
	case nfs3.ProcRename:
		r.files2.finish(s.pool, ok, false)
		r.files2.finish(s.pool2, ok, true)
	case nfs3.ProcMkdir:
		r.dirs2.finish(s.pool, ok, true)
	case nfs3.ProcRmdir:
		r.dirs2.finish(s.pool, ok, false)
	}
}

func (r *runner) pickFile() int32 {
	id, ok := r.files.Pick(r.rng.Float64())
	if !ok {
		return -1
	}
	return r.fileOf[id]
}

func (r *runner) pickDir() int32 {
	id, ok := r.dirs.Pick(r.rng.Float64())
	if !ok {
		return 0
	}
	return r.dirOf[id]
}

func clampSize(x float64, lo, hi uint32) uint32 {
	if !(x >= float64(lo)) {
		return lo
	}
	if x > float64(hi) {
		return hi
	}
	return uint32(x)
}

// build fills s.req for s.op; false when the op has no possible target.
// takeScratch takes a scratch name for s.op from the directory pool (MKDIR, RMDIR) or the file
// pool (everything else): present=false for a name to create, true for one to remove. It sets the
// request's directory handle and name and records the entry in the slot; false if none is free.
func (r *runner) takeScratch(s *slot, q *nfs3.Request, present bool) bool {
	p := r.files2
	if s.op == nfs3.ProcMkdir || s.op == nfs3.ProcRmdir {
		p = r.dirs2
	}
	e := p.take(present)
	if e < 0 {
		return false
	}
	s.pool = e
	q.FH, q.Name = r.fs.DirFH[p.dir[e]], p.name[e]
	return true
}

func (r *runner) build(s *slot) bool {
	fs := r.fs
	q := &s.req
	*q = nfs3.Request{Proc: s.op}
	switch s.op {
	case nfs3.ProcNull:
	case nfs3.ProcGetattr, nfs3.ProcAccess, nfs3.ProcSetattr:
		f := r.pickFile()
		if f < 0 {
			return false
		}
		q.FH = fs.FileFH[f]
		if s.op == nfs3.ProcAccess {
			q.Access = 0x3f
		}
		if s.op == nfs3.ProcSetattr {
			q.Mode = 0o644 // chmod to the same mode: a metadata update, no data change
		}
	case nfs3.ProcLookup:
		f := r.pickFile()
		if f < 0 {
			return false
		}
		lf := &fs.Layout.Files[f]
		q.FH, q.Name = fs.DirFH[lf.Dir], lf.Name
	case nfs3.ProcReadlink:
		if len(fs.LinkFH) == 0 {
			return false
		}
		id, ok := r.links.Pick(r.rng.Float64())
		if !ok {
			return false
		}
		q.FH = fs.LinkFH[r.linkOf[id]]
	case nfs3.ProcRead:
		if r.rd.left == 0 || r.rd.file < 0 || r.rd.off >= fs.FileSize[r.rd.file] {
			r.newRun(&r.rd, r.w.SeqRunOps, r.w.ReadAccess, r.w.ReadSize)
			if r.rd.file < 0 {
				return false
			}
		}
		n := clampSize(r.w.ReadSize.Sample(r.rng), 1, 1<<20)
		q.FH, q.Offset, q.Count = fs.FileFH[r.rd.file], r.rd.off, n
		s.file = r.rd.file
		r.rd.off += uint64(n)
		if r.rd.left > 0 {
			r.rd.left--
		}
	case nfs3.ProcWrite:
		if r.wr.left == 0 || r.wr.file < 0 || (r.wr.left < 0 && r.wr.off >= r.wr.stop) {
			r.newRun(&r.wr, r.w.WriteSeqRunOps, r.w.WriteAccess, r.w.WriteSize)
			if r.wr.file < 0 {
				return false
			}
		}
		n := clampSize(r.w.WriteSize.Sample(r.rng), 1, 1<<20)
		q.FH, q.Offset, q.Data, q.Stable = fs.FileFH[r.wr.file], r.wr.off, zeroData[:n], 0
		s.file = r.wr.file
		s.end = r.wr.off + uint64(n)
		r.wr.off += uint64(n)
		if r.wr.left > 0 {
			r.wr.left--
		}
	case nfs3.ProcCommit:
		f := r.wr.file // the file of the current (or last) write run
		if f < 0 {
			f = r.pickFile()
		}
		if f < 0 {
			return false
		}
		q.FH = fs.FileFH[f]
	case nfs3.ProcReaddir, nfs3.ProcReaddirplus:
		d := r.pickDir()
		q.FH, q.Count, q.MaxCount = fs.DirFH[d], 4096, 8192
	case nfs3.ProcFsstat, nfs3.ProcFsinfo, nfs3.ProcPathconf:
		q.FH = fs.Root
	case nfs3.ProcCreate, nfs3.ProcSymlink, nfs3.ProcMkdir:
		if !r.takeScratch(s, q, false) {
			return false
		}
		switch s.op {
		case nfs3.ProcCreate:
			q.Mode, q.SetSize, q.Size = 0o644, true, 0
		case nfs3.ProcSymlink:
			q.Mode, q.Target = 0o777, "f0"
		case nfs3.ProcMkdir:
			q.Mode = 0o755
		}
	case nfs3.ProcLink:
		f := r.pickFile()
		e := r.files2.take(false)
		if f < 0 || e < 0 {
			if e >= 0 {
				r.files2.finish(e, false, false)
			}
			return false
		}
		s.pool = e
		q.FH, q.ToFH, q.ToName = fs.FileFH[f], fs.DirFH[r.files2.dir[e]], r.files2.name[e]
	case nfs3.ProcRemove, nfs3.ProcRmdir:
		if !r.takeScratch(s, q, true) {
			return false
		}
	case nfs3.ProcRename:
		p := r.files2
		a := p.take(true)
		if a < 0 {
			return false
		}
		b := p.take(false)
		if b < 0 {
			p.finish(a, false, true)
			return false
		}
		s.pool, s.pool2 = a, b
		q.FH, q.Name, q.ToFH, q.ToName = fs.DirFH[p.dir[a]], p.name[a], fs.DirFH[p.dir[b]], p.name[b]
	default:
		return false
	}
	return true
}

// newRun starts a sequential I/O run (seed 003 §3.3: the only request
// dependency Fstress keeps): a file by popularity, a length in ops from the
// run-length distribution (a sample ≤ 0 means "to the end of the file"), and
// a start offset: 0 (sequential), the end of the file (append: writes
// extend it), or a random offset aligned to the mean I/O size (random).
func (r *runner) newRun(run *seqRun, length dist.Dist, access workload.Access, iosize dist.Dist) {
	f := r.pickFile()
	*run = seqRun{file: f, left: -1}
	if f < 0 {
		return
	}
	if length != nil {
		if n := count(length.Sample(r.rng)); n > 0 {
			run.left = n
		}
	}
	size := r.fs.FileSize[f]
	run.stop = size
	switch access {
	case workload.AccessSequential:
	case workload.AccessAppend:
		run.off = size
		if run.left < 0 {
			run.left = 1
		}
	default:
		unit := uint64(clampSize(iosize.Mean(), 512, 1<<20))
		if size > unit {
			run.off = uint64(r.rng.Int63n(int64(size/unit))) * unit
		}
	}
}

// send issues call i, intended at t (ns from start).
func (r *runner) send(t int64) {
	measured := t >= r.warmNs
	if measured {
		r.intended++
	}
	op := r.sched.Next()
	n := len(r.free)
	if n == 0 {
		if !r.grow() {
			r.capHit = true
			r.skipped++
			return
		}
		n = len(r.free)
	}
	idx := r.free[n-1]
	s := r.slot(idx)
	s.op, s.intended = op, t
	if !r.build(s) {
		r.noTarget++
		r.skipped++
		return
	}
	r.free = r.free[:n-1]
	c := r.clients[r.rr]
	if r.rr++; r.rr == len(r.clients) {
		r.rr = 0
	}
	now := r.now()
	if measured {
		r.rec.SendLag(time.Duration(now - t))
		r.sent++
	}
	r.inFlight++
	if err := c.GoInfo(nfs3.Program, nfs3.Version, uint32(op), s.encode, s.done); err != nil {
		if r.sendErr == nil {
			r.sendErr = err
		}
		r.complete(&completion{slot: idx, kind: 2, at: now})
	}
}

// Run runs the measured interval against a prepared file set.
func Run(ctx context.Context, s *Session, fs *Fileset, cfg RunConfig) (*Outcome, error) {
	w := cfg.Workload
	if !(cfg.Rate > 0) {
		return nil, fmt.Errorf("rate must be > 0 ops/s (got %v)", cfg.Rate)
	}
	if cfg.Duration <= 0 {
		return nil, fmt.Errorf("duration must be > 0 (got %v)", cfg.Duration)
	}
	if cfg.LagBound <= 0 {
		cfg.LagBound = DefaultLagBound
	}
	pacer, err := pace.New(cfg.Rate, cfg.Poisson, cfg.Seed+1)
	if err != nil {
		return nil, err
	}
	attempts := time.Duration(s.Cfg.Retransmits + 1)
	if cfg.MaxOutstanding <= 0 {
		// enough for every call of one full timeout period at the offered rate
		m := cfg.Rate*(s.Cfg.Timeout*attempts).Seconds()*1.25 + 1024
		cfg.MaxOutstanding = int(math.Min(m, 1<<20))
	}
	r := &runner{cfg: cfg, s: s, fs: fs, w: w, clients: s.Clients,
		rng:   rand.New(rand.NewSource(cfg.Seed)),
		sched: workload.NewScheduler(w.Mix, cfg.Seed),
		rec:   results.NewRecorder(), minLat: math.MaxInt64}
	r.setupObjects()
	if err := r.setupPools(ctx); err != nil {
		return nil, err
	}
	// pre-allocate the slots one second of calls needs; more on demand
	for r.nslots < int(math.Min(cfg.Rate, float64(cfg.MaxOutstanding))) && r.grow() {
	}
	r.q = make([]completion, 0, 4096)
	r.back = make([]completion, 0, 4096)
	sl := newSleeper()
	defer sl.close()
	r.sl = sl
	r.nextDue.Store(math.MaxInt64)

	r.warmNs = int64(cfg.Warmup)
	r.endNs = int64(cfg.Warmup + cfg.Duration)
	now := time.Now()
	if !cfg.StartAt.IsZero() {
		if late := now.Sub(cfg.StartAt); late > 0 {
			if cfg.Log != nil {
				fmt.Fprintf(cfg.Log, "fstress: warning: --start-at is %.3fs in the past; starting now\n", late.Seconds())
			}
		} else {
			now = now.Add(-late) // monotonic reading of the start instant
		}
	}
	r.start = now
	for d := time.Until(r.start); d > 0 && ctx.Err() == nil; d = time.Until(r.start) {
		if d > 20*time.Millisecond {
			select {
			case <-time.After(d - 10*time.Millisecond):
			case <-ctx.Done():
			}
		} else {
			sl.arm(r.now(), d)
			sl.wait(ctx.Done())
		}
	}
	startWall := time.Now()
	cpu0 := cpuTime()
	steal := watchSteal(cfg.Warmup)

	// The metronome: send every due call, then park until the next one.
	var i int64
	next := int64(pacer.Next(0))
	for {
		t := r.now()
		r.drain()
		if ctx.Err() != nil {
			break
		}
		batch := 0
		for next <= t && next < r.endNs {
			r.send(next)
			i++
			next = int64(pacer.Next(i))
			if batch++; batch&1023 == 0 {
				r.drain()
				t = r.now()
			}
		}
		if t >= r.endNs {
			break // every call intended before the end has been sent
		}
		target := next
		if target > r.endNs {
			target = r.endNs
		}
		t = r.now()
		d := time.Duration(target - t)
		switch {
		case d <= 0:
			// behind schedule: loop at once
		case d > 2*time.Millisecond:
			// far away: a coarse Go sleep (ms resolution, no timer cost), then re-plan
			tm := time.NewTimer(d - 1500*time.Microsecond)
			select {
			case <-tm.C:
			case <-ctx.Done():
				tm.Stop()
			}
		default:
			// near: park until the timer (at most fineQuantum late of the
			// batch boundary) or a reply arriving once the send is due
			if d < fineQuantum {
				d = fineQuantum
			}
			// replies wake the metronome once a send is due, but at most
			// once per minBatch: at high rates every wake-up sends a batch
			due := target
			if lim := t + int64(minBatch); due < lim {
				due = lim
			}
			r.nextDue.Store(due)
			r.sl.arm(t, d)
			r.waiting.Store(true)
			if r.now() < target {
				r.sl.wait(ctx.Done())
			}
			r.waiting.Store(false)
		}
	}
	r.nextDue.Store(math.MaxInt64)
	stealPct, stealOK := steal.stop()
	// Calls still due but never sent (stopped by ctx) count as intended.
	// Drain: wait for the outstanding calls up to the RPC timeout.
	deadline := time.Now().Add(s.Cfg.Timeout*attempts + 500*time.Millisecond)
	for r.inFlight > 0 && time.Now().Before(deadline) {
		r.drain()
		if r.inFlight > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	r.drain()
	left := r.inFlight
	if left > 0 {
		r.countLeftovers()
	}
	out := &Outcome{Intended: r.intended, Sent: r.sent, Skipped: r.skipped, LeftOutstanding: left,
		WallSeconds: time.Since(startWall).Seconds(), CPUSeconds: cpuTime() - cpu0, MinLatency: r.minLat}

	mix := map[string]float64{}
	for _, m := range w.Mix {
		mix[m.Proc.String()] += m.Weight
	}
	host, _ := os.Hostname()
	pacing := "constant"
	if cfg.Poisson {
		pacing = "poisson"
	}
	res := r.rec.Result(results.Meta{Workload: w.Name, OfferedRate: cfg.Rate, DurationS: cfg.Duration.Seconds(),
		MixTarget: mix, StartUnixNs: startWall.Add(cfg.Warmup).UnixNano(), Host: host,
		Server: s.Cfg.Server, Export: s.Cfg.Export, Pacing: pacing, Conns: len(s.Clients), Seed: cfg.Seed,
		WarmupS: cfg.Warmup.Seconds()})
	if stealOK {
		res.HostStealPct = &stealPct
	}
	var reasons []string
	if float64(r.sent) < SentFraction*float64(r.intended) {
		reasons = append(reasons, fmt.Sprintf("sent %d of %d intended calls (%.2f%% < 99%%)", r.sent, r.intended, 100*float64(r.sent)/math.Max(1, float64(r.intended))))
	} else if res.AchievedRate < SentFraction*cfg.Rate && r.intended > 0 && float64(r.intended) >= SentFraction*cfg.Rate*cfg.Duration.Seconds() {
		// sends kept up but fewer calls finished than were due (should not
		// happen: every sent call ends as a reply, error or timeout)
		reasons = append(reasons, fmt.Sprintf("achieved %.1f ops/s < 99%% of offered %.1f", res.AchievedRate, cfg.Rate))
	}
	if lag := time.Duration(res.SendLagMs.P99 * 1e6); lag > cfg.LagBound {
		reason := fmt.Sprintf("send-lag p99 %.3f ms > bound %.3f ms", res.SendLagMs.P99, cfg.LagBound.Seconds()*1e3)
		if stealOK {
			reason += fmt.Sprintf(" (host steal %.2f %% of CPU time)", stealPct)
		}
		reasons = append(reasons, reason)
	}
	if r.capHit {
		reasons = append(reasons, fmt.Sprintf("outstanding-calls cap %d hit", cfg.MaxOutstanding))
	}
	if r.noTarget > 0 {
		// e.g. READLINK in the mix but no symlinks in the file set
		reasons = append(reasons, fmt.Sprintf("%d calls had no target object (empty object set or scratch pool) and were not sent", r.noTarget))
	}
	if r.sendErr != nil {
		reasons = append(reasons, "send error: "+oneLine(r.sendErr))
	}
	if len(reasons) > 0 {
		out.Saturated = true
		out.Reason = joinReasons(reasons)
	}
	res.GeneratorSaturated = out.Saturated
	res.SaturationReason = out.Reason
	out.Result = res
	return out, nil
}

func joinReasons(rs []string) string {
	s := rs[0]
	for _, x := range rs[1:] {
		s += "; " + x
	}
	return s
}

// countLeftovers records calls that never completed within the drain as
// timeouts (the RPC layer should have timed them out already).
func (r *runner) countLeftovers() {
	busy := make([]bool, r.nslots)
	for _, f := range r.free {
		busy[f] = true
	}
	for i := 0; i < r.nslots; i++ {
		if !busy[i] {
			s := r.slot(int32(i))
			if s.intended >= r.warmNs && s.intended < r.endNs {
				r.rec.Failed(s.op, "timeout", 0)
			}
		}
	}
}

// setupObjects fills the weighted object sets from the file set.
func (r *runner) setupObjects() {
	fs, w := r.fs, r.w
	prng := rand.New(rand.NewSource(LayoutSeed + 7))
	mk := func(n int, pop workload.Popularity) (*objset.Set, []int32) {
		set := objset.New(n)
		of := make([]int32, n)
		ws := pop.Weights(n, prng) // zipf: rank = creation order (seed 003 §3.1)
		for i := 0; i < n; i++ {
			id := set.Insert(ws[i])
			if id >= len(of) {
				of = append(of, make([]int32, id-len(of)+1)...)
			}
			of[id] = int32(i)
		}
		return set, of
	}
	r.files, r.fileOf = mk(len(fs.FileFH), w.FilePopularity)
	r.dirs, r.dirOf = mk(len(fs.DirFH), w.DirPopularity)
	r.links, r.linkOf = mk(len(fs.LinkFH), w.SymlinkPopularity)
	r.wr.file, r.rd.file = -1, -1
}

func cpuTime() float64 {
	return processCPU()
}

var _ = sort.Ints
var _ = strconv.Itoa
var _ = runtime.Gosched
