package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nfs4"
	"workbench/loadgen/internal/rpc"
)

// setupRequest4 is the NFSv4.1 COMPOUND of a set-up call given as its NFSv3
// request (file-set build, scratch pools): LOOKUP, MKDIR, SYMLINK, CREATE
// (OPEN create, kept open when keepOpen, else closed in the same COMPOUND),
// WRITE and READ (under the file's open stateid sid, else the anonymous one).
func setupRequest4(req *nfs3.Request, keepOpen bool, sid nfs4.Stateid) (nfs4.Request, error) {
	q := nfs4.Request{FH: nfs4.FH(req.FH), Name: req.Name, Mode: req.Mode}
	switch req.Proc {
	case nfs3.ProcLookup:
		q.Op = nfs4.OpLookup
	case nfs3.ProcMkdir:
		q.Op = nfs4.OpMkdir
	case nfs3.ProcSymlink:
		q.Op, q.Target = nfs4.OpSymlink, req.Target
	case nfs3.ProcCreate:
		q.Op, q.Create, q.SetSize, q.Size = nfs4.OpOpenClose, true, req.SetSize, req.Size
		if keepOpen {
			q.Op = nfs4.OpOpen
		}
	case nfs3.ProcWrite:
		q.Op, q.Stateid, q.Offset, q.Data, q.Count, q.Stable = nfs4.OpWrite, sid, req.Offset, req.Data, req.Count, req.Stable
		q.Content = req.Content
	case nfs3.ProcRead:
		q.Op, q.Stateid, q.Offset, q.Count = nfs4.OpRead, sid, req.Offset, req.Count
	default:
		return q, fmt.Errorf("%s has no NFSv4.1 set-up form", req.Proc)
	}
	return q, nil
}

// call4 is pipe.call over NFSv4.1: the request is translated
// (setupRequest4) and the reply handed to done as an nfs3.Reply (status,
// handle, size). A CREATE the pipe keeps open records its stateid.
func (p *pipe) call4(req nfs3.Request, done func(rep *nfs3.Reply)) {
	p.mu.Lock()
	sid := p.opened[string(req.FH)]
	p.mu.Unlock()
	q, err := setupRequest4(&req, p.keepOpen, sid)
	if err != nil {
		p.mu.Lock()
		p.fail(err)
		p.mu.Unlock()
		return
	}
	p.callRaw4(q, func(r *nfs4.Reply) {
		rep := nfs3.Reply{Status: r.Status, FH: nfs3.FH(r.FH)}
		if r.HasAttr {
			rep.Attr = &nfs3.Attr{Size: r.Attr.Size}
		}
		if q.Op == nfs4.OpOpen && r.Status == nfs4.NFS4_OK {
			if p.opened == nil {
				p.opened = map[string]nfs4.Stateid{}
			}
			p.opened[string(r.FH)] = r.Stateid
		}
		if done != nil {
			done(&rep)
		}
	})
}

// slotPoll is how often a set-up call polls for a free session slot.
const slotPoll = 100 * time.Microsecond

// callRaw4 sends q on the next connection once a session slot is free
// (bounded by the call lifetime); done gets the decoded reply under p.mu.
// A transport error, a malformed reply or a lost session records the
// pipe's first error.
func (p *pipe) callRaw4(q nfs4.Request, done func(r *nfs4.Reply)) {
	p.sem <- struct{}{}
	p.wg.Add(1)
	v4 := p.s.V4
	deadline := time.Now().Add(p.s.callLifetime())
	for q.Op != nfs4.OpNull && !v4.Begin(&q) {
		if v4.Closed() || time.Now().After(deadline) {
			p.abort(fmt.Errorf("%s %s: no free NFSv4.1 session slot", q.Op, q.Name))
			return
		}
		time.Sleep(slotPoll)
	}
	p.mu.Lock()
	c := p.s.client(p.n)
	p.n++
	p.calls++
	p.mu.Unlock()
	err := c.Go(nfs4.Program, nfs4.Version, q.Proc(), q.Encode, func(body []byte, err error) {
		defer func() { <-p.sem; p.wg.Done() }()
		r, err := endSetup4(v4, &q, body, err)
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.fail(fmt.Errorf("%s %s: %v", q.Op, q.Name, oneLine(err)))
			return
		}
		done(r)
	})
	if err != nil {
		v4.End(&q, &nfs4.Reply{}) // not sent: the slot's sequence id stays
		<-p.sem
		p.wg.Done()
		p.mu.Lock()
		p.fail(fmt.Errorf("%s %s: %v", q.Op, q.Name, oneLine(err)))
		p.mu.Unlock()
	}
}

// abort gives up a call before it was sent.
func (p *pipe) abort(err error) {
	<-p.sem
	p.wg.Done()
	p.mu.Lock()
	p.fail(err)
	p.mu.Unlock()
}

// endSetup4 decodes a set-up call's reply and ends its slot.
func endSetup4(v4 *nfs4.Session, q *nfs4.Request, body []byte, err error) (*nfs4.Reply, error) {
	if err != nil {
		if q.Op != nfs4.OpNull {
			if re := (*rpc.RPCError)(nil); errors.As(err, &re) {
				v4.End(q, &nfs4.Reply{})
			} else {
				v4.End(q, nil)
			}
		}
		return nil, err
	}
	r := new(nfs4.Reply)
	if err := nfs4.DecodeReplyInto(body, r); err != nil {
		v4.End(q, nil)
		return nil, err
	}
	if q.Op != nfs4.OpNull && v4.End(q, r) {
		return nil, errSessionLost
	}
	return r, nil
}

