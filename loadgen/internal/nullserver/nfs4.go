package nullserver

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"workbench/loadgen/internal/nfs4"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/xdr"
)

// NFSv4.1: COMPOUNDs of the operations fstress uses (nfs4 package doc)
// get canned results — handles derived from the parent handle and name
// (with the object type in them), OPEN stateids derived from the handle,
// zero-filled READ data, three-entry directories — while EXCHANGE_ID,
// CREATE_SESSION, SEQUENCE, DESTROY_SESSION and DESTROY_CLIENTID keep
// real state: client ids, sessions and one sequence id per slot, so a
// client's slot table and session recovery are exercised. Other operations
// get NFS4ERR_OP_ILLEGAL; a minor version other than 1
// NFS4ERR_MINOR_VERS_MISMATCH.

// RootFH4 is the handle of the NFSv4 root (PUTROOTFH).
var RootFH4 = nfs4.FH("fstress-nullserver-v4-root!!")

// DefaultSlots4 is the fore channel slot count granted when
// Server.Slots4 is 0 (and the client asks for more).
const DefaultSlots4 = 64

type v4Session struct {
	id     [nfs4.SessionIDSize]byte
	client uint64
	dead   atomic.Bool
	mu     sync.Mutex
	slots  []uint32 // last sequence id executed per slot
}

type v4Client struct{ seq uint32 } // csa_sequence expected next

// v4State is the server-wide NFSv4.1 state; the zero value is ready.
type v4State struct {
	mu       sync.Mutex
	nextID   uint64
	clients  map[uint64]*v4Client
	sessions map[[nfs4.SessionIDSize]byte]*v4Session
}

// ForgetSessions drops every NFSv4.1 session (client ids stay), as a
// server restart that lost them would: the next SEQUENCE on each gets
// NFS4ERR_BADSESSION.
func (s *Server) ForgetSessions() {
	s.v4.mu.Lock()
	defer s.v4.mu.Unlock()
	s.v4.forgetSessions()
}

// ForgetClients drops every client id and session at once (one lock
// held): CREATE_SESSION then gets NFS4ERR_STALE_CLIENTID. In two steps, a
// client could re-create its session on its old client id in between.
func (s *Server) ForgetClients() {
	s.v4.mu.Lock()
	defer s.v4.mu.Unlock()
	s.v4.forgetSessions()
	clear(s.v4.clients)
}

// forgetSessions marks every session dead and drops it (mu held).
func (v *v4State) forgetSessions() {
	for id, ss := range v.sessions {
		ss.dead.Store(true)
		delete(v.sessions, id)
	}
}

// State4 returns the numbers of NFSv4.1 client ids and sessions held.
func (s *Server) State4() (clients, sessions int) {
	s.v4.mu.Lock()
	defer s.v4.mu.Unlock()
	return len(s.v4.clients), len(s.v4.sessions)
}

// conn4 is the per-connection NFSv4 scratch state.
type conn4 struct {
	args    nfs4.OpArgs
	rep     nfs4.Reply
	cur     []byte // current filehandle (aliases curBuf), nil when none
	saved   []byte
	curBuf  [nfs4.FHSize]byte
	saveBuf [nfs4.FHSize]byte
	sess    *v4Session // session of the last SEQUENCE (cache)
	ents    [3]nfs4.Entry
}

func (s *Server) nfs4(st *connState, e *xdr.Encoder, xid, proc uint32, args []byte) {
	switch proc {
	case nfs4.ProcNull:
		endReply(e, beginReply(e, xid, rpc.Success))
		return
	case nfs4.ProcCompound:
	default:
		endReply(e, beginReply(e, xid, rpc.ProcUnavail))
		return
	}
	var d xdr.Decoder
	d.Reset(args)
	tag, minor, nops := nfs4.DecodeCompoundHeader(&d)
	if d.Err() != nil {
		endReply(e, beginReply(e, xid, rpc.GarbageArgs))
		return
	}
	start := beginReply(e, xid, rpc.Success)
	at := nfs4.BeginCompoundReply(e, tag)
	c := &st.v4
	c.cur, c.saved = nil, nil
	status, n := uint32(nfs4.NFS4ERR_MINOR_VERS_MISMATCH), 0
	if minor == nfs4.MinorVersion {
		status, n = s.compound(c, e, &d, int(nops))
	}
	if d.Err() != nil { // undecodable arguments: drop what was written
		e.SetBytes(e.Bytes()[:start])
		endReply(e, beginReply(e, xid, rpc.GarbageArgs))
		return
	}
	nfs4.EndCompoundReply(e, at, status, n)
	endReply(e, start)
}

