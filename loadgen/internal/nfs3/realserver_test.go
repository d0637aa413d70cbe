package nfs3_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/rpc"
)

// TestRealServer runs every procedure against a real NFSv3 server when
// FSTRESS_TEST_NFS_SERVER (host:port of NFS; the portmapper on port 111 of
// the same host gives the MOUNT port) and FSTRESS_TEST_EXPORT are set, e.g.
// inside a Ganesha slot:
//
//	go test -c -o /tmp/nfs3.test ./internal/nfs3
//	scripts/ganesha-slot.sh exec wire env FSTRESS_TEST_NFS_SERVER=127.0.0.1:2049 \
//	    FSTRESS_TEST_EXPORT=/export /tmp/nfs3.test -test.run RealServer -test.v
func TestRealServer(t *testing.T) {
	server, export := os.Getenv("FSTRESS_TEST_NFS_SERVER"), os.Getenv("FSTRESS_TEST_EXPORT")
	if server == "" || export == "" {
		t.Skip("FSTRESS_TEST_NFS_SERVER / FSTRESS_TEST_EXPORT not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	host, _, err := net.SplitHostPort(server)
	if err != nil {
		t.Fatal(err)
	}
	mport, err := rpc.GetPort(ctx, host, nfs3.MountProgram, nfs3.MountVersion)
	if err != nil {
		t.Fatal(err)
	}
	nport, err := rpc.GetPort(ctx, host, nfs3.Program, nfs3.Version)
	t.Logf("portmapper: mount port %d, nfs port %d (%v)", mport, nport, err)
	opt := rpc.Options{Timeout: 5 * time.Second, MaxRetransmits: 1, Auth: rpc.AuthSys{Machine: "fstress-test"}}
	mc, err := rpc.Dial(net.JoinHostPort(host, fmt.Sprint(mport)), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	root, err := nfs3.Mount(ctx, mc, export)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nfs3.Mount(ctx, mc, "/no-such-export"); err == nil {
		t.Error("mount of a missing export succeeded")
	} else {
		t.Logf("bad export: %v", err)
	}
	c, err := rpc.Dial(server, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	call := func(r nfs3.Request) nfs3.Reply {
		t.Helper()
		body, err := c.CallContext(ctx, nfs3.Program, nfs3.Version, uint32(r.Proc), r.Encode)
		if err != nil {
			t.Fatalf("%s: %v", r.Proc, err)
		}
		rep, err := nfs3.DecodeReply(r.Proc, body)
		if err != nil {
			t.Fatalf("%s: decode: %v", r.Proc, err)
		}
		return rep
	}
	ok := func(r nfs3.Request) nfs3.Reply {
		t.Helper()
		rep := call(r)
		if rep.Status != nfs3.NFS3_OK {
			t.Fatalf("%s %q: %s", r.Proc, r.Name, nfs3.StatusString(rep.Status))
		}
		return rep
	}
	ok(nfs3.Request{Proc: nfs3.ProcNull})
	if a := ok(nfs3.Request{Proc: nfs3.ProcGetattr, FH: root}).Attr; a == nil || a.Type != nfs3.NF3DIR {
		t.Fatalf("root attr %+v", a)
	}
	fi := ok(nfs3.Request{Proc: nfs3.ProcFsinfo, FH: root}).FSInfo
	t.Logf("fsinfo %+v", fi)
	t.Logf("fsstat %+v", ok(nfs3.Request{Proc: nfs3.ProcFsstat, FH: root}).FSStat)
	ok(nfs3.Request{Proc: nfs3.ProcPathconf, FH: root})
	ok(nfs3.Request{Proc: nfs3.ProcAccess, FH: root, Access: 0x3f})

	dirName := fmt.Sprintf("wiretest-%d", time.Now().UnixNano())
	dir := ok(nfs3.Request{Proc: nfs3.ProcMkdir, FH: root, Name: dirName, Mode: 0o755}).FH
	if lk := ok(nfs3.Request{Proc: nfs3.ProcLookup, FH: root, Name: dirName}); string(lk.FH) != string(dir) {
		t.Errorf("LOOKUP handle differs from MKDIR's")
	}
	if st := call(nfs3.Request{Proc: nfs3.ProcMkdir, FH: root, Name: dirName, Mode: 0o755}).Status; st != nfs3.NFS3ERR_EXIST {
		t.Errorf("second MKDIR: %s", nfs3.StatusString(st))
	}
	if st := call(nfs3.Request{Proc: nfs3.ProcLookup, FH: dir, Name: "missing"}).Status; st != nfs3.NFS3ERR_NOENT {
		t.Errorf("LOOKUP missing: %s", nfs3.StatusString(st))
	}
	f := ok(nfs3.Request{Proc: nfs3.ProcCreate, FH: dir, Name: "file", Mode: 0o644}).FH
	const size = 300 << 10
	data := make([]byte, 64<<10)
	for i := range data {
		data[i] = byte(i)
	}
	for off := 0; off < size; off += len(data) {
		n := min(len(data), size-off)
		w := ok(nfs3.Request{Proc: nfs3.ProcWrite, FH: f, Offset: uint64(off), Data: data[:n], Stable: nfs3.Unstable})
		if w.Count != uint32(n) {
			t.Fatalf("WRITE count %d", w.Count)
		}
	}
	ok(nfs3.Request{Proc: nfs3.ProcWrite, FH: f, Offset: size, Count: 100, Stable: nfs3.FileSync})
	ok(nfs3.Request{Proc: nfs3.ProcCommit, FH: f})
	if a := ok(nfs3.Request{Proc: nfs3.ProcGetattr, FH: f}).Attr; a.Size != size+100 || a.Type != nfs3.NF3REG {
		t.Fatalf("attr after writes %+v", a)
	}
	var total uint32
	for off := uint64(0); ; {
		r := ok(nfs3.Request{Proc: nfs3.ProcRead, FH: f, Offset: off, Count: 128 << 10})
		total += r.Count
		off += uint64(r.Count)
		if r.EOF || r.Count == 0 {
			break
		}
	}
	if total != size+100 {
		t.Errorf("read %d bytes", total)
	}
	ok(nfs3.Request{Proc: nfs3.ProcSetattr, FH: f, SetSize: true, Size: 10, Mode: 0o600})
	if a := ok(nfs3.Request{Proc: nfs3.ProcGetattr, FH: f}).Attr; a.Size != 10 || a.Mode&0o777 != 0o600 {
		t.Errorf("attr after SETATTR %+v", a)
	}
	ok(nfs3.Request{Proc: nfs3.ProcSymlink, FH: dir, Name: "link", Target: "file"})
	lnk := ok(nfs3.Request{Proc: nfs3.ProcLookup, FH: dir, Name: "link"}).FH
	if tg := ok(nfs3.Request{Proc: nfs3.ProcReadlink, FH: lnk}).Target; tg != "file" {
		t.Errorf("READLINK %q", tg)
	}
	ok(nfs3.Request{Proc: nfs3.ProcMkdir, FH: dir, Name: "sub", Mode: 0o755})
	ok(nfs3.Request{Proc: nfs3.ProcLink, FH: f, ToFH: dir, ToName: "hard"})
	ok(nfs3.Request{Proc: nfs3.ProcRename, FH: dir, Name: "hard", ToFH: dir, ToName: "hard2"})
	mk := call(nfs3.Request{Proc: nfs3.ProcMknod, FH: dir, Name: "fifo", Mode: 0o600})
	t.Logf("MKNOD fifo: %s", nfs3.StatusString(mk.Status))
	for i := 0; i < 40; i++ {
		ok(nfs3.Request{Proc: nfs3.ProcCreate, FH: dir, Name: fmt.Sprintf("many-%02d", i), Mode: 0o644})
	}
	// Directory listings, paged with small counts to exercise cookies.
	list := func(p nfs3.Proc) []string {
		var names []string
		var cookie uint64
		var verf [8]byte
		for page := 0; page < 100; page++ {
			r := ok(nfs3.Request{Proc: p, FH: dir, Cookie: cookie, CookieVerf: verf, Count: 512, MaxCount: 2048})
			for _, e := range r.Entries {
				names = append(names, e.Name)
				cookie = e.Cookie
				if p == nfs3.ProcReaddirplus && e.Name == "sub" && e.Type != nfs3.NF3DIR {
					t.Errorf("readdirplus: sub has type %d", e.Type)
				}
				if p == nfs3.ProcReaddirplus && e.Name == "file" && (e.FH == nil || e.Type != nfs3.NF3REG) {
					t.Errorf("readdirplus: file entry %+v", e)
				}
			}
			verf = r.CookieVerf
			if r.EOF {
				return names
			}
		}
		t.Fatalf("%s did not reach EOF", p)
		return nil
	}
	for _, p := range []nfs3.Proc{nfs3.ProcReaddir, nfs3.ProcReaddirplus} {
		names := list(p)
		sort.Strings(names)
		want := 40 + 4 // many-*, file, link, sub, hard2 (and fifo if MKNOD worked)
		if mk.Status == nfs3.NFS3_OK {
			want++
		}
		got := 0
		for _, n := range names {
			if n != "." && n != ".." {
				got++
			}
		}
		if got != want {
			t.Errorf("%s: %d entries, want %d: %v", p, got, want, names)
		}
	}
	if st := call(nfs3.Request{Proc: nfs3.ProcRmdir, FH: root, Name: dirName}).Status; st != nfs3.NFS3ERR_NOTEMPTY && st != nfs3.NFS3ERR_EXIST {
		t.Errorf("RMDIR non-empty: %s", nfs3.StatusString(st))
	}
	// Pipelined GETATTRs: many outstanding on one connection.
	const n = 20000
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := 0
	start := time.Now()
	sem := make(chan struct{}, 128)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		r := nfs3.Request{Proc: nfs3.ProcGetattr, FH: f}
		if err := c.Go(nfs3.Program, nfs3.Version, 1, r.Encode, func(body []byte, err error) {
			defer func() { <-sem; wg.Done() }()
			if rep, derr := nfs3.DecodeReply(nfs3.ProcGetattr, body); err != nil || derr != nil || rep.Status != 0 {
				mu.Lock()
				bad++
				mu.Unlock()
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	t.Logf("%d pipelined GETATTRs in %v (%.0f/s), %d bad", n, time.Since(start), n/time.Since(start).Seconds(), bad)
	if bad != 0 {
		t.Errorf("%d bad GETATTRs", bad)
	}
	// Clean up.
	for _, name := range append([]string{"file", "link", "hard2", "fifo"}, func() (s []string) {
		for i := 0; i < 40; i++ {
			s = append(s, fmt.Sprintf("many-%02d", i))
		}
		return
	}()...) {
		call(nfs3.Request{Proc: nfs3.ProcRemove, FH: dir, Name: name})
	}
	ok(nfs3.Request{Proc: nfs3.ProcRmdir, FH: dir, Name: "sub"})
	ok(nfs3.Request{Proc: nfs3.ProcRmdir, FH: root, Name: dirName})
	if err := nfs3.Unmount(ctx, mc, export); err != nil {
		t.Error(err)
	}
	if rt, to := c.Counters(); rt != 0 || to != 0 {
		t.Errorf("retransmits %d timeouts %d", rt, to)
	}
}
