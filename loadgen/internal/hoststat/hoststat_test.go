package hoststat

import (
	"math"
	"testing"
)

const statA = `cpu  100 5 50 800 10 1 4 30 7 0
cpu0 50 2 25 400 5 1 2 15 7 0
cpu1 50 3 25 400 5 0 2 15 0 0
intr 12345
`

const statB = `cpu  160 5 80 1500 10 1 4 70 20 0
cpu0 80 2 40 750 5 1 2 35 20 0
`

func TestParseSumsUserToSteal(t *testing.T) {
	a, err := Parse(statA)
	if err != nil {
		t.Fatal(err)
	}
	// 100+5+50+800+10+1+4+30 = 1000; guest (7) is inside user and not added again
	if a.Total != 1000 || a.Steal != 30 || a.Idle != 810 {
		t.Fatalf("got %+v, want Total 1000 Steal 30 Idle 810", a)
	}
}

func TestStealPctHandComputed(t *testing.T) {
	a, _ := Parse(statA)
	b, _ := Parse(statB)
	// total_b = 160+5+80+1500+10+1+4+70 = 1830; Δtotal = 830, Δsteal = 40 → 4.819 %
	pct, ok := StealPct(a, b)
	if !ok || math.Abs(pct-100*40.0/830.0) > 1e-12 {
		t.Fatalf("StealPct = %v, %v; want %v", pct, ok, 100*40.0/830.0)
	}
	if _, ok := StealPct(b, a); ok {
		t.Fatal("counters going backwards must not give a share")
	}
	if _, ok := StealPct(a, a); ok {
		t.Fatal("no tick passed must not give a share")
	}
}

func TestParseRejectsWhatItCannotRead(t *testing.T) {
	for _, text := range []string{
		"",
		"cpu0 1 2 3 4 5 6 7 8\n",      // per-CPU line only
		"cpu  1 2 3 4 5 6 7\n",        // no steal column
		"cpu  1 2 3 4 5 6 7 x 0 0\n",  // not a number
		"cpu  1 2 3 4 5 6 7 -8 0 0\n", // negative
	} {
		if c, err := Parse(text); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", text, c)
		}
	}
}

func TestReadThisHost(t *testing.T) {
	a, err := Read()
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if a.Total == 0 || a.Steal > a.Total {
		t.Fatalf("implausible reading %+v", a)
	}
}
