package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"workbench/loadgen/internal/engine"
	"workbench/loadgen/internal/workload"
)

// exactLayoutObjects: up to this many expected objects `check` builds the layout itself
// (engine.GenLayout, what `run` creates) and reports its exact counts and bytes; beyond it, the
// expectation of workload.CheckFileset.
const exactLayoutObjects = 2000000

// checkReport is the JSON of `fstress check --json`.
type checkReport struct {
	OK           bool   `json:"ok"`
	Workload     string `json:"workload"`
	Source       string `json:"source"`
	NeedsFileset bool   `json:"needs_fileset"`
	NFSVersion   string `json:"nfs_version"` // "3" or "4.1"
	Data         string `json:"data"`        // what WRITEs carry (content.Spec.String)
	workload.FilesetEstimate
}

// cmdCheck validates a workload without a server: the workload file and every file it names
// (regular, bounded, readable), its bounds (sizes, counts, depth, finite numbers), the file set
// at the rate it is sized for, and any run flag given. Exit 0 with a one-line summary on stdout
// (a JSON object with --json), or 2 with one line on stderr naming the field.
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("check")
	var c common
	c.register(fs)
	var o runOpts
	o.register(fs, false)
	asJSON := fs.Bool("json", false, "print the summary as a JSON object")
	if !parseFlags(fs, args, stderr) {
		return exitUsage
	}
	rep, err := checkWorkload(fs, &c, &o)
	if err != nil {
		errLine(stderr, "check: %v", err)
		return exitUsage
	}
	if *asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	how := "expected"
	if rep.Exact {
		how = "exact"
	}
	set := "no file set (the mix touches no file)"
	if rep.NeedsFileset {
		set = fmt.Sprintf("file set at %g ops/s: %d files, %d dirs, %d symlinks, %.1f MB (%s)",
			rep.Rate, rep.Files, rep.Dirs, rep.Symlinks, rep.Bytes/1e6, how)
	}
	fmt.Fprintf(stdout, "fstress: workload %s (%s) OK; %s; writes %s\n", rep.Workload, rep.Source, set, rep.Data)
	return exitOK
}

// checkWorkload is the whole of `check`: the flags, the workload and its file set.
func checkWorkload(fs *flag.FlagSet, c *common, o *runOpts) (*checkReport, error) {
	c.rateOptional = true
	w, err := c.checkOffline(fs)
	if err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := o.checkVersion(c); err != nil {
		return nil, err
	}
	rate := o.filesetFor(c.rate)
	est, err := w.CheckFileset(rate)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", w.Source, err)
	}
	rep := &checkReport{OK: true, Workload: w.Name, Source: w.Source, NeedsFileset: engine.NeedsFileset(w), NFSVersion: c.nfsVersion,
		Data: w.Data.String()}
	if !rep.NeedsFileset {
		rep.FilesetEstimate = workload.FilesetEstimate{Rate: rate, Exact: true}
		return rep, nil
	}
	if est.Files+est.Dirs+est.Symlinks <= exactLayoutObjects {
		files, dirs := w.FilesetSize(rate)
		l := engine.GenLayout(w, engine.LayoutSeed, files, dirs)
		est.Files, est.Dirs, est.Symlinks, est.Bytes, est.MaxFile = int64(len(l.Files)), int64(len(l.Dirs)), int64(len(l.Links)), 0, 0
		for _, f := range l.Files {
			est.Bytes += float64(f.Size)
			est.MaxFile = max(est.MaxFile, float64(f.Size))
		}
		est.Exact = true
	}
	rep.FilesetEstimate = est
	return rep, nil
}
