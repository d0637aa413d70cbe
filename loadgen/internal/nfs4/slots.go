package nfs4

import "math/bits"

// MaxSlots caps the slot table whatever the server grants.
const MaxSlots = 1024

// slotTable is the client's view of a session's fore-channel slots
// (RFC 8881 §2.10.6.1): the sequence id each slot sends next, which slots
// have a request outstanding, the highest such slot, and how many slots
// the server currently wants used. It is guarded by Session.mu.
//
// A slot's sequence id advances when its request got a reply whose
// SEQUENCE was executed (NFS4_OK). A request that got no reply (timeout,
// lost connection) leaves the slot uncertain: the server may or may not
// have executed it. The next request on the slot then uses the advanced
// id; if the server answers NFS4ERR_SEQ_MISORDERED the earlier request
// was never executed, so the id is stepped back. A slot misordered for any
// other reason is retired (never used again in this session).
type slotTable struct {
	seq       []uint32
	uncertain []bool
	used      []uint64 // bit per slot: outstanding or retired
	retired   int
	nUsed     int
	highest   int // highest slot with a request outstanding, -1 when none
	limit     int // slots usable now: server's target highest slot id + 1
}

func newSlotTable(n int) slotTable {
	n = max(1, min(n, MaxSlots))
	t := slotTable{seq: make([]uint32, n), uncertain: make([]bool, n),
		used: make([]uint64, (n+63)/64), highest: -1, limit: n}
	for i := range t.seq {
		t.seq[i] = 1 // the first request on a slot uses sequence id 1
	}
	return t
}

// alloc takes the lowest free slot below limit; -1 when none is free.
func (t *slotTable) alloc() int {
	for w, word := range t.used {
		if word == ^uint64(0) {
			continue
		}
		i := w*64 + bits.TrailingZeros64(^word)
		if i >= t.limit || i >= len(t.seq) {
			return -1
		}
		t.used[w] |= 1 << (i % 64)
		t.nUsed++
		if i > t.highest {
			t.highest = i
		}
		return i
	}
	return -1
}

// release frees slot i and recomputes the highest outstanding slot.
func (t *slotTable) release(i int) {
	t.used[i/64] &^= 1 << (i % 64)
	t.nUsed--
	if i == t.highest {
		t.highest = t.highestUsed(i)
	}
}

// highestUsed is the highest slot below from whose bit is set (retired
// slots count: they are rare), -1 when none.
func (t *slotTable) highestUsed(from int) int {
	for w := from / 64; w >= 0; w-- {
		word := t.used[w]
		if w == from/64 {
			word &= 1<<(from%64) - 1
		}
		if word != 0 {
			return w*64 + 63 - bits.LeadingZeros64(word)
		}
	}
	return -1
}

// done records the outcome of the request on slot i and frees or retires
// the slot. executed: the reply's SEQUENCE succeeded; noReply: no reply
// came; misordered: the reply was NFS4ERR_SEQ_MISORDERED.
func (t *slotTable) done(i int, executed, noReply, misordered bool) {
	switch {
	case executed:
		t.seq[i]++
		t.uncertain[i] = false
	case noReply:
		t.seq[i]++
		t.uncertain[i] = true
	case misordered && t.uncertain[i]:
		t.seq[i]--
		t.uncertain[i] = false
	case misordered:
		t.retired++ // keep the bit set: never allocated again
		t.nUsed--
		if i == t.highest {
			t.highest = t.highestUsed(i)
		}
		return
	}
	t.release(i)
}

// setTarget applies the server's sr_target_highest_slotid.
func (t *slotTable) setTarget(target uint32) {
	t.limit = int(min(uint64(target)+1, uint64(len(t.seq))))
}
