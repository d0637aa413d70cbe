// Package pace is the fstress metronome: it says WHEN the i-th request is
// intended to be sent, as an offset from the start of the run.
//
// A Pacer is a one-method interface in the style of vegeta's lib/pacer.go:
// the run loop asks for Next(i) for i = 0, 1, 2, ... and sends request i as
// soon as the clock has reached start+Next(i). Latency is measured from that
// INTENDED time, not from the moment the request actually left, so a slow
// server (or a slow generator) cannot hide queueing delay ("coordinated
// omission"). The difference actual − intended is the send lag.
//
// Two metronomes:
//
//	Constant (Fstress default, seed 003 §3.2 "Load level"):
//	    t_i = i / λ                                     (λ = rate in ops/s)
//	  so the number of intended sends in any window [a, b) is
//	    |{i : a ≤ t_i < b}| = ⌈bλ⌉ − ⌈aλ⌉ ∈ {⌊(b−a)λ⌋, ⌈(b−a)λ⌉},
//	  i.e. off from (b−a)λ by less than one.
//
//	Poisson (open-loop Poisson arrivals):
//	    t_0 = 0,  t_i = t_{i−1} + G_i,  G_i ~ Exp(λ) i.i.d.
//	  E[G] = 1/λ, Var[G] = 1/λ², so the coefficient of variation
//	  CV = σ/μ = 1; the count in a window of length T is Poisson(λT)
//	  (mean λT, standard deviation √(λT)). G_i is drawn by inversion:
//	  G = −ln(U)/λ with U uniform in (0,1] (rand.ExpFloat64 does the same
//	  with the ziggurat method). The sequence is fully determined by the seed.
//
// Offsets are float64 seconds internally: with 53 bits of mantissa the
// rounding error of i/λ stays below 1 ns for runs far longer than any
// benchmark (2^53 ns ≈ 104 days).
package pace

import (
	"fmt"
	"math"
	"math/rand"
	"time"
)

// Pacer gives the intended send offset of the i-th request (i ≥ 0) from the
// start of the run. Offsets are non-decreasing in i.
type Pacer interface {
	Next(i int64) time.Duration
}

// Constant is the fixed-rate metronome: t_i = i/Rate.
type Constant struct {
	Rate   float64 // ops per second, > 0
	period float64 // ns per op = 1e9/Rate
}

// NewConstant returns the fixed-rate pacer for rate ops/s.
func NewConstant(rate float64) (*Constant, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("rate must be > 0 ops/s (got %v)", rate)
	}
	return &Constant{Rate: rate, period: 1e9 / rate}, nil
}

// Next returns i/Rate. It is stateless and can be called in any order.
func (c *Constant) Next(i int64) time.Duration {
	return time.Duration(float64(i) * c.period)
}

// Due returns how many requests are due by offset t, i.e. the smallest i with
// t_i > t: |{i ≥ 0 : i/λ ≤ t}| = ⌊tλ⌋ + 1 for t ≥ 0.
func (c *Constant) Due(t time.Duration) int64 {
	if t < 0 {
		return 0
	}
	return int64(math.Floor(float64(t)/c.period)) + 1
}

// Poisson is the Poisson-arrival metronome: exponential gaps with mean
// 1/Rate, drawn from a seeded generator. Next is meant to be called with
// i = 0, 1, 2, ... in order (amortised O(1)); asking for an earlier i
// replays the sequence from the seed (O(i)), so results are reproducible.
// A Poisson pacer is not safe for concurrent use.
type Poisson struct {
	Rate float64
	Seed int64

	rng  *rand.Rand
	i    int64   // index of cur
	cur  float64 // t_i in ns
	mean float64 // 1e9/Rate ns
}

// NewPoisson returns a Poisson pacer with the given rate and seed.
func NewPoisson(rate float64, seed int64) (*Poisson, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("rate must be > 0 ops/s (got %v)", rate)
	}
	p := &Poisson{Rate: rate, Seed: seed, mean: 1e9 / rate}
	p.reset()
	return p, nil
}

func (p *Poisson) reset() {
	p.rng = rand.New(rand.NewSource(p.Seed))
	p.i, p.cur = 0, 0
}

// Next returns t_i = Σ_{k=1..i} G_k with G_k = ExpFloat64()/Rate.
func (p *Poisson) Next(i int64) time.Duration {
	if i < p.i {
		p.reset()
	}
	for p.i < i {
		p.cur += p.rng.ExpFloat64() * p.mean
		p.i++
	}
	return time.Duration(p.cur)
}

// New returns a Constant pacer, or a Poisson one when poisson is true.
func New(rate float64, poisson bool, seed int64) (Pacer, error) {
	if poisson {
		return NewPoisson(rate, seed)
	}
	return NewConstant(rate)
}
