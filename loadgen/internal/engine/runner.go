package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	"workbench/loadgen/internal/content"
	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/objset"
	"workbench/loadgen/internal/pace"
	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/workload"
	"workbench/loadgen/internal/xdr"
)

// completion kinds
const (
	completedReply   = 0 // the server answered (any NFS status)
	completedTimeout = 1 // no answer after every retransmit
	completedError   = 2 // transport or send error
)

// completion is a finished call as the RPC reader goroutine saw it; the
// metronome goroutine applies it (runner.drain).
type completion struct {
	slot    int32
	retrans int32
	status  uint32
	kind    uint8 // completedReply, completedTimeout or completedError
	at      int64 // ns from the start
}

// slot is one call in flight: its arguments, its intended send time and
// what its completion changes (file size, scratch pool entries).
type slot struct {
	r        *runner
	idx      int32
	op       nfs3.Proc
	intended int64 // intended send time, ns from the start
	file     int32 // file index (READ/WRITE side effects)
	pool     int32 // pool entry (CREATE/REMOVE/...)
	pool2    int32 // second pool entry (RENAME)
	iv       int32 // time-series slot of intended (−1: none)
	end      uint64
	req      nfs3.Request
	encode   func(*xdr.Encoder)
	done     func([]byte, rpc.CallInfo, error)
	v4       *slot4 // NFSv4.1 runs only
}

// seqRun is a sequential READ or WRITE series (see startSeqRun).
type seqRun struct {
	file int32
	off  uint64
	stop uint64 // file size when the run began ("whole" runs end there)
	left int    // ops left in the run; -1: until the end of the file
}

// runner is the state of one Run: the configuration, the targets, the call
// slots, the completion queue and the counters of the measured interval.
// Everything but the completion queue and the wake-up flags is touched by
// the metronome goroutine only.
type runner struct {
	cfg   RunConfig
	s     *Session
	fs    *Fileset
	w     *workload.Workload
	rec   *results.Recorder
	ser   *results.SeriesRecorder
	pacer pace.Pacer

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
	warmNs   int64 // start of the measured interval, ns from the start
	endNs    int64 // its end
	inFlight int

	intended, sent, skipped, noTarget int64
	firstCalls                        []string // the first FirstCallsKept calls sent: what this client's op stream is
	capHit                            bool
	minLat                            time.Duration
	sl                                *sleeper
	nextDue                           atomic.Int64 // intended time of the next send (ns), for reply wake-ups
	waiting                           atomic.Bool  // the metronome is parked
	sendErr                           error
	v4                                *run4           // NFSv4.1 runs only
	shard, nshards                    int             // this runner is shard `shard` of `nshards` (shards.go)
	polled, polledRun                 bool            // replies are read by the metronome (poll.go); were, in this run
	lastYield                         int64           // polled: when the metronome last yielded its P (ns from the start)
	sharedP                           bool            // polled: fewer Ps than shards (yield every yieldSharedEvery)
	handedOff                         bool            // polled: a flush left calls to a writer goroutine (yield at once)
	lastWake                          int64           // when the metronome's current pass began (ns from the start)
	lagPend                           [lagBatch]int64 // intended times of queued calls whose send lag is not recorded yet (lagLater)
	nLag                              int
	lv                                liveRec         // counts for the live view (live.go)
	data                              *content.Source // what WRITEs carry (package content)
	gen                               uint64          // the last WRITE's generation: a per-runner stream in the high 32 bits, a count below
}

// now is the time since the common start, ns.
func (r *runner) now() int64 { return int64(time.Since(r.start)) }

