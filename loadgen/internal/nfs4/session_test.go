package nfs4_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs4"
	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/rpc"
)

// startNull serves srv on loopback and returns a dialed client.
func startNull(t *testing.T, srv *nullserver.Server) *rpc.Client {
	t.Helper()
	addr, stop, err := srv.ServeLoopback()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	c, err := rpc.Dial(addr.String(), rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func newSession(t *testing.T, srv *nullserver.Server, opt nfs4.Options) *nfs4.Session {
	t.Helper()
	s, err := nfs4.NewSession(ctx(t), startNull(t, srv), opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSessionSetupAndHelpers(t *testing.T) {
	srv := &nullserver.Server{Slots4: 8}
	s := newSession(t, srv, nfs4.Options{Slots: 32})
	if s.Slots() != 8 || s.Fore().MaxRequests != 8 {
		t.Fatalf("slots %d, fore %+v: want the server's 8", s.Slots(), s.Fore())
	}
	if s.Lease() != 90*time.Second {
		t.Errorf("lease %v, want 90s from lease_time", s.Lease())
	}
	if x := s.ExchangeID(); x.ImplName != "fstress nullserver" || x.ClientID == 0 {
		t.Errorf("exchange_id %+v", x)
	}
	c := ctx(t)
	root, attr, err := s.LookupPath(c, "/export")
	if err != nil || len(root) != 16 || attr.Type != nfs4.NF4DIR {
		t.Fatalf("lookup path: %x %+v %v", root, attr, err)
	}
	fh, sid, a, err := s.Open(c, root, "f", true, 0o644)
	if err != nil || len(fh) == 0 || sid.Seqid != 1 || a.Type != nfs4.NF4REG {
		t.Fatalf("open: %x %+v %+v %v", fh, sid, a, err)
	}
	if n, err := s.Write(c, fh, sid, 0, make([]byte, 1000), nfs4.Unstable); err != nil || n != 1000 {
		t.Fatalf("write: %d %v", n, err)
	}
	if err := s.CloseFile(c, fh, sid); err != nil {
		t.Fatal(err)
	}
	d, err := s.Mkdir(c, root, "d", 0o755)
	if err != nil || len(d) == 0 {
		t.Fatalf("mkdir: %v", err)
	}
	if _, err := s.Symlink(c, d, "l", "target"); err != nil {
		t.Fatal(err)
	}
	ents, err := s.Readdir(c, root, 100)
	if err != nil || len(ents) != 3 || ents[1].Name != "dir0" || ents[1].Attr.Type != nfs4.NF4DIR {
		t.Fatalf("readdir: %+v %v", ents, err)
	}
	if err := s.Remove(c, root, "f"); err != nil {
		t.Fatal(err)
	}
	if err := s.Renew(c); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(c); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Getattr(c, root); !errors.Is(err, nfs4.ErrClosed) {
		t.Errorf("call after Close: %v", err)
	}
	if cl, ss := srv.State4(); cl != 0 || ss != 0 {
		t.Errorf("after Close the server holds %d clients, %d sessions", cl, ss)
	}
}

// TestSlotTableConcurrent runs many calls from many goroutines on a small
// slot table: every call must find its sequence id in order (the null
// server checks each slot's sequence).
func TestSlotTableConcurrent(t *testing.T) {
	srv := &nullserver.Server{Slots4: 4}
	s := newSession(t, srv, nfs4.Options{})
	root, _, err := s.LookupPath(ctx(t), "/export")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				r, err := s.Call(ctx(t), &nfs4.Request{Op: nfs4.OpGetattr, FH: root})
				if err == nil {
					err = r.Err()
				}
				if err == nil && r.Seq.Slot >= 4 {
					err = errors.New("slot beyond the table")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if s.Misordered() != 0 {
		t.Fatalf("%d misordered", s.Misordered())
	}
}

func TestBadSessionRecreated(t *testing.T) {
	srv := &nullserver.Server{}
	s := newSession(t, srv, nfs4.Options{})
	c := ctx(t)
	if err := s.Renew(c); err != nil {
		t.Fatal(err)
	}
	id0, gen0 := s.SessionID()
	srv.ForgetSessions()
	if err := s.Renew(c); err != nil {
		t.Fatalf("renew after the server lost the session: %v", err)
	}
	id1, gen1 := s.SessionID()
	if s.Recreated() != 1 || id0 == id1 || gen1 != gen0+1 {
		t.Fatalf("recreated %d, ids %x %x, gens %d %d", s.Recreated(), id0, id1, gen0, gen1)
	}
	srv.ForgetClients() // stale client id too: EXCHANGE_ID again
	if err := s.Renew(c); err != nil {
		t.Fatalf("renew after the server lost the client: %v", err)
	}
	if s.Recreated() != 2 {
		t.Fatalf("recreated %d, want 2", s.Recreated())
	}
	if err := s.Close(c); err != nil {
		t.Fatal(err)
	}
}

// TestAsyncBeginEnd drives Begin/End by hand as the engine will: a lost
// reply leaves the slot uncertain; the server, which never saw it, answers
// SEQ_MISORDERED to the next request on the slot, after which the slot is
// back in step.
func TestAsyncBeginEnd(t *testing.T) {
	srv := &nullserver.Server{Slots4: 1}
	s := newSession(t, srv, nfs4.Options{})
	c := s.Client()
	q := &nfs4.Request{Op: nfs4.OpSequence}
	if !s.Begin(q) {
		t.Fatal("no slot")
	}
	if s.Begin(&nfs4.Request{Op: nfs4.OpSequence}) {
		t.Fatal("a second slot in a one-slot table")
	}
	s.End(q, nil) // as if the call had timed out unsent
	call := func() *nfs4.Reply {
		q := &nfs4.Request{Op: nfs4.OpSequence}
		if !s.Begin(q) {
			t.Fatal("no slot")
		}
		body, err := c.Call(nfs4.Program, nfs4.Version, nfs4.ProcCompound, q.Encode)
		if err != nil {
			t.Fatal(err)
		}
		r, err := nfs4.DecodeReply(body)
		if err != nil {
			t.Fatal(err)
		}
		if s.End(q, &r) {
			t.Fatal("session lost")
		}
		return &r
	}
	if r := call(); r.Status != nfs4.NFS4ERR_SEQ_MISORDERED {
		t.Fatalf("status %s, want SEQ_MISORDERED", nfs4.StatusString(r.Status))
	}
	if r := call(); r.Status != nfs4.NFS4_OK {
		t.Fatalf("status %s after the step back", nfs4.StatusString(r.Status))
	}
	if s.Misordered() != 1 {
		t.Fatalf("misordered %d", s.Misordered())
	}
}

// TestKeepAlive: an idle session sends SEQUENCE about every third of its
// lease, and nothing after Close.
func TestKeepAlive(t *testing.T) {
	var compounds atomic.Int64
	srv := &nullserver.Server{Delay: func(prog, vers, proc, xid uint32) time.Duration {
		if vers == nfs4.Version && proc == nfs4.ProcCompound {
			compounds.Add(1)
		}
		return 0
	}}
	s := newSession(t, srv, nfs4.Options{Lease: 300 * time.Millisecond})
	kctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.KeepAlive(kctx); close(done) }()
	n0 := compounds.Load()
	time.Sleep(time.Second)
	n := compounds.Load() - n0
	if n < 3 || n > 12 {
		t.Errorf("%d renewals in 1 s of a 300 ms lease, want about 7", n)
	}
	if err := s.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("KeepAlive still running 2 s after Close")
	}
	cancel()
}
