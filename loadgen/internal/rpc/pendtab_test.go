package rpc

import (
	"io"
	"math/rand"
	"net"
	"testing"
	"time"
)

// The pending table against a map: random lifetimes (some calls stay
// pending for many table sizes of XIDs), XIDs unique among pending calls,
// every pending call found by its XID, none found after removal.
func TestPendTab(t *testing.T) {
	var tab pendTab
	var head, tail *call
	push := func(cl *call) {
		cl.prev, cl.next = tail, nil
		if tail != nil {
			tail.next = cl
		} else {
			head = cl
		}
		tail = cl
	}
	unlink := func(cl *call) {
		if cl.prev != nil {
			cl.prev.next = cl.next
		} else {
			head = cl.next
		}
		if cl.next != nil {
			cl.next.prev = cl.prev
		} else {
			tail = cl.prev
		}
	}
	ref := map[uint32]*call{}
	var live []*call
	rng := rand.New(rand.NewSource(1))
	xid := uint32(0xfffff000) // wraps around
	for i := 0; i < 200000; i++ {
		if len(live) < 3000 && rng.Intn(3) > 0 || len(live) == 0 {
			xid = tab.nextXID(xid, head)
			if ref[xid] != nil {
				t.Fatalf("xid %d handed out twice", xid)
			}
			cl := &call{xid: xid}
			tab.put(cl)
			push(cl)
			ref[xid] = cl
			live = append(live, cl)
			continue
		}
		j := rng.Intn(len(live))
		if j == 0 && rng.Intn(100) > 0 {
			continue // the oldest call stays pending for long
		}
		cl := live[j]
		live[j] = live[len(live)-1]
		live = live[:len(live)-1]
		if tab.get(cl.xid) != cl {
			t.Fatalf("xid %d not found", cl.xid)
		}
		tab.remove(cl)
		unlink(cl)
		delete(ref, cl.xid)
		if tab.get(cl.xid) != nil {
			t.Fatalf("xid %d found after removal", cl.xid)
		}
	}
	if tab.n != len(ref) {
		t.Errorf("table holds %d, want %d", tab.n, len(ref))
	}
	for x, cl := range ref {
		if tab.get(x) != cl {
			t.Errorf("xid %d lost", x)
		}
	}
	t.Logf("table size %d for %d pending", len(tab.tab), tab.n)
}

// Queued calls share one clock read per batch for their deadlines (the
// first call's); Flush ends the batch, and a call not queued reads the
// clock itself.
func TestQueuedBatchSharesClock(t *testing.T) {
	a, b := net.Pipe()
	go io.Copy(io.Discard, b)
	c := NewClient(a, Options{Timeout: time.Minute})
	defer c.Close()
	done := func([]byte, CallInfo, error) {}
	deadlines := func() []int64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		var ds []int64
		for cl := c.head; cl != nil; cl = cl.next {
			ds = append(ds, cl.deadline)
		}
		return ds
	}
	for i := 0; i < 3; i++ {
		if err := c.GoQueued(100003, 3, 0, nil, done); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	if err := c.GoQueued(100003, 3, 0, nil, done); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	if err := c.GoInfo(100003, 3, 0, nil, done); err != nil {
		t.Fatal(err)
	}
	ds := deadlines()
	if len(ds) != 5 {
		t.Fatalf("%d pending calls, want 5", len(ds))
	}
	if ds[0] != ds[1] || ds[1] != ds[2] {
		t.Errorf("one batch, deadlines %v: want one clock", ds[:3])
	}
	if ds[3] < ds[2]+int64(time.Millisecond) || ds[4] < ds[3]+int64(time.Millisecond) {
		t.Errorf("after the Flush, deadlines %v: want a new clock for the next batch and for a call not queued", ds)
	}
}