// onDone runs on an RPC reader goroutine: timestamp, status, queue; it wakes
// the parked metronome when a send is due.
func (s *slot) onDone(body []byte, info rpc.CallInfo, err error) {
	r := s.r
	c := completion{slot: s.idx, retrans: int32(info.Retransmits)}
	if info.Arrived.IsZero() {
		c.at = r.now()
	} else { // polled: the kernel's receive time (never before the intended send)
		c.at = max(int64(info.Arrived.Sub(r.start)), s.intended)
	}
	switch {
	case err == nil:
		if s.op != nfs3.ProcNull && len(body) >= 4 {
			c.status = binary.BigEndian.Uint32(body)
		}
	case errors.Is(err, rpc.ErrTimeout):
		c.kind = completedTimeout
	default:
		c.kind = completedError
	}
	if !info.Arrived.IsZero() { // a reply read by Poll, on the metronome goroutine: apply it now
		r.complete(&c)
		return
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
		if r.v4 != nil {
			s4 := &slot4{}
			s4.encode, s4.done = s4.req.Encode, sl.onDone4
			sl.v4 = s4
		}
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

// complete records a completion (when its call was intended inside the
// measured interval), applies its side effect and frees its slot.
// Latency = completion time − intended send time.
func (r *runner) complete(c *completion) {
	s := r.slot(c.slot)
	if s.intended >= r.warmNs && s.intended < r.endNs {
		switch c.kind {
		case completedReply:
			if l := time.Duration(c.at - s.intended); l < r.minLat {
				r.minLat = l
			}
			r.rec.Done(s.op, time.Duration(c.at-s.intended), c.status, int(c.retrans))
			if c.status != 0 && r.v4 != nil {
				r.v4.errs[c.status]++
			}
		case completedTimeout:
			r.rec.Failed(s.op, "timeout", int(c.retrans))
		default:
			r.rec.Failed(s.op, "error", int(c.retrans))
		}
	}
	r.seriesComplete(s, c)
	r.lv.done[c.kind]++
	ok := c.kind == completedReply && c.status == nfsOK
	if c.kind == completedReply && !ok {
		r.lv.nfsErr++
	}
	r.sideEffect(s, ok)
	r.inFlight--
	s.req.FH, s.req.ToFH = nil, nil
	r.free = append(r.free, s.idx)
}

// seriesComplete records a completion in the time series: in the slot of
// its intended time (latency as in complete) and by its arrival time.
func (r *runner) seriesComplete(s *slot, c *completion) {
	switch c.kind {
	case completedReply:
		r.ser.Done(s.iv, s.op, time.Duration(c.at-s.intended), c.status, int(c.retrans))
	case completedTimeout:
		r.ser.Failed(s.iv, s.op, true, int(c.retrans))
	default:
		r.ser.Failed(s.iv, s.op, false, int(c.retrans))
	}
	r.ser.Arrived(c.at, int(c.kind))
}

// sideEffect applies what a finished call changed: an extending WRITE grows
// the file's size; name-space ops move their scratch names (pool.finish).
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

// FirstCallsKept is how many of a run's first calls its result names (first_calls).
const FirstCallsKept = 8

// describeCall is "PROC fh:<last 8 bytes of the handle, hex>[/name]": enough to tell two clients'
// op streams apart (same seed → same calls to the same files).
func describeCall(q *nfs3.Request) string {
	fh := q.FH
	if len(fh) > 8 {
		fh = fh[len(fh)-8:]
	}
	out := fmt.Sprintf("%s fh:%x", q.Proc, []byte(fh))
	if q.Name != "" {
		out += "/" + q.Name
	}
	return out
}

// send issues the next call of the schedule, intended at t (ns from the
// start). A call with no free slot (cap hit) or no target is skipped.
func (r *runner) send(t int64) {
	measured := t >= r.warmNs
	if measured {
		r.intended++
	}
	op := r.nextOp()
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
	s.op, s.intended, s.iv = op, t, -1
	if !r.build(s) {
		r.noTarget++
		r.skipped++
		return
	}
	r.free = r.free[:n-1]
	if len(r.firstCalls) < FirstCallsKept {
		r.firstCalls = append(r.firstCalls, describeCall(&s.req))
	}
	if measured {
		r.lagLater(t)
		r.sent++
	}
	s.iv = r.ser.Slot(t)
	r.ser.Sent(s.iv, op)
	r.inFlight++
	if r.v4 != nil {
		r.send4(s)
		return
	}
	c := r.clients[r.rr]
	if r.rr++; r.rr == len(r.clients) {
		r.rr = 0
	}
	if err := c.GoQueued(nfs3.Program, nfs3.Version, uint32(op), s.encode, s.done); err != nil {
		if r.sendErr == nil {
			r.sendErr = err
		}
		r.complete(&completion{slot: idx, kind: completedError, at: r.now()})
	}
}

// lagBatch: the send lags of up to this many queued calls share one clock
// read (recordLags).
const lagBatch = 16

// lagLater keeps the intended time t of a call just queued; its send lag
// is recorded at the next clock read (recordLags), at most lagBatch
// calls later.
func (r *runner) lagLater(t int64) {
	r.lagPend[r.nLag] = t
	if r.nLag++; r.nLag == lagBatch {
		r.recordLags()
	}
}

// recordLags records the send lag of every call kept by lagLater as
// now − intended: now is read after they were all queued, so a lag is
// overstated by the queueing of at most lagBatch−1 later calls (well
// under a µs each), never understated.
func (r *runner) recordLags() {
	if r.nLag == 0 {
		return
	}
	now := r.now()
	for _, t := range r.lagPend[:r.nLag] {
		r.rec.SendLag(time.Duration(now - t))
	}
	if r.lv.pub != nil {
		r.lv.lags(r.lagPend[:r.nLag], now)
	}
	r.nLag = 0
}

// flushSends writes the calls queued since the last flush: one write
// system call per connection and wake-up (rpc.Client.GoQueued).
func (r *runner) flushSends() {
	if r.v4 != nil {
		for i := range r.v4.conns {
			r.noteFlush(r.v4.conns[i].Load().Flush())
		}
		return
	}
	for _, c := range r.clients {
		r.noteFlush(c.Flush())
		if r.polled && c.HandedOff() {
			r.handedOff = true
		}
	}
}

// noteFlush keeps the first write error as the run's send error (the calls
// of a failed connection complete as errors through their callbacks).
func (r *runner) noteFlush(err error) {
	if err != nil && r.sendErr == nil && !errors.Is(err, rpc.ErrClosed) {
		r.sendErr = err
	}
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
			r.seriesComplete(s, &completion{kind: completedTimeout, at: r.now()})
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