// closeAll closes every file the pipe opened and forgets them; the first
// error of the pipe so far, or of the CLOSEs.
func (p *pipe) closeAll() error {
	if p.s.V4 == nil {
		return nil
	}
	if err := p.wait(); err != nil {
		return err
	}
	p.mu.Lock()
	opened := p.opened
	p.opened = nil
	p.mu.Unlock()
	for fh, sid := range opened {
		p.callRaw4(nfs4.Request{Op: nfs4.OpClose, FH: nfs4.FH(fh), Stateid: sid}, func(r *nfs4.Reply) {
			if r.Status != nfs4.NFS4_OK {
				p.fail(fmt.Errorf("CLOSE: %s", nfs4.StatusString(r.Status)))
			}
		})
	}
	return p.wait()
}

// readManifest4 is readManifest over NFSv4.1 (LOOKUP, OPEN, READ, CLOSE).
func readManifest4(s *Session, base string) (*Manifest, nfs3.FH, error) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	v4 := s.V4
	dir, _, err := v4.Lookup(ctx, nfs4.FH(s.Root), manifestD)
	if err != nil {
		return nil, nil, nil // absent (or unreadable): no manifest
	}
	fh, sid, _, err := v4.Open(ctx, dir, base+".json", false, 0)
	if err != nil {
		return nil, nfs3.FH(dir), nil
	}
	data, err := readAll4(ctx, v4, fh, sid)
	v4.CloseFile(ctx, fh, sid)
	if err != nil {
		return nil, nfs3.FH(dir), err
	}
	var m Manifest
	if json.Unmarshal(data, &m) != nil || m.Version != 1 || m.Base != base {
		return nil, nfs3.FH(dir), nil
	}
	return &m, nfs3.FH(dir), nil
}

// readAll4 reads a small file (at most 16 MiB) under sid.
func readAll4(ctx context.Context, v4 *nfs4.Session, fh nfs4.FH, sid nfs4.Stateid) ([]byte, error) {
	var data []byte
	for off := uint64(0); off < 1<<24; {
		q := &nfs4.Request{Op: nfs4.OpRead, FH: fh, Stateid: sid, Offset: off, Count: 32768}
		if err := waitBegin(ctx, v4, q); err != nil {
			return nil, err
		}
		body, err := v4.Client().CallContext(ctx, nfs4.Program, nfs4.Version, nfs4.ProcCompound, q.Encode)
		if err != nil {
			v4.End(q, nil)
			return nil, fmt.Errorf("READ: %v", oneLine(err))
		}
		r, b, err := nfs4.DecodeReadReply(body)
		if err != nil {
			v4.End(q, nil)
			return nil, fmt.Errorf("READ reply: %v", err)
		}
		v4.End(q, r)
		if r.Status != nfs4.NFS4_OK {
			return nil, fmt.Errorf("READ: %s", nfs4.StatusString(r.Status))
		}
		data = append(data, b...)
		off += uint64(len(b))
		if r.EOF || len(b) == 0 {
			break
		}
	}
	return data, nil
}

// waitBegin takes a session slot for q, waiting while all are busy.
func waitBegin(ctx context.Context, v4 *nfs4.Session, q *nfs4.Request) error {
	for !v4.Begin(q) {
		if v4.Closed() {
			return nfs4.ErrClosed
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(slotPoll):
		}
	}
	return nil
}

// writeManifest4 is writeManifest over NFSv4.1 (CREATE dir, OPEN create
// with size 0, WRITE FILE_SYNC, CLOSE).
func writeManifest4(s *Session, dir nfs3.FH, m *Manifest) error {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	v4 := s.V4
	if dir == nil {
		d, err := v4.Mkdir(ctx, nfs4.FH(s.Root), manifestD, 0o755)
		var se *nfs4.StatusError
		if errors.As(err, &se) && se.Status == nfs4.NFS4ERR_EXIST {
			d, _, err = v4.Lookup(ctx, nfs4.FH(s.Root), manifestD)
		}
		if err != nil {
			return fmt.Errorf("%s: %v", manifestD, err)
		}
		dir = nfs3.FH(d)
	}
	data, _ := json.MarshalIndent(m, "", "  ")
	data = append(data, '\n')
	name := m.Base + ".json"
	r, err := v4.Call(ctx, &nfs4.Request{Op: nfs4.OpOpen, FH: nfs4.FH(dir), Name: name, Create: true, Mode: 0o644, SetSize: true})
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		return fmt.Errorf("OPEN %s/%s: %v", manifestD, name, err)
	}
	_, werr := v4.Write(ctx, r.FH, r.Stateid, 0, data, nfs4.FileSync)
	cerr := v4.CloseFile(ctx, r.FH, r.Stateid)
	if werr != nil {
		return fmt.Errorf("WRITE %s/%s: %v", manifestD, name, werr)
	}
	return cerr
}
