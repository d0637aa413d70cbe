package nfs4_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs4"
	"workbench/loadgen/internal/rpc"
)

// TestRealServer runs the session and every COMPOUND kind against a real
// NFSv4.1 server when FSTRESS_TEST_NFS4_SERVER (host:port) and
// FSTRESS_TEST_NFS4_PATH (a writable directory's pseudo path) are set,
// e.g. inside a network namespace running Ganesha with a v4 export:
//
//	go test -c -o /tmp/nfs4.test ./internal/nfs4
//	ip netns exec NS env FSTRESS_TEST_NFS4_SERVER=127.0.0.1:2049 \
//	    FSTRESS_TEST_NFS4_PATH=/export /tmp/nfs4.test -test.run RealServer -test.v
func TestRealServer(t *testing.T) {
	server, path := os.Getenv("FSTRESS_TEST_NFS4_SERVER"), os.Getenv("FSTRESS_TEST_NFS4_PATH")
	if server == "" || path == "" {
		t.Skip("FSTRESS_TEST_NFS4_SERVER / FSTRESS_TEST_NFS4_PATH not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := rpc.Dial(server, rpc.Options{Timeout: 5 * time.Second, MaxRetransmits: 1,
		Auth: rpc.AuthSys{Machine: "fstress-test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := nfs4.NewSession(ctx, c, nfs4.Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := s.ExchangeID()
	t.Logf("server %q %q, scope %q, flags %#x; fore %+v; %d slots; lease %v",
		x.ImplDomain, x.ImplName, x.ServerScope, x.Flags, s.Fore(), s.Slots(), s.Lease())
	root, err := s.Call(ctx, &nfs4.Request{Op: nfs4.OpLookupPath, Attrs: nfs4.MakeBitmap(nfs4.AttrSupportedAttrs, nfs4.AttrLeaseTime)})
	must(t, "root attributes", root, err)
	sup := root.Attr.Supported
	if got := (nfs4.Bitmap{sup[0] & nfs4.DefaultAttrs[0], sup[1] & nfs4.DefaultAttrs[1]}); root.Attr.LeaseTime == 0 || got != nfs4.DefaultAttrs {
		t.Errorf("root: lease_time %d, supported %x lacks some of %x", root.Attr.LeaseTime, sup, nfs4.DefaultAttrs)
	}
	t.Logf("root: lease_time %d s, supported %x", root.Attr.LeaseTime, root.Attr.Supported)
	dir, attr, err := s.LookupPath(ctx, path)
	if err != nil || attr.Type != nfs4.NF4DIR {
		t.Fatalf("lookup %s: %+v %v", path, attr, err)
	}
	name := fmt.Sprintf("fstress-nfs4-%d", time.Now().UnixNano())
	work, err := s.Mkdir(ctx, dir, name, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	realKinds(ctx, t, s, work)
	realConcurrent(ctx, t, s, work)
	realBadSession(ctx, t, s)
	if err := s.Remove(ctx, dir, name); err != nil {
		t.Error(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Error(err)
	}
}

func must(t *testing.T, what string, r *nfs4.Reply, err error) *nfs4.Reply {
	t.Helper()
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return r
}

func realKinds(ctx context.Context, t *testing.T, s *nfs4.Session, dir nfs4.FH) {
	fh, sid, a, err := s.Open(ctx, dir, "f", true, 0o644)
	if err != nil || a.Type != nfs4.NF4REG {
		t.Fatalf("open: %+v %v", a, err)
	}
	if n, err := s.Write(ctx, fh, sid, 0, make([]byte, 10000), nfs4.Unstable); err != nil || n != 10000 {
		t.Fatalf("write: %d %v", n, err)
	}
	call := func(q nfs4.Request) *nfs4.Reply {
		r, err := s.Call(ctx, &q)
		return must(t, q.Op.String(), r, err)
	}
	call(nfs4.Request{Op: nfs4.OpCommit, FH: fh})
	if r := call(nfs4.Request{Op: nfs4.OpRead, FH: fh, Stateid: sid, Offset: 4000, Count: 8000}); r.Count != 6000 || !r.EOF {
		t.Errorf("read: count %d eof %v", r.Count, r.EOF)
	}
	call(nfs4.Request{Op: nfs4.OpSetattr, FH: fh, Stateid: sid, Mode: 0o600, SetSize: true, Size: 5})
	if r := call(nfs4.Request{Op: nfs4.OpGetattr, FH: fh}); r.Attr.Size != 5 || r.Attr.Mode&0o777 != 0o600 || r.Attr.Mask != nfs4.DefaultAttrs {
		t.Errorf("getattr after setattr: %+v", r.Attr)
	}
	if r := call(nfs4.Request{Op: nfs4.OpAccess, FH: fh, Access: 0x3f}); r.Access == 0 {
		t.Errorf("access: %+v", r)
	}
	if err := s.CloseFile(ctx, fh, sid); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Symlink(ctx, dir, "l", "target/path"); err != nil {
		t.Fatal(err)
	}
	lfh, _, _ := s.Lookup(ctx, dir, "l")
	if r := call(nfs4.Request{Op: nfs4.OpReadlink, FH: lfh}); r.Target != "target/path" {
		t.Errorf("readlink %q", r.Target)
	}
	call(nfs4.Request{Op: nfs4.OpLink, FH: fh, ToFH: dir, ToName: "hard"})
	call(nfs4.Request{Op: nfs4.OpRename, FH: dir, Name: "hard", ToFH: dir, ToName: "hard2"})
	if _, err := s.Mkdir(ctx, dir, "sub", 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := s.Readdir(ctx, dir, 100)
	if err != nil || len(ents) != 4 {
		t.Errorf("readdir: %d entries %v", len(ents), err)
	}
	for _, e := range ents {
		t.Logf("entry %q cookie %d type %d size %d", e.Name, e.Cookie, e.Attr.Type, e.Attr.Size)
	}
	_, _, err = s.Lookup(ctx, dir, "missing")
	var se *nfs4.StatusError
	if !errors.As(err, &se) || se.Status != nfs4.NFS4ERR_NOENT || se.Op != nfs4.OPLOOKUP {
		t.Errorf("lookup of a missing name: %v", err)
	}
	for _, n := range []string{"f", "l", "hard2", "sub"} {
		if err := s.Remove(ctx, dir, n); err != nil {
			t.Error(err)
		}
	}
}

// realConcurrent: many GETATTRs in parallel over the slot table.
func realConcurrent(ctx context.Context, t *testing.T, s *nfs4.Session, dir nfs4.FH) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				r, err := s.Call(ctx, &nfs4.Request{Op: nfs4.OpGetattr, FH: dir})
				if err == nil {
					err = r.Err()
				}
				if err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil || s.Misordered() != 0 {
		t.Fatalf("concurrent getattr: %v, %d misordered", first, s.Misordered())
	}
}

// realBadSession destroys the session behind the Session's back: the next
// call sees NFS4ERR_BADSESSION and the session is re-created.
func realBadSession(ctx context.Context, t *testing.T, s *nfs4.Session) {
	id, gen := s.SessionID()
	q := &nfs4.Request{Op: nfs4.OpDestroySession, Seq: nfs4.SeqArgs{SessionID: id}}
	body, err := s.Client().CallContext(ctx, nfs4.Program, nfs4.Version, nfs4.ProcCompound, q.Encode)
	if err != nil {
		t.Fatal(err)
	}
	r, err := nfs4.DecodeReply(body)
	must(t, "destroy_session", &r, err)
	if err := s.Renew(ctx); err != nil {
		t.Fatalf("renew after the session was destroyed: %v", err)
	}
	if _, g := s.SessionID(); g != gen+1 || s.Recreated() != 1 {
		t.Fatalf("generation %d -> %d, recreated %d", gen, g, s.Recreated())
	}
}
