package objset

import (
	"math"
	"math/rand"
	"testing"
)

// chiSquareCrit is the upper critical value of χ² with df degrees of freedom
// at the one-sided normal quantile z, by the Wilson–Hilferty approximation:
// χ²_p ≈ df·(1 − 2/(9df) + z·√(2/(9df)))³ (Wilson & Hilferty 1931; accurate to
// <1% for df ≥ 10). z = 3.0902 is the 0.999 quantile of N(0,1).
func chiSquareCrit(df int, z float64) float64 {
	k := float64(df)
	a := 2 / (9 * k)
	return k * math.Pow(1-a+z*math.Sqrt(a), 3)
}

const z999 = 3.0902 // Φ⁻¹(0.999)

// chiSquare draws n picks and returns Pearson's statistic Σ (O−E)²/E over the
// live positive-weight objects, with its degrees of freedom, and the number of
// picks that landed on a dead or zero-weight object.
func chiSquare(t *testing.T, s *Set, r *rand.Rand, n int) (stat float64, df int, bad int) {
	t.Helper()
	obs := make([]int, s.Slots())
	for i := 0; i < n; i++ {
		id, ok := s.Pick(r.Float64())
		if !ok {
			t.Fatal("Pick failed on a non-empty set")
		}
		if !s.Alive(id) || s.Weight(id) <= 0 {
			bad++
			continue
		}
		obs[id]++
	}
	total := s.Total()
	cells := 0
	s.Each(func(id int, w float64) {
		if w <= 0 {
			return
		}
		e := float64(n) * w / total // E_i = n·w_i/W
		d := float64(obs[id]) - e
		stat += d * d / e // Pearson: Σ (O_i − E_i)² / E_i
		cells++
	})
	return stat, cells - 1, bad
}

func TestCritValue(t *testing.T) {
	// Table values (e.g. NIST/SEMATECH e-Handbook, 1.3.6.7.4): χ²(0.999; 50) = 86.661, χ²(0.999; 100) = 149.449.
	for _, c := range []struct {
		df   int
		want float64
	}{{50, 86.661}, {100, 149.449}} {
		if got := chiSquareCrit(c.df, z999); math.Abs(got-c.want)/c.want > 0.005 {
			t.Errorf("WH crit df=%d: %.3f want %.3f", c.df, got, c.want)
		}
	}
}

func TestPickChiSquare(t *testing.T) {
	r := rand.New(rand.NewSource(20240601))
	const nObj = 100
	s := New(nObj)
	for i := 1; i <= nObj; i++ {
		s.Insert(math.Pow(float64(i), -0.8)) // Zipf(0.8) weights
	}
	const picks = 200000
	stat, df, bad := chiSquare(t, s, r, picks)
	crit := chiSquareCrit(df, z999)
	t.Logf("initial: χ² = %.1f, df = %d, critical(0.999) = %.1f", stat, df, crit)
	if bad != 0 || stat > crit {
		t.Fatalf("initial: χ² %.1f > %.1f (df %d) or %d bad picks", stat, crit, df, bad)
	}

	// Delete a third (every third id), reweight some, insert new objects
	// (which reuse the freed slots), add a zero-weight member.
	deleted := map[int]bool{}
	for id := 0; id < nObj; id += 3 {
		s.Delete(id)
		deleted[id] = true
	}
	for id := 1; id < nObj; id += 7 {
		if !deleted[id] {
			s.SetWeight(id, 2.5)
		}
	}
	slots := s.Slots()
	var reused []int
	for i := 0; i < 20; i++ {
		id := s.Insert(0.05 + 0.1*float64(i))
		if !deleted[id] {
			t.Fatalf("insert got fresh id %d while free slots exist", id)
		}
		delete(deleted, id)
		reused = append(reused, id)
	}
	if s.Slots() != slots {
		t.Fatalf("slots grew from %d to %d despite free slots", slots, s.Slots())
	}
	zero := s.Insert(0)
	delete(deleted, zero)
	for id := range deleted {
		if s.Alive(id) || s.Weight(id) != 0 {
			t.Fatalf("deleted id %d still alive", id)
		}
	}

	stat, df, bad = chiSquare(t, s, r, picks)
	crit = chiSquareCrit(df, z999)
	t.Logf("after deletes/inserts/reweights: χ² = %.1f, df = %d, critical(0.999) = %.1f", stat, df, crit)
	if bad != 0 {
		t.Fatalf("%d picks hit deleted or zero-weight objects", bad)
	}
	if stat > crit {
		t.Fatalf("after updates: χ² %.1f > %.1f (df %d)", stat, crit, df)
	}

	// Growth beyond the initial slots after all free slots are used.
	for i := 0; i < 50; i++ {
		s.Insert(1)
	}
	stat, df, bad = chiSquare(t, s, r, picks)
	crit = chiSquareCrit(df, z999)
	t.Logf("after growth: χ² = %.1f, df = %d, critical = %.1f", stat, df, crit)
	if bad != 0 || stat > crit {
		t.Fatalf("after growth: χ² %.1f > %.1f (df %d), %d bad", stat, crit, df, bad)
	}
}

