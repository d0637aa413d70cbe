package main

import (
	"fmt"
	"io"

	"workbench/loadgen/internal/workload"
)

// cmdWorkloads is `fstress workloads`: one line per canned workload (any
// argument ignored).
func cmdWorkloads(_ []string, stdout, stderr io.Writer) int {
	for _, name := range workload.Canned() {
		w, err := workload.Load(name)
		if err != nil {
			errLine(stderr, "canned workload %s: %v", name, err)
			return exitError
		}
		fmt.Fprintf(stdout, "%-12s %s\n", name, w.Description)
	}
	return exitOK
}
