package nfs4

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"workbench/loadgen/internal/rpc"
)

// Options configure a Session. Zero fields take the defaults.
type Options struct {
	Owner           string        // client owner id (default "fstress/<host>/<pid>/<random>")
	Slots           uint32        // fore channel ca_maxrequests asked (default 64, at most MaxSlots)
	MaxRequestSize  uint32        // default 1 MiB + 64 KiB
	MaxResponseSize uint32        // default 1 MiB + 64 KiB
	MaxOperations   uint32        // default MaxPath + 8
	Lease           time.Duration // lease KeepAlive keeps (0: the server's lease_time, else 60 s)
}

func (o *Options) fill() {
	if o.Owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		rand.Read(b[:])
		o.Owner = fmt.Sprintf("fstress/%s/%d/%x", host, os.Getpid(), b)
	}
	if o.Slots == 0 {
		o.Slots = 64
	}
	o.Slots = min(o.Slots, MaxSlots)
	if o.MaxRequestSize == 0 {
		o.MaxRequestSize = 1<<20 + 64<<10
	}
	if o.MaxResponseSize == 0 {
		o.MaxResponseSize = 1<<20 + 64<<10
	}
	if o.MaxOperations == 0 {
		o.MaxOperations = MaxPath + 8
	}
}

// Session is an NFSv4.1 client session on an rpc.Client: a client id, a
// session with its fore channel (no back channel; no delegations are
// wanted), and the slot table. Begin and End are safe for concurrent use.
type Session struct {
	c   *rpc.Client
	opt Options

	recoverMu sync.Mutex // serialises Recover and Close

	mu        sync.Mutex
	clientID  uint64
	csSeq     uint32 // csa_sequence of the next CREATE_SESSION
	verifier  [VerifierSize]byte
	sessionID [SessionIDSize]byte
	gen       uint32
	fore      ChannelAttrs
	slots     slotTable
	exch      ExchangeIDRes
	owner     []byte // open-owner
	lease     time.Duration
	closed    bool

	recreated  atomic.Uint64
	misordered atomic.Uint64
	lastSeq    atomic.Int64 // UnixNano of the last SEQUENCE sent
}

// NewSession sets up a session on c: EXCHANGE_ID, CREATE_SESSION (the
// server's answer sizes the slot table), RECLAIM_COMPLETE, and a GETATTR
// of the root's lease_time for KeepAlive.
func NewSession(ctx context.Context, c *rpc.Client, opt Options) (*Session, error) {
	opt.fill()
	s := &Session{c: c, opt: opt, lease: 60 * time.Second}
	s.owner = []byte("open/" + opt.Owner)
	rand.Read(s.verifier[:])
	if err := s.exchangeID(ctx); err != nil {
		return nil, err
	}
	if err := s.createSession(ctx); err != nil {
		return nil, err
	}
	if err := s.reclaimComplete(ctx); err != nil {
		return nil, err
	}
	r, err := s.Call(ctx, &Request{Op: OpLookupPath, Attrs: MakeBitmap(AttrLeaseTime)})
	if err == nil && r.Status == NFS4_OK && r.Attr.Mask.Has(AttrLeaseTime) && r.Attr.LeaseTime > 0 {
		s.lease = time.Duration(r.Attr.LeaseTime) * time.Second
	}
	if opt.Lease > 0 {
		s.lease = opt.Lease
	}
	return s, nil
}

// single sends a COMPOUND without SEQUENCE (the session operations).
func (s *Session) single(ctx context.Context, q *Request) (*Reply, error) {
	body, err := s.Client().CallContext(ctx, Program, Version, ProcCompound, q.Encode)
	if err != nil {
		return nil, fmt.Errorf("nfs4 %s: %w", q.Op, err)
	}
	r := new(Reply)
	if err := DecodeReplyInto(body, r); err != nil {
		return nil, fmt.Errorf("nfs4 %s: %w", q.Op, err)
	}
	return r, nil
}

func (s *Session) exchangeID(ctx context.Context) error {
	r, err := s.single(ctx, &Request{Op: OpExchangeID, Verifier: s.verifier, Owner: []byte(s.opt.Owner)})
	if err != nil {
		return err
	}
	if err := r.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.exch = r.ExchangeID
	s.clientID = r.ExchangeID.ClientID
	s.csSeq = r.ExchangeID.SeqID
	s.mu.Unlock()
	return nil
}

// createSession asks for a session of the client id and installs it with
// a new slot table and generation.
func (s *Session) createSession(ctx context.Context) error {
	s.mu.Lock()
	q := &Request{Op: OpCreateSession, ClientID: s.clientID, CSSeq: s.csSeq, Fore: ChannelAttrs{
		MaxRequestSize: s.opt.MaxRequestSize, MaxResponseSize: s.opt.MaxResponseSize,
		MaxOperations: s.opt.MaxOperations, MaxRequests: s.opt.Slots}}
	s.mu.Unlock()
	r, err := s.single(ctx, q)
	if err != nil {
		return err
	}
	if err := r.Err(); err != nil {
		return err
	}
	cs := &r.CreateSession
	s.mu.Lock()
	s.csSeq++
	s.sessionID = cs.SessionID
	s.fore = cs.Fore
	s.slots = newSlotTable(int(min(cs.Fore.MaxRequests, s.opt.Slots)))
	s.gen++
	s.mu.Unlock()
	return nil
}

