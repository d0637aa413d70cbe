package nfs4

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"workbench/loadgen/internal/rpc"
)

// Bounds of the synchronous calls.
const (
	maxCallAttempts = 20                     // per Call: DELAY/GRACE retries and session re-creations
	maxBackoff      = time.Second            // longest wait between DELAY/GRACE retries
	slotWait        = 200 * time.Microsecond // poll period while every slot is busy
)

// Call sends q synchronously on the session's client and decodes its
// reply: it waits (bounded by ctx) for a free slot, retries after
// NFS4ERR_DELAY and NFS4ERR_GRACE with backoff, and re-creates the session
// after NFS4ERR_BADSESSION, at most maxCallAttempts times. An NFS error is
// in the Reply (Status, Err), not in the error, which reports transport
// and decoding failures.
func (s *Session) Call(ctx context.Context, q *Request) (*Reply, error) {
	backoff := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if err := s.waitSlot(ctx, q); err != nil {
			return nil, err
		}
		r, err := s.roundTrip(ctx, q)
		if err != nil {
			return nil, err
		}
		if attempt+1 >= maxCallAttempts {
			return r, nil
		}
		switch {
		case r.HasSeq && (r.SeqStatus == NFS4ERR_BADSESSION || r.SeqStatus == NFS4ERR_DEADSESSION):
			if err := s.Recover(ctx, q.Seq.Gen); err != nil {
				return r, err
			}
			continue
		case r.Status == NFS4ERR_DELAY || r.Status == NFS4ERR_GRACE:
			if err := sleepCtx(ctx, backoff); err != nil {
				return r, err
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		return r, nil
	}
}

// roundTrip sends q on the slot Begin gave it and Ends the slot.
func (s *Session) roundTrip(ctx context.Context, q *Request) (*Reply, error) {
	body, err := s.Client().CallContext(ctx, Program, Version, ProcCompound, q.Encode)
	if err != nil {
		var re *rpc.RPCError
		if errors.As(err, &re) {
			s.End(q, &Reply{})
		} else {
			s.End(q, nil)
		}
		return nil, fmt.Errorf("nfs4 %s: %w", q.Op, err)
	}
	r := new(Reply)
	if err := DecodeReplyInto(body, r); err != nil {
		s.End(q, nil)
		return nil, fmt.Errorf("nfs4 %s: %w", q.Op, err)
	}
	s.End(q, r)
	return r, nil
}

func (s *Session) waitSlot(ctx context.Context, q *Request) error {
	for !s.Begin(q) {
		if s.Closed() {
			return fmt.Errorf("nfs4 %s: %w", q.Op, ErrClosed)
		}
		if err := sleepCtx(ctx, slotWait); err != nil {
			return fmt.Errorf("nfs4 %s: waiting for a free slot: %w", q.Op, err)
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do is Call with the NFS status folded into the error.
func (s *Session) do(ctx context.Context, q *Request) (*Reply, error) {
	r, err := s.Call(ctx, q)
	if err != nil {
		return nil, err
	}
	if err := r.Err(); err != nil {
		return r, fmt.Errorf("nfs4 %s: %w", q.Op, err)
	}
	return r, nil
}

// SplitPath splits a pseudo path ("/export/a") into its components.
func SplitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// LookupPath resolves a pseudo path from the root (PUTROOTFH, LOOKUP per
// component) and returns its handle and attributes.
func (s *Session) LookupPath(ctx context.Context, path string) (FH, Attr, error) {
	comps := SplitPath(path)
	if len(comps) > MaxPath {
		return nil, Attr{}, fmt.Errorf("nfs4: path %q has more than %d components", path, MaxPath)
	}
	r, err := s.do(ctx, &Request{Op: OpLookupPath, Path: comps})
	if err != nil {
		return nil, Attr{}, err
	}
	return r.FH, r.Attr, nil
}

// Lookup returns the handle and attributes of name in dir.
func (s *Session) Lookup(ctx context.Context, dir FH, name string) (FH, Attr, error) {
	r, err := s.do(ctx, &Request{Op: OpLookup, FH: dir, Name: name})
	if err != nil {
		return nil, Attr{}, err
	}
	return r.FH, r.Attr, nil
}

// Getattr returns the DefaultAttrs of fh.
func (s *Session) Getattr(ctx context.Context, fh FH) (Attr, error) {
	r, err := s.do(ctx, &Request{Op: OpGetattr, FH: fh})
	if err != nil {
		return Attr{}, err
	}
	return r.Attr, nil
}

// Open opens name in dir for reading and writing (creating it with mode
// when create) and returns its handle, open stateid and attributes.
func (s *Session) Open(ctx context.Context, dir FH, name string, create bool, mode uint32) (FH, Stateid, Attr, error) {
	r, err := s.do(ctx, &Request{Op: OpOpen, FH: dir, Name: name, Create: create, Mode: mode})
	if err != nil {
		return nil, Stateid{}, Attr{}, err
	}
	return r.FH, r.Stateid, r.Attr, nil
}

// CloseFile closes the open state sid of fh.
func (s *Session) CloseFile(ctx context.Context, fh FH, sid Stateid) error {
	_, err := s.do(ctx, &Request{Op: OpClose, FH: fh, Stateid: sid})
	return err
}

// Write writes data at off under sid with the given stable_how and returns
// the count written.
func (s *Session) Write(ctx context.Context, fh FH, sid Stateid, off uint64, data []byte, stable uint32) (uint32, error) {
	r, err := s.do(ctx, &Request{Op: OpWrite, FH: fh, Stateid: sid, Offset: off, Data: data, Stable: stable})
	if err != nil {
		return 0, err
	}
	return r.Count, nil
}

// Mkdir creates directory name in dir and returns its handle.
func (s *Session) Mkdir(ctx context.Context, dir FH, name string, mode uint32) (FH, error) {
	r, err := s.do(ctx, &Request{Op: OpMkdir, FH: dir, Name: name, Mode: mode})
	if err != nil {
		return nil, err
	}
	return r.FH, nil
}

// Symlink creates symlink name -> target in dir and returns its handle.
func (s *Session) Symlink(ctx context.Context, dir FH, name, target string) (FH, error) {
	r, err := s.do(ctx, &Request{Op: OpSymlink, FH: dir, Name: name, Target: target, Mode: 0o777})
	if err != nil {
		return nil, err
	}
	return r.FH, nil
}

// Remove removes name from dir.
func (s *Session) Remove(ctx context.Context, dir FH, name string) error {
	_, err := s.do(ctx, &Request{Op: OpRemove, FH: dir, Name: name})
	return err
}

// maxReaddirCalls bounds one Readdir.
const maxReaddirCalls = 100000

// Readdir lists dir (names and DirAttrs), at most maxEntries entries.
func (s *Session) Readdir(ctx context.Context, dir FH, maxEntries int) ([]Entry, error) {
	var out []Entry
	q := Request{Op: OpReaddir, FH: dir, DirCount: 8192, MaxCount: 32768}
	for i := 0; i < maxReaddirCalls; i++ {
		q.Seq = SeqArgs{}
		r, err := s.do(ctx, &q)
		if err != nil {
			return out, err
		}
		out = append(out, r.Entries...)
		if r.EOF || len(r.Entries) == 0 || len(out) >= maxEntries {
			return out[:min(len(out), maxEntries)], nil
		}
		q.Cookie, q.CookieVerf = r.Entries[len(r.Entries)-1].Cookie, r.CookieVerf
	}
	return out, fmt.Errorf("nfs4: READDIR: no end after %d calls", maxReaddirCalls)
}

// Renew sends a SEQUENCE alone, which renews the lease.
func (s *Session) Renew(ctx context.Context) error {
	_, err := s.do(ctx, &Request{Op: OpSequence})
	return err
}

// KeepAlive renews the lease whenever no SEQUENCE was sent for a third of
// it, until ctx ends or the session is closed. Run it in a goroutine.
func (s *Session) KeepAlive(ctx context.Context) {
	period := max(s.lease/6, 100*time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return
		}
		if time.Since(time.Unix(0, s.lastSeq.Load())) >= s.lease/3 {
			rctx, cancel := context.WithTimeout(ctx, s.lease/3)
			s.Renew(rctx)
			cancel()
		}
	}
}

// Close destroys the session and the client id (DESTROY_SESSION, then
// DESTROY_CLIENTID, each alone in its COMPOUND). Files should be closed
// first: a server refuses to destroy a client id that still has state
// (NFS4ERR_CLIENTID_BUSY). The rpc.Client is not closed.
func (s *Session) Close(ctx context.Context) error {
	s.recoverMu.Lock()
	defer s.recoverMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	q1 := &Request{Op: OpDestroySession, Seq: SeqArgs{SessionID: s.sessionID}}
	q2 := &Request{Op: OpDestroyClientID, ClientID: s.clientID}
	s.mu.Unlock()
	var errs []error
	for _, q := range []*Request{q1, q2} {
		r, err := s.single(ctx, q)
		if err == nil {
			err = r.Err()
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
