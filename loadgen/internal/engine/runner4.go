package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nfs4"
	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/xdr"
)

// The NFSv4.1 dispatch of a run. The request builders fill the call's
// NFSv3 form (s.req) as for NFSv3; request4 turns it into the COMPOUND the
// README's table gives (SEQUENCE first, then the operations), and the call
// goes out on a session slot. A call that finds every slot busy (or its
// connection being re-established) waits in the backlog, in order, and is
// sent as soon as a slot frees: the wait counts in its latency (it is
// measured from the intended time), not in the send lag.

// slot4 is the NFSv4.1 part of a call slot.
type slot4 struct {
	req    nfs4.Request
	encode func(*xdr.Encoder)
	done   func([]byte, rpc.CallInfo, error)
}

// run4 is the NFSv4.1 state of a run.
type run4 struct {
	sess    *Session
	v4      *nfs4.Session
	conns   []atomic.Pointer[rpc.Client] // replaced by watchConn after a reconnect
	rr      int
	sids    atomic.Pointer[[]nfs4.Stateid] // open stateid per file (zero: not open)
	backlog []int32                        // calls waiting for a slot or a connection (metronome only)
	lost    chan uint32                    // generations of sessions a reply found gone
	errs    map[uint32]uint64              // measured errors by status (metronome only)

	waiters                         atomic.Bool // the backlog is not empty
	holding                         atomic.Bool // session or files being recovered: calls wait
	slotWaits, reconnects, reopened atomic.Uint64
	needOpen                        bool // the mix READs or WRITEs: files are opened
	ctx                             context.Context
	cancel                          context.CancelFunc // ends the goroutines below
	wg                              sync.WaitGroup     // watchConn, recoverLoop
}

func newRun4(s *Session) *run4 {
	v := &run4{sess: s, v4: s.V4, conns: make([]atomic.Pointer[rpc.Client], len(s.Clients)),
		lost: make(chan uint32, 1), errs: map[uint32]uint64{}}
	v.ctx, v.cancel = context.WithCancel(context.Background())
	for i := range s.Clients {
		v.conns[i].Store(s.client(i))
	}
	empty := []nfs4.Stateid{}
	v.sids.Store(&empty)
	return v
}

// readdirAttrs: READDIR asks the file id only (v3 READDIR's entry), READDIRPLUS DefaultAttrs.
var readdirAttrs = nfs4.MakeBitmap(nfs4.AttrFileID)

// request4 fills q with the COMPOUND of the call whose NFSv3 form is s.req.
func (v *run4) request4(s *slot, q *nfs4.Request) {
	a := &s.req
	*q = nfs4.Request{FH: nfs4.FH(a.FH), Name: a.Name}
	switch s.op {
	case nfs3.ProcNull:
		q.Op = nfs4.OpNull
	case nfs3.ProcGetattr:
		q.Op = nfs4.OpGetattr
	case nfs3.ProcSetattr:
		q.Op, q.Mode = nfs4.OpSetattr, a.Mode
	case nfs3.ProcLookup:
		q.Op = nfs4.OpLookup
	case nfs3.ProcAccess:
		q.Op, q.Access = nfs4.OpAccess, a.Access
	case nfs3.ProcReadlink:
		q.Op = nfs4.OpReadlink
	case nfs3.ProcRead:
		q.Op, q.Stateid, q.Offset, q.Count = nfs4.OpRead, v.stateid(s.file), a.Offset, a.Count
	case nfs3.ProcWrite:
		q.Op, q.Stateid, q.Offset, q.Stable = nfs4.OpWrite, v.stateid(s.file), a.Offset, nfs4.Unstable
		q.Count, q.Data, q.Content = a.Count, a.Data, a.Content
	case nfs3.ProcCommit:
		q.Op = nfs4.OpCommit
	default:
		request4ns(s.op, a, q)
	}
}

// request4ns is request4 for the name-space and file-system procedures.
func request4ns(op nfs3.Proc, a *nfs3.Request, q *nfs4.Request) {
	switch op {
	case nfs3.ProcCreate:
		q.Op, q.Create, q.Mode, q.SetSize = nfs4.OpOpenClose, true, a.Mode, a.SetSize
	case nfs3.ProcMkdir:
		q.Op, q.Mode = nfs4.OpMkdir, a.Mode
	case nfs3.ProcSymlink:
		q.Op, q.Mode, q.Target = nfs4.OpSymlink, a.Mode, a.Target
	case nfs3.ProcRemove, nfs3.ProcRmdir:
		q.Op = nfs4.OpRemove
	case nfs3.ProcRename:
		q.Op, q.ToFH, q.ToName = nfs4.OpRename, nfs4.FH(a.ToFH), a.ToName
	case nfs3.ProcLink:
		q.Op, q.ToFH, q.ToName = nfs4.OpLink, nfs4.FH(a.ToFH), a.ToName
	case nfs3.ProcReaddir:
		q.Op, q.DirCount, q.MaxCount, q.Attrs = nfs4.OpReaddir, a.Count, a.MaxCount, readdirAttrs
	case nfs3.ProcReaddirplus:
		q.Op, q.DirCount, q.MaxCount = nfs4.OpReaddir, a.Count, a.MaxCount
	case nfs3.ProcFsstat:
		q.Op, q.Attrs = nfs4.OpGetattr, fsstatAttrs
	case nfs3.ProcFsinfo:
		q.Op, q.Attrs = nfs4.OpGetattr, fsinfoAttrs
	default: // PATHCONF (MKNOD has no builder: never sent)
		q.Op, q.Attrs = nfs4.OpGetattr, pathconfAttrs
	}
}

