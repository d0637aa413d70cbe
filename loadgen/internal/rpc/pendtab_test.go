package rpc

import (
	"math/rand"
	"testing"
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
