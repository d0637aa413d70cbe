// Package objset is the Fstress weighted object set (seed 003 §4.1): a
// "sparse heap" — an implicit binary tree addressed by index (children of
// node k are 2k and 2k+1, 1-based, no pointers). Every slot stores its own
// weight and the total weight of the subtree rooted at it. Objects stay at
// fixed slots for their whole life, so a slot number is a stable object id.
// Deleted slots keep weight 0 ("free entries have zero weight, but still
// maintain the weight of their subtrees") and are reused by later inserts
// (LIFO free list), so the tree never grows beyond the peak population.
//
// Complexity, n = number of slots: Insert, Delete, SetWeight are O(log n)
// (update the totals on the path to the root); Pick is O(log n) (one walk
// from the root down); Weight, Len, Total are O(1). Subtree totals are
// recomputed from the children on every update (t_k = w_k + t_2k + t_2k+1)
// rather than adjusted by deltas, so floating-point error cannot accumulate
// over millions of updates.
//
// Zero-weight objects are allowed (e.g. SPECsfs97's "only 10% of files are
// accessed"): they are members (Len counts them, Weight returns 0) but Pick
// never returns them.
//
// A Set is not safe for concurrent use.
package objset

import "math"

// Set is a weighted set of objects with O(log n) weighted selection.
type Set struct {
	w     []float64 // w[k]: weight of slot k (1-based; w[0] unused)
	t     []float64 // t[k]: total weight of the subtree rooted at k
	alive []bool
	free  []int // free slot ids (0-based), LIFO
	n     int   // live objects
}

// New returns an empty set with room for capacityHint objects.
func New(capacityHint int) *Set {
	if capacityHint < 0 {
		capacityHint = 0
	}
	s := &Set{
		w:     make([]float64, 1, capacityHint+1),
		t:     make([]float64, 1, capacityHint+1),
		alive: make([]bool, 1, capacityHint+1),
	}
	return s
}

// Insert adds an object of weight w (negative or NaN weights count as 0)
// and returns its id (≥ 0). Freed ids are reused.
func (s *Set) Insert(w float64) int {
	w = clean(w)
	var k int
	if m := len(s.free); m > 0 {
		k = s.free[m-1] + 1
		s.free = s.free[:m-1]
	} else {
		s.w = append(s.w, 0)
		s.t = append(s.t, 0)
		s.alive = append(s.alive, false)
		k = len(s.w) - 1
	}
	s.alive[k] = true
	s.w[k] = w
	s.n++
	s.fix(k)
	return k - 1
}

// Delete removes object id; its slot keeps weight 0 and is reused later.
// Deleting an id that is not live is a no-op.
func (s *Set) Delete(id int) {
	k := id + 1
	if k < 1 || k >= len(s.w) || !s.alive[k] {
		return
	}
	s.alive[k] = false
	s.w[k] = 0
	s.n--
	s.free = append(s.free, id)
	s.fix(k)
}

// SetWeight changes the weight of a live object (no-op for dead ids).
func (s *Set) SetWeight(id int, w float64) {
	k := id + 1
	if k < 1 || k >= len(s.w) || !s.alive[k] {
		return
	}
	s.w[k] = clean(w)
	s.fix(k)
}

// Weight of object id (0 for dead or unknown ids).
func (s *Set) Weight(id int) float64 {
	k := id + 1
	if k < 1 || k >= len(s.w) {
		return 0
	}
	return s.w[k]
}

// Alive reports whether id is a live object.
func (s *Set) Alive(id int) bool {
	k := id + 1
	return k >= 1 && k < len(s.w) && s.alive[k]
}

// Len is the number of live objects.
func (s *Set) Len() int { return s.n }

// Slots is the number of slots ever allocated (ids are in [0, Slots())).
func (s *Set) Slots() int { return len(s.w) - 1 }

// Total is the sum of all live weights.
func (s *Set) Total() float64 {
	if len(s.t) < 2 {
		return 0
	}
	return s.t[1]
}

// Pick selects an object with probability weight/Total, given u uniform in
// [0,1). ok is false when the set holds no positive weight.
//
// Walk (seed 003 §4.1): x = u·Total; at node k, if x < t(left) go left;
// else x −= t(left); if x < w_k pick k; else x −= w_k and go right.
func (s *Set) Pick(u float64) (id int, ok bool) {
	n := len(s.w) - 1
	if n < 1 || s.t[1] <= 0 {
		return -1, false
	}
	if u < 0 {
		u = 0
	}
	x := u * s.t[1]
	k := 1
	last := -1 // last positive-weight node on the path (rounding fallback)
	for k <= n {
		if s.w[k] > 0 {
			last = k
		}
		l := 2 * k
		if l <= n {
			if x < s.t[l] {
				k = l
				continue
			}
			x -= s.t[l]
		}
		if x < s.w[k] {
			return k - 1, true
		}
		x -= s.w[k]
		r := l + 1
		if r > n || s.t[r] <= 0 {
			break
		}
		k = r
	}
	// Only reachable through rounding (x ≈ t of the subtree): the answer is
	// then the right-most positive weight of the current subtree.
	if k <= n {
		if j := s.rightmost(k); j > 0 {
			return j - 1, true
		}
	}
	if last > 0 {
		return last - 1, true
	}
	return -1, false
}

// rightmost positive-weight node in-order within the subtree rooted at k.
func (s *Set) rightmost(k int) int {
	n := len(s.w) - 1
	for k <= n && s.t[k] > 0 {
		r := 2*k + 1
		if r <= n && s.t[r] > 0 {
			k = r
			continue
		}
		if s.w[k] > 0 {
			return k
		}
		k = 2 * k // only the left subtree carries weight
	}
	return 0
}

// Each calls f for every live object in id order.
func (s *Set) Each(f func(id int, w float64)) {
	for k := 1; k < len(s.w); k++ {
		if s.alive[k] {
			f(k-1, s.w[k])
		}
	}
}

// fix recomputes subtree totals from k up to the root: t_k = w_k + t_2k + t_2k+1.
func (s *Set) fix(k int) {
	n := len(s.w) - 1
	for ; k >= 1; k /= 2 {
		t := s.w[k]
		if l := 2 * k; l <= n {
			t += s.t[l]
			if l+1 <= n {
				t += s.t[l+1]
			}
		}
		s.t[k] = t
	}
}

func clean(w float64) float64 {
	if !(w > 0) || math.IsInf(w, 0) {
		if math.IsInf(w, 1) {
			return math.MaxFloat64 / 1e6
		}
		return 0
	}
	return w
}
