package rpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/xdr"
)

// rawServer accepts one connection on loopback and runs h on it.
func rawServer(t *testing.T, h func(c net.Conn, rr *rpc.RecordReader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		h(c, rpc.NewRecordReader(bufio.NewReader(c)))
	}()
	t.Cleanup(func() {
		ln.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("raw server did not finish")
		}
	})
	return ln.Addr().String()
}

// successReply builds a record-marked accepted SUCCESS reply.
func successReply(xid uint32, body []byte, fragSizes ...int) []byte {
	var e xdr.Encoder
	e.Uint32(xid)
	e.Uint32(rpc.MsgReply)
	e.Uint32(rpc.MsgAccepted)
	e.Uint32(0)
	e.Uint32(0)
	e.Uint32(rpc.Success)
	rec := append(e.Bytes(), body...)
	var out []byte
	for {
		n := len(rec)
		if len(fragSizes) > 0 && fragSizes[0] < n {
			n, fragSizes = fragSizes[0], fragSizes[1:]
		}
		h := uint32(n)
		if n == len(rec) {
			h |= 0x80000000
		}
		out = binary.BigEndian.AppendUint32(out, h)
		out = append(out, rec[:n]...)
		rec = rec[n:]
		if h&0x80000000 != 0 {
			return out
		}
	}
}

type parsedCall struct {
	xid, prog, vers, proc uint32
	args                  []byte
}

func parseCall(t *testing.T, rec []byte) parsedCall {
	d := xdr.NewDecoder(rec)
	var c parsedCall
	c.xid = d.Uint32()
	if d.Uint32() != rpc.MsgCall || d.Uint32() != 2 {
		t.Errorf("not an RPCv2 call")
	}
	c.prog, c.vers, c.proc = d.Uint32(), d.Uint32(), d.Uint32()
	d.Uint32()
	d.SkipOpaque()
	d.Uint32()
	d.SkipOpaque()
	if d.Err() != nil {
		t.Errorf("call header: %v", d.Err())
	}
	c.args = append([]byte(nil), d.Rest()...)
	return c
}

func u32(v uint32) func(*xdr.Encoder) { return func(e *xdr.Encoder) { e.Uint32(v) } }

