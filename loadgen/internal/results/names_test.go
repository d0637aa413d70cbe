package results

import (
	"testing"

	"workbench/loadgen/internal/nfs3"
)

func TestOpNames(t *testing.T) {
	seen := map[string]bool{}
	for p := nfs3.Proc(0); p < nfs3.NumProcs; p++ {
		for _, v := range []string{"", NFSVersion41} {
			name := OpName(p, v)
			if q, ok := opByName(name); !ok || q != p {
				t.Errorf("%s (version %q): back to %v %v", name, v, q, ok)
			}
		}
		n4 := OpName(p, NFSVersion41)
		if seen[n4] {
			t.Errorf("v4.1 name %s used twice", n4)
		}
		seen[n4] = true
	}
	if OpName(nfs3.ProcCreate, "") != "create" || OpName(nfs3.ProcCreate, NFSVersion41) != "open_create" {
		t.Fatal("create names")
	}
}
