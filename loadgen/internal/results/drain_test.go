package results

import "testing"

func TestMergeDrain(t *testing.T) {
	a := &Result{Drain: &Drain{DrainS: 0.2, Drained: true, Probes: 7}}
	b := &Result{Drain: &Drain{DrainS: 1.5, Drained: true, Probes: 40}}
	off := &Result{}
	m := mergeDrain([]*Result{a, off, b})
	if m == nil || m.DrainS != 1.5 || m.Probes != 40 || !m.Drained {
		t.Fatalf("merged %+v, want the longest drain (1.5 s, 40 probes), drained", m)
	}
	m.DrainS = 9 // the merge owns its copy
	if b.Drain.DrainS != 1.5 {
		t.Error("the merge changed its input")
	}
	a.Drain.Drained = false
	if m := mergeDrain([]*Result{a, b}); m.Drained {
		t.Error("one host not drained: the merge says drained")
	}
	if m := mergeDrain([]*Result{off, off}); m != nil {
		t.Errorf("no drain anywhere merged to %+v", m)
	}
}