func TestCallMessageGolden(t *testing.T) {
	got := make(chan []byte, 1)
	addr := rawServer(t, func(c net.Conn, rr *rpc.RecordReader) {
		// Read raw bytes, including the record mark.
		buf := make([]byte, 4+72)
		if _, err := bufioReadFull(c, buf); err != nil {
			t.Error(err)
		}
		got <- buf
		xid := binary.BigEndian.Uint32(buf[4:])
		c.Write(successReply(xid, nil))
	})
	cl, err := rpc.Dial(addr, rpc.Options{Timeout: 2 * time.Second,
		Auth: rpc.AuthSys{Stamp: 0x11223344, Machine: "host", UID: 1000, GID: 100, GIDs: []uint32{4, 5}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Call(nfs3.Program, nfs3.Version, 0, nil); err != nil {
		t.Fatal(err)
	}
	b := <-got
	want := hx("80000048", "xxxxxxxx", "00000000 00000002 000186a3 00000003 00000000",
		"00000001 00000020 11223344 00000004 686f7374 000003e8 00000064 00000002 00000004 00000005",
		"00000000 00000000")
	copy(want[4:8], b[4:8]) // xid is the client's choice
	if !bytes.Equal(b, want) {
		t.Fatalf("got  % x\nwant % x", b, want)
	}
}

func hx(parts ...string) []byte {
	var out []byte
	for _, p := range parts {
		var cur []byte
		for i := 0; i < len(p); i++ {
			if p[i] == ' ' {
				continue
			}
			cur = append(cur, p[i])
		}
		for i := 0; i+1 < len(cur); i += 2 {
			if cur[i] == 'x' {
				out = append(out, 0)
				continue
			}
			v, err := strconv.ParseUint(string(cur[i:i+2]), 16, 8)
			if err != nil {
				panic(err)
			}
			out = append(out, byte(v))
		}
	}
	return out
}

func bufioReadFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := c.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Replies arrive in reverse order and in several fragments; each goes to its call.
func TestOutOfOrderAndFragments(t *testing.T) {
	const n = 100
	addr := rawServer(t, func(c net.Conn, rr *rpc.RecordReader) {
		var calls []parsedCall
		for len(calls) < n {
			rec, err := rr.Next()
			if err != nil {
				t.Error(err)
				return
			}
			calls = append(calls, parseCall(t, rec))
		}
		var out []byte
		for i := n - 1; i >= 0; i-- {
			cl := calls[i]
			body := cl.args
			if i%10 == 0 { // a big reply, larger than the client's read buffer
				body = append(bytes.Repeat([]byte{byte(i)}, 300<<10), cl.args...)
			}
			out = append(out, successReply(cl.xid, body, 1, 3, 5, 4096, 100000)...)
		}
		c.Write(out)
	})
	cl, err := rpc.Dial(addr, rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var wg sync.WaitGroup
	var bad, calls atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		i := uint32(i)
		err := cl.GoInfo(1234, 1, 7, u32(i), func(body []byte, info rpc.CallInfo, err error) {
			defer wg.Done()
			calls.Add(1)
			want := binary.BigEndian.AppendUint32(nil, i)
			if i%10 == 0 {
				want = append(bytes.Repeat([]byte{byte(i)}, 300<<10), want...)
			}
			if err != nil || !bytes.Equal(body, want) || info.Retransmits != 0 {
				bad.Add(1)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitTimeout(t, &wg, 10*time.Second)
	if bad.Load() != 0 || calls.Load() != n {
		t.Fatalf("%d bad replies, %d callbacks", bad.Load(), calls.Load())
	}
	if st := cl.Stats(); st.Calls != n || st.Replies != n || cl.Outstanding() != 0 {
		t.Fatalf("stats %+v outstanding %d", st, cl.Outstanding())
	}
}

func waitTimeout(t *testing.T, wg *sync.WaitGroup, d time.Duration) {
	t.Helper()
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatal("callbacks did not all run")
	}
}

func TestConcurrentAgainstNullServer(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	cl, err := rpc.Dial(addr, rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const workers, per = 8, 2000
	var wg sync.WaitGroup
	var bad atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var inner sync.WaitGroup
			for i := 0; i < per; i++ {
				req := nfs3.Request{Proc: nfs3.ProcRead, FH: nullserver.RootFH, Count: uint32(i % 100)}
				want := req.Count
				inner.Add(1)
				err := cl.Go(nfs3.Program, nfs3.Version, uint32(req.Proc), req.Encode, func(body []byte, err error) {
					defer inner.Done()
					rep, derr := nfs3.DecodeReply(nfs3.ProcRead, body)
					if err != nil || derr != nil || rep.Status != 0 || rep.Count != want {
						bad.Add(1)
					}
				})
				if err != nil {
					bad.Add(1)
					inner.Done()
				}
				if i%500 == 0 { // interleave synchronous calls
					if _, err := cl.Call(nfs3.Program, nfs3.Version, 0, nil); err != nil {
						bad.Add(1)
					}
				}
			}
			inner.Wait()
		}()
	}
	waitTimeout(t, &wg, 20*time.Second)
	if bad.Load() != 0 {
		t.Fatalf("%d bad calls", bad.Load())
	}
	// A callback may issue the next call.
	done := make(chan error, 1)
	var chain func(left int) func([]byte, error)
	chain = func(left int) func([]byte, error) {
		return func(_ []byte, err error) {
			if err != nil || left == 0 {
				done <- err
				return
			}
			if err := cl.Go(nfs3.Program, nfs3.Version, 0, nil, chain(left-1)); err != nil {
				done <- err
			}
		}
	}
	if err := cl.Go(nfs3.Program, nfs3.Version, 0, nil, chain(100)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("chain stalled")
	}
}

func TestRPCErrors(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	cl, err := rpc.Dial(addr, rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cases := []struct {
		prog, vers, proc uint32
		args             func(*xdr.Encoder)
		want             rpc.RPCError
	}{
		{99, 1, 0, nil, rpc.RPCError{AcceptStat: rpc.ProgUnavail}},
		{nfs3.Program, 5, 0, nil, rpc.RPCError{AcceptStat: rpc.ProgMismatch, Low: 3, High: 4}}, // the null server speaks v3 and v4
		{nfs3.Program, 3, 30, nil, rpc.RPCError{AcceptStat: rpc.ProcUnavail}},
		{nfs3.Program, 3, 1, u32(100), rpc.RPCError{AcceptStat: rpc.GarbageArgs}}, // handle length 100 > 64
	}
	for i, c := range cases {
		_, err := cl.Call(c.prog, c.vers, c.proc, c.args)
		var re *rpc.RPCError
		if !errors.As(err, &re) || *re != c.want {
			t.Errorf("case %d: got %v", i, err)
		}
	}
	if st := cl.Stats(); st.BadReplies != uint64(len(cases)) {
		t.Errorf("stats %+v", st)
	}
}

func TestTimeoutAndRetransmit(t *testing.T) {
	var mu sync.Mutex
	seen := map[uint32]int{}
	srv := &nullserver.Server{Drop: func(prog, vers, proc, xid uint32) bool {
		if proc == 0 {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		seen[xid]++
		// GETATTR: never answered. READ: the first transmission is lost.
		return proc == uint32(nfs3.ProcGetattr) || seen[xid] == 1
	}}
	addr := startNull(t, srv)
	const timeout = 40 * time.Millisecond
	cl, err := rpc.Dial(addr, rpc.Options{Timeout: timeout, MaxRetransmits: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	type res struct {
		info rpc.CallInfo
		err  error
		at   time.Duration
	}
	start := time.Now()
	lost := make(chan res, 1)
	late := make(chan res, 1)
	ga := nfs3.Request{Proc: nfs3.ProcGetattr, FH: nullserver.RootFH}
	rd := nfs3.Request{Proc: nfs3.ProcRead, FH: nullserver.RootFH, Count: 10}
	if err := cl.GoInfo(nfs3.Program, nfs3.Version, 1, ga.Encode, func(_ []byte, info rpc.CallInfo, err error) {
		lost <- res{info, err, time.Since(start)}
	}); err != nil {
		t.Fatal(err)
	}
	if err := cl.GoInfo(nfs3.Program, nfs3.Version, 6, rd.Encode, func(_ []byte, info rpc.CallInfo, err error) {
		late <- res{info, err, time.Since(start)}
	}); err != nil {
		t.Fatal(err)
	}
	// Other calls still complete meanwhile.
	for i := 0; i < 10; i++ {
		if _, err := cl.Call(nfs3.Program, nfs3.Version, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	r := <-late
	if r.err != nil || r.info.Retransmits != 1 {
		t.Errorf("READ: %+v", r)
	}
	r = <-lost
	if !errors.Is(r.err, rpc.ErrTimeout) || r.info.Retransmits != 2 {
		t.Fatalf("GETATTR: %+v", r)
	}
	// Three attempts of 40 ms each (plus the scan period of 5 ms).
	if r.at < 3*timeout || r.at > 3*timeout+500*time.Millisecond {
		t.Errorf("timed out after %v", r.at)
	}
	mu.Lock()
	if seen[r.info.XID] != 3 {
		t.Errorf("server saw GETATTR xid %d %d times, want 3", r.info.XID, seen[r.info.XID])
	}
	mu.Unlock()
	if rt, to := cl.Counters(); rt != 3 || to != 1 {
		t.Errorf("counters: retransmits %d timeouts %d", rt, to)
	}
	if cl.Outstanding() != 0 {
		t.Errorf("outstanding %d", cl.Outstanding())
	}
	// A timed-out call's late reply would be counted as stale; with MaxRetransmits 0 a call fails after one timeout.
	cl0, err := rpc.Dial(addr, rpc.Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer cl0.Close()
	t0 := time.Now()
	if _, err := cl0.Call(nfs3.Program, nfs3.Version, 1, ga.Encode); !errors.Is(err, rpc.ErrTimeout) {
		t.Fatalf("no retransmits: %v", err)
	}
	if el := time.Since(t0); el < timeout || el > timeout+500*time.Millisecond {
		t.Errorf("no retransmits: timed out after %v", el)
	}
}

func TestConnectionLoss(t *testing.T) {
	const n = 10
	addr := rawServer(t, func(c net.Conn, rr *rpc.RecordReader) {
		for i := 0; i < n; i++ {
			if _, err := rr.Next(); err != nil {
				t.Error(err)
				return
			}
		}
		// Answer nothing; drop the connection.
	})
	cl, err := rpc.Dial(addr, rpc.Options{Timeout: 5 * time.Second, MaxRetransmits: 3})
	if err != nil {
		t.Fatal(err)
	}
	var counts [n]atomic.Int32
	var wrong atomic.Int32
	for i := 0; i < n; i++ {
		i := i
		if err := cl.Go(1, 1, 1, nil, func(_ []byte, err error) {
			counts[i].Add(1)
			if !errors.Is(err, rpc.ErrClosed) {
				wrong.Add(1)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-cl.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("client did not notice the dropped connection")
	}
	for i := range counts {
		if counts[i].Load() != 1 {
			t.Errorf("call %d: %d callbacks", i, counts[i].Load())
		}
	}
	if wrong.Load() != 0 {
		t.Errorf("%d callbacks with an error other than ErrClosed", wrong.Load())
	}
	if err := cl.Go(1, 1, 1, nil, func([]byte, error) { t.Error("callback after failed Go") }); !errors.Is(err, rpc.ErrClosed) {
		t.Errorf("Go after loss: %v", err)
	}
	if cl.Outstanding() != 0 {
		t.Errorf("outstanding %d", cl.Outstanding())
	}
	cl.Close()
	cl.Close()
}

func TestCloseWithPending(t *testing.T) {
	addr := startNull(t, &nullserver.Server{Drop: func(_, _, proc, _ uint32) bool { return proc != 0 }})
	cl, err := rpc.Dial(addr, rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Call(nfs3.Program, nfs3.Version, 0, nil); err != nil {
		t.Fatal(err)
	}
	var got atomic.Int32
	for i := 0; i < 50; i++ {
		cl.Go(nfs3.Program, nfs3.Version, 1, nil, func(_ []byte, err error) {
			if errors.Is(err, rpc.ErrClosed) {
				got.Add(1)
			}
		})
	}
	cl.Close()
	select {
	case <-cl.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed")
	}
	if got.Load() != 50 {
		t.Fatalf("%d of 50 pending calls got ErrClosed", got.Load())
	}
	if _, err := cl.Call(nfs3.Program, nfs3.Version, 0, nil); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("Call after Close: %v", err)
	}
}

func TestGetPort(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	_, portStr, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, prog := range []uint32{nfs3.Program, nfs3.MountProgram} {
		p, err := rpc.GetPort(ctx, addr, prog, 3)
		if err != nil || strconv.Itoa(int(p)) != portStr {
			t.Errorf("GETPORT(%d): %d %v, want %s", prog, p, err, portStr)
		}
	}
	if _, err := rpc.GetPort(ctx, addr, 100021, 4); err == nil {
		t.Error("unregistered program: no error")
	}
	// Nothing listens: a clear error.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	if _, err := rpc.GetPort(ctx, dead, nfs3.Program, 3); err == nil {
		t.Error("dead portmapper: no error")
	}
}

func TestCallContext(t *testing.T) {
	addr := startNull(t, &nullserver.Server{Drop: func(_, _, proc, _ uint32) bool { return proc == 1 }})
	cl, err := rpc.Dial(addr, rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := cl.CallContext(ctx, nfs3.Program, nfs3.Version, 1, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}

func TestDialFailure(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	if _, err := rpc.Dial(dead, rpc.Options{Timeout: time.Second}); err == nil {
		t.Fatal("no error")
	}
}

func TestGoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	addr := startNull(t, &nullserver.Server{})
	cl, err := rpc.Dial(addr, rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := nfs3.Request{Proc: nfs3.ProcGetattr, FH: nullserver.RootFH}
	args := req.Encode
	ch := make(chan struct{}, 1)
	done := func([]byte, error) { ch <- struct{}{} }
	for i := 0; i < 100; i++ { // warm up pools and buffers
		cl.Go(nfs3.Program, nfs3.Version, 1, args, done)
		<-ch
	}
	n := testing.AllocsPerRun(1000, func() {
		cl.Go(nfs3.Program, nfs3.Version, 1, args, done)
		<-ch
	})
	if n > 0.1 {
		t.Errorf("%v allocs per call", n)
	}
}