// TestRandomOps checks the subtree totals against a brute-force sum after a
// long random sequence of inserts, deletes and reweights.
func TestRandomOps(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	s := New(0)
	ref := map[int]float64{}
	for step := 0; step < 20000; step++ {
		switch op := r.Intn(10); {
		case op < 5 || len(ref) == 0:
			w := r.ExpFloat64()
			id := s.Insert(w)
			if _, dup := ref[id]; dup {
				t.Fatalf("insert returned live id %d", id)
			}
			ref[id] = w
		case op < 8:
			for id := range ref {
				s.Delete(id)
				delete(ref, id)
				break
			}
		default:
			for id := range ref {
				w := r.ExpFloat64()
				s.SetWeight(id, w)
				ref[id] = w
				break
			}
		}
	}
	sum := 0.0
	for _, w := range ref {
		sum += w
	}
	if s.Len() != len(ref) {
		t.Fatalf("Len %d want %d", s.Len(), len(ref))
	}
	if math.Abs(s.Total()-sum) > 1e-9*sum {
		t.Fatalf("Total %v want %v", s.Total(), sum)
	}
	if s.Slots() > 20000 {
		t.Fatalf("slots %d", s.Slots())
	}
	// every u in [0,1) lands on a live positive object, including the edges
	for _, u := range []float64{0, 1e-300, 0.5, 0.999999999999, math.Nextafter(1, 0)} {
		id, ok := s.Pick(u)
		if !ok || ref[id] <= 0 {
			t.Fatalf("Pick(%v) = %d, %v", u, id, ok)
		}
	}
}

func TestEdgeCases(t *testing.T) {
	s := New(4)
	if _, ok := s.Pick(0.3); ok {
		t.Fatal("pick on empty set")
	}
	a := s.Insert(0)
	if _, ok := s.Pick(0.3); ok || s.Len() != 1 {
		t.Fatal("zero-weight-only set must not pick")
	}
	b := s.Insert(2)
	for i := 0; i < 100; i++ {
		if id, ok := s.Pick(float64(i) / 100); !ok || id != b {
			t.Fatalf("picked %d", id)
		}
	}
	s.Delete(b)
	s.Delete(b) // double delete is a no-op
	s.Delete(99)
	s.SetWeight(b, 5) // dead: no-op
	if s.Total() != 0 || s.Len() != 1 {
		t.Fatalf("total %v len %d", s.Total(), s.Len())
	}
	if id := s.Insert(1); id != b {
		t.Fatalf("freed slot not reused: %d", id)
	}
	s.SetWeight(a, -1) // negative → 0
	if s.Weight(a) != 0 || s.Insert(math.NaN()) < 0 {
		t.Fatal("clean")
	}
}

func BenchmarkPick(b *testing.B) {
	s := New(1 << 16)
	for i := 1; i <= 1<<16; i++ {
		s.Insert(math.Pow(float64(i), -0.8))
	}
	r := rand.New(rand.NewSource(1))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Pick(r.Float64())
	}
}
