package nfs4

import "testing"

func TestSlotTable(t *testing.T) {
	st := newSlotTable(130)
	for i := 0; i < 130; i++ {
		if got := st.alloc(); got != i || st.highest != i {
			t.Fatalf("alloc %d: got %d, highest %d", i, got, st.highest)
		}
	}
	if st.alloc() != -1 {
		t.Fatal("alloc beyond the table")
	}
	st.done(129, true, false, false)
	if st.highest != 128 || st.seq[129] != 2 {
		t.Fatalf("after freeing 129: highest %d, seq %d", st.highest, st.seq[129])
	}
	st.done(64, false, true, false) // no reply: advanced, uncertain
	if st.seq[64] != 2 || !st.uncertain[64] || st.alloc() != 64 {
		t.Fatalf("no reply: seq %d uncertain %v", st.seq[64], st.uncertain[64])
	}
	st.done(64, false, false, true) // misordered while uncertain: back
	if st.seq[64] != 1 || st.uncertain[64] {
		t.Fatalf("misordered: seq %d uncertain %v", st.seq[64], st.uncertain[64])
	}
	st.alloc()
	st.done(64, false, false, true) // misordered again: retired
	if st.retired != 1 || st.alloc() != 129 {
		t.Fatalf("retired %d", st.retired)
	}
	for i := 0; i < 130; i++ {
		if i != 64 {
			st.done(i, false, false, false) // e.g. DELAY: seq unchanged
		}
	}
	if st.highest != 64 || st.nUsed != 0 || st.seq[3] != 1 {
		t.Fatalf("highest %d (the retired slot), used %d, seq %d", st.highest, st.nUsed, st.seq[3])
	}
	st.setTarget(1) // the server wants slots 0 and 1 only
	if a, b, c := st.alloc(), st.alloc(), st.alloc(); a != 0 || b != 1 || c != -1 {
		t.Fatalf("after target 1: %d %d %d", a, b, c)
	}
	st.setTarget(1 << 31)
	if st.limit != 130 {
		t.Fatalf("limit %d", st.limit)
	}
	if newSlotTable(0).limit != 1 || len(newSlotTable(1<<20).seq) != MaxSlots {
		t.Fatal("table size not clamped to [1, MaxSlots]")
	}
}
