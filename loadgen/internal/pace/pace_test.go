package pace

import (
	"math"
	"testing"
	"time"
)

// countIn counts intended sends with a ≤ t_i < b.
func countIn(p Pacer, a, b time.Duration) int64 {
	var n int64
	for i := int64(0); ; i++ {
		t := p.Next(i)
		if t >= b {
			return n
		}
		if t >= a {
			n++
		}
	}
}

func TestConstantWindowCounts(t *testing.T) {
	for _, rate := range []float64{1, 7, 1000, 5000, 33333.3, 150000} {
		c, err := NewConstant(rate)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct{ a, b time.Duration }{
			{0, time.Second}, {250 * time.Millisecond, 1250 * time.Millisecond},
			{time.Millisecond, 3 * time.Millisecond}, {1500 * time.Millisecond, 3 * time.Second},
		} {
			got := float64(countIn(c, w.a, w.b))
			want := (w.b - w.a).Seconds() * rate
			if math.Abs(got-want) > 1 {
				t.Errorf("rate %v window %v..%v: %v sends, want %v±1", rate, w.a, w.b, got, want)
			}
		}
		if n := countIn(c, 0, time.Second); rate == math.Trunc(rate) && n != int64(rate) {
			t.Errorf("rate %v: %d sends in the first second", rate, n)
		}
	}
}

func TestConstantOffsetsAndDue(t *testing.T) {
	c, _ := NewConstant(4000)
	if got := c.Next(0); got != 0 {
		t.Fatalf("t_0 = %v", got)
	}
	if got := c.Next(4000); got != time.Second {
		t.Fatalf("t_4000 = %v, want 1s", got)
	}
	if got := c.Next(1); got != 250*time.Microsecond {
		t.Fatalf("t_1 = %v", got)
	}
	for _, x := range []time.Duration{0, 1, 249 * time.Microsecond, 250 * time.Microsecond, time.Second, 1234567890} {
		d := c.Due(x)
		if !(c.Next(d-1) <= x && c.Next(d) > x) {
			t.Errorf("Due(%v)=%d inconsistent with Next", x, d)
		}
	}
	if c.Due(-1) != 0 {
		t.Error("Due(-1) != 0")
	}
	// long run: no drift after 10^9 ops at 150k/s
	c2, _ := NewConstant(150000)
	if d := c2.Next(1_500_000_000) - 10000*time.Second; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("drift %v after 1.5e9 ops", d)
	}
}

func TestBadRate(t *testing.T) {
	for _, r := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := New(r, false, 1); err == nil {
			t.Errorf("rate %v accepted", r)
		}
		if _, err := New(r, true, 1); err == nil {
			t.Errorf("poisson rate %v accepted", r)
		}
	}
}

func TestPoissonMeanAndCV(t *testing.T) {
	const rate, n = 10000.0, 200000
	p, _ := NewPoisson(rate, 42)
	var sum, sum2 float64
	prev := p.Next(0)
	if prev != 0 {
		t.Fatalf("t_0 = %v", prev)
	}
	for i := int64(1); i <= n; i++ {
		cur := p.Next(i)
		g := float64(cur - prev)
		if g < 0 {
			t.Fatalf("negative gap at %d", i)
		}
		sum += g
		sum2 += g * g
		prev = cur
	}
	mean := sum / n
	sd := math.Sqrt(sum2/n - mean*mean)
	// mean gap 100 µs; its standard error is 100µs/√n ≈ 0.22 µs: allow 1%.
	if math.Abs(mean-1e5)/1e5 > 0.01 {
		t.Errorf("mean gap %.1f ns, want 100000 ±1%%", mean)
	}
	if cv := sd / mean; math.Abs(cv-1) > 0.02 {
		t.Errorf("CV %.4f, want 1 ±0.02", cv)
	}
	// count in 1-second windows ~ Poisson(10000): sd 100; 5 sd bound.
	for k := 0; k < 5; k++ {
		a := time.Duration(k) * time.Second
		got := float64(countIn(p, a, a+time.Second))
		if math.Abs(got-rate) > 500 {
			t.Errorf("window %d: %v sends, want %v±500", k, got, rate)
		}
	}
}

func TestPoissonReproducible(t *testing.T) {
	a, _ := NewPoisson(1000, 7)
	b, _ := NewPoisson(1000, 7)
	c, _ := NewPoisson(1000, 8)
	same := true
	for i := int64(0); i < 1000; i++ {
		x, y, z := a.Next(i), b.Next(i), c.Next(i)
		if x != y {
			t.Fatalf("same seed differs at %d", i)
		}
		if i > 0 && x != z {
			same = false
		}
	}
	if same {
		t.Error("different seeds gave identical sequences")
	}
	// asking out of order replays from the seed
	want := a.Next(500)
	_ = a.Next(900)
	if got := a.Next(500); got != want {
		t.Errorf("replay: %v != %v", got, want)
	}
}
