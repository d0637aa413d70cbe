package workload

import (
	"math"
	"math/rand"
	"testing"

	"workbench/loadgen/internal/nfs3"
)

// maxDev runs n picks and returns the largest |actual − target| share in
// percentage points over all ops, checked at every checkpoint ≤ n in cps
// (each checkpoint is "the run stopped here").
func maxDev(s *Scheduler, mix []MixEntry, cps []int) []float64 {
	target := map[nfs3.Proc]float64{}
	for _, e := range mix {
		target[e.Proc] = e.Weight
	}
	counts := map[nfs3.Proc]int{}
	out := make([]float64, len(cps))
	n := 0
	for ci, cp := range cps {
		for ; n < cp; n++ {
			p := s.Next()
			if _, ok := target[p]; !ok {
				panic("scheduler produced an op outside the mix")
			}
			counts[p]++
		}
		worst := 0.0
		for p, w := range target {
			d := math.Abs(float64(counts[p])/float64(n)-w) * 100
			worst = math.Max(worst, d)
		}
		out[ci] = worst
	}
	return out
}

// TestSchedulerMix100k is the acceptance criterion: per-op actual mix within
// 0.1 percentage point of the target after 100k ops, for every canned mix.
func TestSchedulerMix100k(t *testing.T) {
	for _, name := range Canned() {
		w, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{100_000, 100_037} { // a block boundary and a mid-block stop
			d := maxDev(NewScheduler(w.Mix, 42), w.Mix, []int{n})[0]
			if d > 0.1 {
				t.Errorf("%s: max mix deviation %.4f pp after %d ops (limit 0.1)", name, d, n)
			}
			if d > 0.02 {
				t.Errorf("%s: max mix deviation %.4f pp after %d ops, documented ≤ 0.02", name, d, n)
			}
		}
	}
}

// TestSchedulerShortRuns measures the worst deviation, over the eight canned
// mixes, seeds 1..20 and every stopping point in (n/2, n], for the bounds
// stated in the Scheduler doc.
func TestSchedulerShortRuns(t *testing.T) {
	bounds := []struct {
		n     int
		limit float64 // pp, as documented
	}{{100, 15}, {1000, 2}, {10000, 0.2}, {100000, 0.02}}
	worst := make([]float64, len(bounds))
	for _, name := range Canned() {
		w, _ := Load(name)
		for seed := int64(1); seed <= 20; seed++ {
			s := NewScheduler(w.Mix, seed)
			var cps []int
			for _, b := range bounds {
				for n := b.n/2 + 1; n <= b.n; n += step(b.n) {
					cps = append(cps, n)
				}
			}
			devs := maxDev(s, w.Mix, cps)
			i := 0
			for bi, b := range bounds {
				for n := b.n/2 + 1; n <= b.n; n += step(b.n) {
					worst[bi] = math.Max(worst[bi], devs[i])
					i++
				}
			}
			if seed > 3 {
				break // long prefixes: three seeds are plenty (keep the test fast)
			}
		}
	}
	for i, b := range bounds {
		t.Logf("n in (%d, %d]: worst per-op deviation %.4f pp (documented bound %.3f)", b.n/2, b.n, worst[i], b.limit)
		if worst[i] > b.limit {
			t.Errorf("n ≈ %d: worst deviation %.4f pp exceeds documented %.3f", b.n, worst[i], b.limit)
		}
	}
}

// step between checkpoints: every op for short runs, else an odd stride so
// that most checkpoints fall inside a block (the worst case).
func step(n int) int {
	if n <= 1000 {
		return 1
	}
	return n/100 + 7
}

func TestSchedulerBlockExact(t *testing.T) {
	// At block boundaries each count is within one op of its target, also
	// for mixes that are not whole percentages.
	r := rand.New(rand.NewSource(5))
	mixes := [][]MixEntry{}
	for _, name := range Canned() {
		w, _ := Load(name)
		mixes = append(mixes, w.Mix)
	}
	for k := 0; k < 5; k++ {
		var m []MixEntry
		tot := 0.0
		for p := 0; p < 3+r.Intn(19); p++ {
			x := r.ExpFloat64() * math.Pi
			m = append(m, MixEntry{nfs3.Proc(p), x})
			tot += x
		}
		for i := range m {
			m[i].Weight /= tot
		}
		mixes = append(mixes, m)
	}
	for mi, mix := range mixes {
		s := NewScheduler(mix, 9)
		counts := map[nfs3.Proc]int{}
		for b := 1; b <= 300; b++ {
			for i := 0; i < BlockSize; i++ {
				counts[s.Next()]++
			}
			n := float64(b * BlockSize)
			for _, e := range mix {
				if d := math.Abs(float64(counts[e.Proc]) - e.Weight*n); d >= 1 {
					t.Fatalf("mix %d block %d: %s count %d vs target %.2f", mi, b, e.Proc, counts[e.Proc], e.Weight*n)
				}
			}
		}
	}
}

func TestSchedulerDeterministic(t *testing.T) {
	w, _ := Load("web_proxy")
	a, b, c := NewScheduler(w.Mix, 1), NewScheduler(w.Mix, 1), NewScheduler(w.Mix, 2)
	same, diff := true, false
	for i := 0; i < 1000; i++ {
		x, y, z := a.Next(), b.Next(), c.Next()
		same = same && x == y
		diff = diff || x != z
	}
	if !same || !diff {
		t.Errorf("same seed same sequence: %v; different seed differs: %v", same, diff)
	}
	// Tiny weights still appear at their rate: 1 in 1000.
	mix := []MixEntry{{nfs3.ProcNull, 0.999}, {nfs3.ProcFsinfo, 0.001}}
	s := NewScheduler(mix, 3)
	n := 0
	for i := 0; i < 100000; i++ {
		if s.Next() == nfs3.ProcFsinfo {
			n++
		}
	}
	if n != 100 {
		t.Errorf("0.1%% op appeared %d times in 100k", n)
	}
	if NewScheduler(nil, 1).Next() != nfs3.ProcNull {
		t.Error("empty mix")
	}
}

func BenchmarkSchedulerNext(b *testing.B) {
	w, _ := Load("specsfs97")
	s := NewScheduler(w.Mix, 1)
	for i := 0; i < b.N; i++ {
		s.Next()
	}
}
