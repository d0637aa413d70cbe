package nullserver_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/xdr"
)

func start(t *testing.T) (addr string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- nullserver.Serve(ctx, ln) }()
	var once sync.Once
	var serr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serr = <-done:
			case <-time.After(5 * time.Second):
				serr = errors.New("Serve did not return")
			}
		})
		return serr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String(), stop
}

func dial(t *testing.T, addr string) *rpc.Client {
	c, err := rpc.Dial(addr, rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestEveryProcedure(t *testing.T) {
	addr, _ := start(t)
	c := dial(t, addr)
	ctx := context.Background()
	root, err := nfs3.Mount(ctx, c, "/export")
	if err != nil || string(root) != string(nullserver.RootFH) {
		t.Fatalf("mount: %q %v", root, err)
	}
	if err := nfs3.Unmount(ctx, c, "/export"); err != nil {
		t.Fatal(err)
	}
	reqs := []nfs3.Request{
		{Proc: nfs3.ProcNull},
		{Proc: nfs3.ProcGetattr, FH: root},
		{Proc: nfs3.ProcSetattr, FH: root, Mode: 0o600, SetSize: true, Size: 5},
		{Proc: nfs3.ProcLookup, FH: root, Name: "a"},
		{Proc: nfs3.ProcAccess, FH: root, Access: 0x3f},
		{Proc: nfs3.ProcReadlink, FH: root},
		{Proc: nfs3.ProcRead, FH: root, Offset: 0, Count: 12345},
		{Proc: nfs3.ProcWrite, FH: root, Offset: 0, Count: 70000},
		{Proc: nfs3.ProcCreate, FH: root, Name: "f", Mode: 0o644},
		{Proc: nfs3.ProcMkdir, FH: root, Name: "d", Mode: 0o755},
		{Proc: nfs3.ProcSymlink, FH: root, Name: "l", Target: "f"},
		{Proc: nfs3.ProcMknod, FH: root, Name: "p"},
		{Proc: nfs3.ProcRemove, FH: root, Name: "f"},
		{Proc: nfs3.ProcRmdir, FH: root, Name: "d"},
		{Proc: nfs3.ProcRename, FH: root, Name: "a", ToFH: root, ToName: "b"},
		{Proc: nfs3.ProcLink, FH: root, ToFH: root, ToName: "h"},
		{Proc: nfs3.ProcReaddir, FH: root, Count: 4096},
		{Proc: nfs3.ProcReaddirplus, FH: root, Count: 4096, MaxCount: 32768},
		{Proc: nfs3.ProcFsstat, FH: root},
		{Proc: nfs3.ProcFsinfo, FH: root},
		{Proc: nfs3.ProcPathconf, FH: root},
		{Proc: nfs3.ProcCommit, FH: root},
	}
	for _, r := range reqs {
		body, err := c.Call(nfs3.Program, nfs3.Version, uint32(r.Proc), r.Encode)
		if err != nil {
			t.Errorf("%s: %v", r.Proc, err)
			continue
		}
		rep, err := nfs3.DecodeReply(r.Proc, body)
		if err != nil || rep.Status != nfs3.NFS3_OK {
			t.Errorf("%s: %v status %d", r.Proc, err, rep.Status)
			continue
		}
		if r.Proc != nfs3.ProcNull && rep.Attr == nil {
			t.Errorf("%s: no attributes", r.Proc)
		}
		switch r.Proc {
		case nfs3.ProcRead, nfs3.ProcWrite:
			if rep.Count != r.Count {
				t.Errorf("%s: count %d want %d", r.Proc, rep.Count, r.Count)
			}
		case nfs3.ProcLookup, nfs3.ProcCreate, nfs3.ProcMkdir, nfs3.ProcSymlink, nfs3.ProcMknod:
			if len(rep.FH) == 0 {
				t.Errorf("%s: no handle", r.Proc)
			}
		case nfs3.ProcReaddir, nfs3.ProcReaddirplus:
			if len(rep.Entries) != 3 || !rep.EOF {
				t.Errorf("%s: %d entries eof %v", r.Proc, len(rep.Entries), rep.EOF)
			}
			if r.Proc == nfs3.ProcReaddirplus && (rep.Entries[1].Type != nfs3.NF3DIR || rep.Entries[0].FH == nil) {
				t.Errorf("readdirplus entries %+v", rep.Entries)
			}
		case nfs3.ProcFsinfo:
			if rep.FSInfo != nullserver.FSInfo {
				t.Errorf("fsinfo %+v", rep.FSInfo)
			}
		case nfs3.ProcFsstat:
			if rep.FSStat != nullserver.FSStat {
				t.Errorf("fsstat %+v", rep.FSStat)
			}
		case nfs3.ProcPathconf:
			if rep.PathConf != nullserver.PathConf {
				t.Errorf("pathconf %+v", rep.PathConf)
			}
		}
	}
	// Different names give different handles; the same name the same one.
	h := func(name string) string {
		r := nfs3.Request{Proc: nfs3.ProcLookup, FH: root, Name: name}
		body, err := c.Call(nfs3.Program, nfs3.Version, uint32(r.Proc), r.Encode)
		if err != nil {
			t.Fatal(err)
		}
		rep, _ := nfs3.DecodeReply(r.Proc, body)
		return string(rep.FH)
	}
	if h("x") == h("y") || h("x") != h("x") {
		t.Error("handles not derived from names")
	}
}

func TestManyConnections(t *testing.T) {
	addr, _ := start(t)
	const conns, per = 16, 300
	var wg sync.WaitGroup
	var bad atomic.Int64
	for i := 0; i < conns; i++ {
		c := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var inner sync.WaitGroup
			for j := 0; j < per; j++ {
				r := nfs3.Request{Proc: nfs3.ProcGetattr, FH: nullserver.RootFH}
				inner.Add(1)
				if err := c.Go(nfs3.Program, nfs3.Version, 1, r.Encode, func(body []byte, err error) {
					defer inner.Done()
					if rep, derr := nfs3.DecodeReply(nfs3.ProcGetattr, body); err != nil || derr != nil || rep.Attr.Type != nfs3.NF3DIR {
						bad.Add(1)
					}
				}); err != nil {
					inner.Done()
					bad.Add(1)
				}
			}
			inner.Wait()
		}()
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d bad calls", bad.Load())
	}
}

func TestPortmapAndErrors(t *testing.T) {
	addr, _ := start(t)
	c := dial(t, addr)
	if _, err := c.Call(rpc.PmapProgram, rpc.PmapVersion, rpc.PmapProcNull, nil); err != nil {
		t.Fatal(err)
	}
	var re *rpc.RPCError
	if _, err := c.Call(rpc.PmapProgram, rpc.PmapVersion, 1 /* SET */, nil); !errors.As(err, &re) || re.AcceptStat != rpc.ProcUnavail {
		t.Errorf("PMAP SET: %v", err)
	}
	if _, err := c.Call(nfs3.MountProgram, 1, 0, nil); !errors.As(err, &re) || re.AcceptStat != rpc.ProgMismatch || re.Low != 3 {
		t.Errorf("MOUNT v1: %v", err)
	}
	if _, err := c.Call(nfs3.MountProgram, 3, nfs3.MountProcMnt, nil); !errors.As(err, &re) || re.AcceptStat != rpc.GarbageArgs {
		t.Errorf("MNT without path: %v", err)
	}
	body, err := c.Call(rpc.PmapProgram, rpc.PmapVersion, rpc.PmapProcDump, nil)
	if ms, derr := rpc.DecodeMappings(body); err != nil || derr != nil || len(ms) != 3 || ms[0].Prog != rpc.PmapProgram {
		t.Errorf("PMAP DUMP: %v %v %v", err, derr, ms)
	}
	body, err = c.Call(nfs3.MountProgram, 3, nfs3.MountProcExport, nil)
	d := xdr.NewDecoder(body)
	if err != nil || !d.Bool() || d.String() != "/" || d.Bool() || d.Bool() || d.Err() != nil {
		t.Errorf("EXPORT: %v %v", err, d.Err())
	}
}

// A call sent in several fragments, and two calls in one write, are answered.
func TestRawFragmentsAndPipelining(t *testing.T) {
	addr, _ := start(t)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	call := func(xid uint32, proc nfs3.Proc, r *nfs3.Request) []byte {
		var e xdr.Encoder
		for _, v := range []uint32{xid, 0, 2, nfs3.Program, nfs3.Version, uint32(proc), 0, 0, 0, 0} {
			e.Uint32(v)
		}
		r.Encode(&e)
		return e.Bytes()
	}
	rec := call(7, nfs3.ProcRead, &nfs3.Request{Proc: nfs3.ProcRead, FH: nfs3.FH{1, 2}, Count: 100})
	var out []byte
	for len(rec) > 0 { // 5-byte fragments
		n := min(5, len(rec))
		h := uint32(n)
		if n == len(rec) {
			h |= 1 << 31
		}
		out = binary.BigEndian.AppendUint32(out, h)
		out = append(out, rec[:n]...)
		rec = rec[n:]
	}
	rec2 := call(8, nfs3.ProcNull, &nfs3.Request{})
	out = binary.BigEndian.AppendUint32(out, 1<<31|uint32(len(rec2)))
	out = append(out, rec2...)
	if _, err := conn.Write(out); err != nil {
		t.Fatal(err)
	}
	rr := rpc.NewRecordReader(bufio.NewReader(conn))
	for _, want := range []uint32{7, 8} {
		rep, err := rr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if xid := binary.BigEndian.Uint32(rep); xid != want {
			t.Fatalf("xid %d want %d", xid, want)
		}
		body, perr := rpc.ParseReply(rep[8:])
		if perr != nil {
			t.Fatal(perr)
		}
		if want == 7 {
			if r, err := nfs3.DecodeReply(nfs3.ProcRead, body); err != nil || r.Count != 100 {
				t.Fatalf("read: %v %+v", err, r)
			}
		}
	}
}

func TestServeStops(t *testing.T) {
	addr, stop := start(t)
	c := dial(t, addr)
	if _, err := c.Call(nfs3.Program, nfs3.Version, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("connection not closed by Serve's return")
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("still listening")
	}
}

func TestMountStatus(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { (&nullserver.Server{MountStatus: 13}).Serve(ctx, ln); close(done) }()
	defer func() { cancel(); <-done }()
	c := dial(t, ln.Addr().String())
	_, err = nfs3.Mount(context.Background(), c, "/export")
	var me *nfs3.MountError
	if !errors.As(err, &me) || me.Status != 13 || me.Export != "/export" || err.Error() != `mount "/export": MNT3ERR_ACCES` {
		t.Fatalf("refused mount: %v", err)
	}
}
