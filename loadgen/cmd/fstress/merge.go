package main

import (
	"io"
	"strings"

	"workbench/loadgen/internal/results"
)

// cmdMerge is `fstress merge`: the exact merge of result files, as JSON on
// stdout or in the --json file.
func cmdMerge(args []string, stdout, stderr io.Writer) int {
	var files []string
	out := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--json" || a == "-json":
			if i+1 >= len(args) {
				errLine(stderr, "merge: --json needs a file name")
				return exitUsage
			}
			out = args[i+1]
			i++
		case strings.HasPrefix(a, "--json="):
			out = strings.TrimPrefix(a, "--json=")
		case strings.HasPrefix(a, "-") && a != "-":
			errLine(stderr, "merge: unknown flag %s", a)
			return exitUsage
		default:
			files = append(files, a)
		}
	}
	if len(files) == 0 {
		errLine(stderr, "merge: no result files given")
		return exitUsage
	}
	var rs []*results.Result
	for _, f := range files {
		r, err := results.ReadJSONFile(f)
		if err != nil { // no such file, or not a result: a refusal of the input
			errLine(stderr, "merge: %s: %v", f, err)
			return exitUsage
		}
		rs = append(rs, r)
	}
	m, err := results.Merge(rs)
	if err != nil { // results that do not merge (another workload, version or window)
		errLine(stderr, "merge: %v", err)
		return exitUsage
	}
	m.Summary(stderr)
	if out == "" {
		if err := m.WriteJSON(stdout); err != nil {
			errLine(stderr, "merge: %v", err)
			return exitError
		}
	} else if err := m.WriteJSONFile(out); err != nil {
		errLine(stderr, "merge: writing %s: %v", out, err)
		return exitError
	}
	if m.GeneratorSaturated {
		return exitSaturated
	}
	return exitOK
}
