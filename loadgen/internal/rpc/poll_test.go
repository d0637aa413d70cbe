package rpc_test

import (
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/rpc"
)

// polledClient is a client of a fresh null server in polled mode, closed at the test's end.
func polledClient(t *testing.T) *rpc.Client {
	t.Helper()
	cl, err := rpc.Dial(startNull(t, &nullserver.Server{}), rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if err := cl.SetPolled(true); err != nil {
		t.Fatal(err)
	}
	return cl
}

// Polled mode: the caller reads the replies with Poll; each callback gets
// the kernel's receive time, after the send and before the Poll (replies
// that waited 30 ms in the socket show that age); back in the default
// mode the reader goroutine answers again.
func TestPolledReplies(t *testing.T) {
	cl := polledClient(t)
	var maxAge time.Duration
	for round := 0; round < 3 && maxAge < 20*time.Millisecond; round++ { // a starved server may answer late: try again
		maxAge = pollRound(t, cl)
	}
	if maxAge < 20*time.Millisecond {
		t.Errorf("receive times are not the kernel's: largest age at the poll %v", maxAge)
	}
	if err := cl.SetPolled(false); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Call(nfs3.Program, nfs3.Version, 0, nil); err != nil {
		t.Fatalf("default mode again: %v", err)
	}
}

// pollRound sends 200 GETATTRs, polls every 30 ms until all are answered
// and returns the largest age of a reply's receive time at its poll.
func pollRound(t *testing.T, cl *rpc.Client) time.Duration {
	t.Helper()
	req := nfs3.Request{Proc: nfs3.ProcGetattr, FH: nullserver.RootFH}
	const n = 200
	var got int
	var bad []string
	var maxAge time.Duration
	sent := time.Now()
	for i := 0; i < n; i++ {
		err := cl.GoQueued(nfs3.Program, nfs3.Version, 1, req.Encode, func(body []byte, info rpc.CallInfo, err error) {
			got++
			switch now := time.Now(); {
			case err != nil:
				bad = append(bad, err.Error())
			case info.Arrived.Before(sent) || info.Arrived.After(now):
				bad = append(bad, "arrival "+info.Arrived.Sub(sent).String()+" after the send, poll at "+now.Sub(sent).String())
			}
			maxAge = max(maxAge, time.Since(info.Arrived))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	cl.Flush()
	for deadline := time.Now().Add(5 * time.Second); got < n && time.Now().Before(deadline); {
		time.Sleep(30 * time.Millisecond) // replies wait in the socket: Poll finds them with their times
		if err := cl.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	if got != n || len(bad) > 0 {
		t.Fatalf("%d of %d replies, bad: %v", got, n, bad)
	}
	return maxAge
}

// A connection lost while polled fails the pending calls once each.
func TestPolledConnectionLost(t *testing.T) {
	addr := startNull(t, &nullserver.Server{Drop: func(prog, vers, proc, xid uint32) bool { return true }})
	cl, err := rpc.Dial(addr, rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.SetPolled(true); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 10)
	for i := 0; i < 10; i++ {
		cl.GoInfo(nfs3.Program, nfs3.Version, 0, nil, func(_ []byte, _ rpc.CallInfo, err error) { done <- err })
	}
	cl.Close()
	for i := 0; i < 10; i++ {
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("a call succeeded")
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of 10 calls got no callback", i)
		}
	}
	<-cl.Done()
}

// A Poll that ends after a short read (no EAGAIN call) loses nothing: the
// reply of each later round is found by a later Poll.
func TestPollAfterShortRead(t *testing.T) {
	cl := polledClient(t)
	req := nfs3.Request{Proc: nfs3.ProcGetattr, FH: nullserver.RootFH}
	got := 0
	for round := 1; round <= 5; round++ {
		if err := cl.GoQueued(nfs3.Program, nfs3.Version, 1, req.Encode, func([]byte, rpc.CallInfo, error) { got++ }); err != nil {
			t.Fatal(err)
		}
		cl.Flush()
		for deadline := time.Now().Add(2 * time.Second); got < round && time.Now().Before(deadline); {
			time.Sleep(2 * time.Millisecond)
			if err := cl.Poll(); err != nil {
				t.Fatal(err)
			}
		}
		if got != round {
			t.Fatalf("round %d: %d replies", round, got)
		}
	}
}