// compound runs the nops operations of d, appending their results; it
// returns the COMPOUND status and the number of results.
func (s *Server) compound(c *conn4, e *xdr.Encoder, d *xdr.Decoder, nops int) (uint32, int) {
	for i := 0; i < nops; i++ {
		a := &c.args
		if !nfs4.DecodeOpArgs(d, a) {
			nfs4.EncodeResult(e, nfs4.OPILLEGAL, nfs4.NFS4ERR_OP_ILLEGAL, &c.rep)
			return nfs4.NFS4ERR_OP_ILLEGAL, i + 1
		}
		if d.Err() != nil {
			return 0, 0
		}
		c.rep = nfs4.Reply{}
		var st uint32
		switch {
		case i == 0 && a.Op == nfs4.OPSEQUENCE:
			st = s.sequence(c, a)
		case a.Op == nfs4.OPSEQUENCE:
			st = nfs4.NFS4ERR_SEQUENCE_POS
		case i == 0 && !sessionless(a.Op):
			st = nfs4.NFS4ERR_OP_NOT_IN_SESSION
		case sessionless(a.Op) && nops != 1:
			st = nfs4.NFS4ERR_NOT_ONLY_OP
		default:
			st = s.op(c, a)
		}
		nfs4.EncodeResult(e, a.Op, st, &c.rep)
		if st != nfs4.NFS4_OK {
			return st, i + 1
		}
	}
	return nfs4.NFS4_OK, nops
}

// sessionless: the operations that may (and here must) be alone in a
// COMPOUND without SEQUENCE.
func sessionless(op nfs4.Opnum) bool {
	switch op {
	case nfs4.OPEXCHANGE_ID, nfs4.OPCREATE_SESSION, nfs4.OPDESTROY_SESSION, nfs4.OPDESTROY_CLIENTID:
		return true
	}
	return false
}

// sequence checks a SEQUENCE against the session's slot: a sequence id one
// past the slot's last is executed; any other (a replay included: this
// server caches no replies) is NFS4ERR_SEQ_MISORDERED.
func (s *Server) sequence(c *conn4, a *nfs4.OpArgs) uint32 {
	ss := c.sess
	if ss == nil || ss.dead.Load() || ss.id != a.Seq.SessionID {
		s.v4.mu.Lock()
		ss = s.v4.sessions[a.Seq.SessionID]
		s.v4.mu.Unlock()
		if ss == nil {
			return nfs4.NFS4ERR_BADSESSION
		}
		c.sess = ss
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	n := uint32(len(ss.slots))
	if a.Seq.Slot >= n {
		return nfs4.NFS4ERR_BADSLOT
	}
	if a.Seq.SeqID != ss.slots[a.Seq.Slot]+1 {
		return nfs4.NFS4ERR_SEQ_MISORDERED
	}
	ss.slots[a.Seq.Slot] = a.Seq.SeqID
	c.rep.Seq = nfs4.SeqRes{SessionID: ss.id, SeqID: a.Seq.SeqID, Slot: a.Seq.Slot,
		HighestSlot: n - 1, TargetHighestSlot: n - 1}
	return nfs4.NFS4_OK
}

// handle4 derives a fake handle of type typ from a directory handle and a
// name: "null4fh" + type + FNV-1a hash.
func (c *conn4) handle4(dir []byte, name []byte, typ byte) []byte {
	h := uint64(14695981039346656037)
	for _, b := range dir {
		h = (h ^ uint64(b)) * 1099511628211
	}
	for _, b := range name {
		h = (h ^ uint64(b)) * 1099511628211
	}
	var fh [16]byte
	copy(fh[:7], "null4fh")
	fh[7] = typ
	binary.BigEndian.PutUint64(fh[8:], h)
	c.cur = c.curBuf[:16]
	copy(c.cur, fh[:])
	return c.cur
}

// typeOf is the object type a handle stands for.
func typeOf(fh []byte) uint32 {
	if len(fh) == 16 && string(fh[:7]) == "null4fh" && fh[7] >= nfs4.NF4REG && fh[7] <= nfs4.NF4FIFO {
		return uint32(fh[7])
	}
	return nfs4.NF4DIR // the root and handles of unknown form
}