// The GETATTRs that stand for FSSTAT, FSINFO and PATHCONF (RFC 8881 §5.6,
// §5.7 attribute numbers).
var (
	fsstatAttrs   = nfs4.MakeBitmap(21, 22, 23, 42, 43, 44) // files_avail/free/total, space_avail/free/total
	fsinfoAttrs   = nfs4.MakeBitmap(nfs4.AttrMaxFileSize, nfs4.AttrMaxRead, nfs4.AttrMaxWrite, 51)
	pathconfAttrs = nfs4.MakeBitmap(28, 29, 34, 18, 16, 17) // maxlink, maxname, no_trunc, chown_restricted, case_*
)

// stateid is file f's open stateid (the anonymous stateid when not open).
func (v *run4) stateid(f int32) nfs4.Stateid {
	sids := *v.sids.Load()
	if f >= 0 && int(f) < len(sids) {
		return sids[f]
	}
	return nfs4.Stateid{}
}

// send4 sends the call of slot s (built, counted in flight), or puts it in
// the backlog when a call waits already or no slot or connection is free.
func (r *runner) send4(s *slot) {
	v := r.v4
	v.request4(s, &s.v4.req)
	if len(v.backlog) > 0 || !r.dispatch4(s) {
		v.backlog = append(v.backlog, s.idx)
		v.slotWaits.Add(1)
		v.waiters.Store(true)
	}
}

// dispatch4 takes a session slot and sends; false when none is free or
// the connection is being re-established (nothing was sent).
func (r *runner) dispatch4(s *slot) bool {
	v := r.v4
	if v.holding.Load() {
		return false
	}
	c := v.conns[v.rr].Load()
	select {
	case <-c.Done(): // being re-established (watchConn): try the next one next time
		if v.rr++; v.rr == len(v.conns) {
			v.rr = 0
		}
		return false
	default:
	}
	q := &s.v4.req
	if q.Op == nfs4.OpRead || q.Op == nfs4.OpWrite {
		q.Stateid = v.stateid(s.file) // re-opened files have new stateids
	}
	if q.Op != nfs4.OpNull && !v.v4.Begin(q) {
		return false
	}
	if v.rr++; v.rr == len(v.conns) {
		v.rr = 0
	}
	if err := c.GoQueued(nfs4.Program, nfs4.Version, q.Proc(), s.v4.encode, s.v4.done); err != nil {
		if q.Op != nfs4.OpNull {
			v.v4.End(q, &nfs4.Reply{}) // not sent: the slot's sequence id stays
		}
		return false
	}
	return true
}

// flush4 sends the backlog's calls, in order, while slots are free.
func (r *runner) flush4() {
	v := r.v4
	n := 0
	for n < len(v.backlog) && r.dispatch4(r.slot(v.backlog[n])) {
		n++
	}
	if n > 0 {
		v.backlog = v.backlog[:copy(v.backlog, v.backlog[n:])]
		v.waiters.Store(len(v.backlog) > 0)
	}
}

// onDone4 is onDone for NFSv4.1 (on an RPC reader goroutine): it ends the
// call's session slot from the reply's SEQUENCE and reports a lost session.
func (s *slot) onDone4(body []byte, info rpc.CallInfo, err error) {
	r := s.r
	q := &s.v4.req
	c := completion{slot: s.idx, retrans: int32(info.Retransmits), at: r.now()}
	lost := false
	switch {
	case err == nil && q.Op == nfs4.OpNull:
	case err == nil:
		if p, ok := nfs4.PeekReply(body); ok {
			c.status = p.Status
			rep := p.Reply()
			lost = r.v4.v4.End(q, &rep)
		} else {
			c.kind = completedError
			r.v4.v4.End(q, nil)
		}
	default:
		c.kind = completedError
		if errors.Is(err, rpc.ErrTimeout) {
			c.kind = completedTimeout
		}
		if q.Op != nfs4.OpNull {
			if re := (*rpc.RPCError)(nil); errors.As(err, &re) {
				r.v4.v4.End(q, &nfs4.Reply{})
			} else {
				r.v4.v4.End(q, nil)
			}
		}
	}
	if lost {
		r.v4.holding.Store(true) // until recoverLoop has a session again
		select {
		case r.v4.lost <- q.Seq.Gen:
		default:
		}
	}
	r.mu.Lock()
	r.q = append(r.q, c)
	r.mu.Unlock()
	r.qn.Add(1)
	if (c.at >= r.nextDue.Load() || r.v4.waiters.Load()) && r.waiting.Load() {
		r.sl.notify() // a send is due, or a waiting call may have its slot now
	}
}

// stats4 fills the result's NFSv4.1 fields.
func (r *runner) stats4(res *results.Result) {
	v := r.v4
	res.NFS4 = &results.NFS4Stats{SessionsRecreated: v.v4.Recreated(), SeqMisordered: v.v4.Misordered(),
		SlotWaits: v.slotWaits.Load(), Reconnects: v.reconnects.Load(), Reopened: v.reopened.Load(), Slots: v.v4.Slots()}
	for st, n := range v.errs {
		if res.ErrorStatuses == nil {
			res.ErrorStatuses = map[string]uint64{}
		}
		res.ErrorStatuses[nfs4.StatusString(st)] += n
	}
}
