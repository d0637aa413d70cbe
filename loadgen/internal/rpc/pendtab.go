package rpc

// pendTab is the pending-call table: calls by XID in an array of 2^k
// entries indexed by xid mod 2^k (no hashing, no allocation per call).
// XIDs are handed out in increasing order, so the pending calls occupy a
// sliding window of XIDs and collide only when a call is still pending
// 2^k XIDs later: the next XID then skips that entry (XIDs need only be
// unique among pending calls), and the table doubles when it is over half
// full. Guarded by Client.mu.
type pendTab struct {
	tab []*call
	n   int // calls in the table
}

const pendTabMin = 1024

func (t *pendTab) get(xid uint32) *call {
	if len(t.tab) == 0 {
		return nil
	}
	if cl := t.tab[xid&uint32(len(t.tab)-1)]; cl != nil && cl.xid == xid {
		return cl
	}
	return nil
}

// nextXID is the first XID after last whose entry is free, growing the
// table first when it is over half full; all lists the pending calls
// (the deadline list) for the growth.
func (t *pendTab) nextXID(last uint32, all *call) uint32 {
	if 2*(t.n+1) > len(t.tab) {
		t.grow(all)
	}
	mask := uint32(len(t.tab) - 1)
	xid := last + 1
	for t.tab[xid&mask] != nil { // a call pending since 2^k XIDs ago (at most half the entries are taken)
		xid++
	}
	return xid
}

// put enters cl (its entry is free: nextXID).
func (t *pendTab) put(cl *call) {
	t.tab[cl.xid&uint32(len(t.tab)-1)] = cl
	t.n++
}

func (t *pendTab) remove(cl *call) {
	i := cl.xid & uint32(len(t.tab)-1)
	if t.tab[i] == cl {
		t.tab[i] = nil
		t.n--
	}
}

// grow doubles the table (at least pendTabMin) and re-enters the pending
// calls; calls whose XIDs collide in the new size force a further doubling.
func (t *pendTab) grow(all *call) {
	size := max(2*len(t.tab), pendTabMin)
	for {
		tab := make([]*call, size)
		ok := true
		for cl := all; cl != nil && ok; cl = cl.next {
			i := cl.xid & uint32(size-1)
			ok = tab[i] == nil
			tab[i] = cl
		}
		if ok {
			t.tab = tab
			return
		}
		size *= 2
	}
}