func (s *Session) reclaimComplete(ctx context.Context) error {
	r, err := s.Call(ctx, &Request{Op: OpReclaimComplete})
	if err != nil {
		return err
	}
	if r.Status != NFS4_OK && r.Status != NFS4ERR_COMPLETE_ALREADY {
		return r.Err()
	}
	return nil
}

// ErrClosed: the Session was closed.
var ErrClosed = errors.New("nfs4: session closed")

// Begin takes a free slot for q and fills q.Seq (and, for the kinds that
// need them, q.ClientID and an empty q.Owner); false when every usable
// slot is busy or the session is closed (Closed). Every Begin that
// returned true needs exactly one End.
func (s *Session) Begin(q *Request) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	i := s.slots.alloc()
	if i < 0 {
		s.mu.Unlock()
		return false
	}
	q.Seq = SeqArgs{SessionID: s.sessionID, SeqID: s.slots.seq[i], Slot: uint32(i),
		HighestSlot: uint32(max(s.slots.highest, 0)), Gen: s.gen}
	q.ClientID = s.clientID
	if (q.Op == OpOpen || q.Op == OpOpenClose) && q.Owner == nil {
		q.Owner = s.owner
	}
	s.mu.Unlock()
	s.lastSeq.Store(time.Now().UnixNano())
	return true
}

// End releases the slot q got from Begin. r is its decoded reply, or nil
// when no reply came (timeout, lost connection, undecodable reply): the
// slot's state is then uncertain (see slotTable). An RPC-level error reply
// (e.g. GARBAGE_ARGS) is passed as a non-nil zero Reply. End reports
// whether the session is gone (NFS4ERR_BADSESSION or
// NFS4ERR_DEADSESSION on the current session): the caller should then call
// Recover(q.Seq.Gen), outside any rpc callback.
func (s *Session) End(q *Request, r *Reply) (lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.Seq.Gen != s.gen || s.closed {
		return false // a slot of an earlier session: its table is gone
	}
	i := int(q.Seq.Slot)
	if i >= len(s.slots.seq) {
		return false
	}
	executed := r != nil && r.HasSeq && r.SeqStatus == NFS4_OK
	misordered := r != nil && r.HasSeq && r.SeqStatus == NFS4ERR_SEQ_MISORDERED
	if misordered {
		s.misordered.Add(1)
	}
	s.slots.done(i, executed, r == nil, misordered)
	if executed {
		s.slots.setTarget(r.Seq.TargetHighestSlot)
	}
	return r != nil && r.HasSeq && (r.SeqStatus == NFS4ERR_BADSESSION || r.SeqStatus == NFS4ERR_DEADSESSION)
}

// Recover re-creates the session after NFS4ERR_BADSESSION seen on
// generation gen (a no-op when a newer session exists already): a new
// CREATE_SESSION, or EXCHANGE_ID first when the client id is stale too
// (then RECLAIM_COMPLETE again). Each re-creation is counted (Recreated).
func (s *Session) Recover(ctx context.Context, gen uint32) error {
	s.recoverMu.Lock()
	defer s.recoverMu.Unlock()
	s.mu.Lock()
	cur, closed := s.gen, s.closed
	s.mu.Unlock()
	if cur != gen || closed {
		return nil
	}
	err := s.createSession(ctx)
	var se *StatusError
	if errors.As(err, &se) && (se.Status == NFS4ERR_STALE_CLIENTID || se.Status == NFS4ERR_EXPIRED) {
		if err = s.exchangeID(ctx); err == nil {
			if err = s.createSession(ctx); err == nil {
				err = s.reclaimComplete(ctx)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("nfs4: re-creating the session: %w", err)
	}
	s.recreated.Add(1)
	return nil
}

// Accessors for the probe and the result.
func (s *Session) Client() *rpc.Client { s.mu.Lock(); defer s.mu.Unlock(); return s.c }

// Fore returns the fore channel attributes the server granted.
func (s *Session) Fore() ChannelAttrs { s.mu.Lock(); defer s.mu.Unlock(); return s.fore }

// Slots returns the size of the slot table.
func (s *Session) Slots() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.slots.seq) }

// ExchangeID returns the server's EXCHANGE_ID answer (owner, scope, implementation).
func (s *Session) ExchangeID() ExchangeIDRes { s.mu.Lock(); defer s.mu.Unlock(); return s.exch }

// ClientID returns the current client id.
func (s *Session) ClientID() uint64 { s.mu.Lock(); defer s.mu.Unlock(); return s.clientID }

// SessionID returns the current session id and its generation.
func (s *Session) SessionID() ([SessionIDSize]byte, uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID, s.gen
}

// Closed reports whether Close was called.
func (s *Session) Closed() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.closed }

// Recreated counts sessions re-created after NFS4ERR_BADSESSION.
func (s *Session) Recreated() uint64 { return s.recreated.Load() }

// Misordered counts replies with NFS4ERR_SEQ_MISORDERED.
func (s *Session) Misordered() uint64 { return s.misordered.Load() }

// Lease returns the server's lease time (60 s when it did not say).
func (s *Session) Lease() time.Duration { return s.lease }
