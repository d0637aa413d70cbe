package main

import (
	"context"
	"io"

	"workbench/loadgen/internal/engine"
	"workbench/loadgen/internal/workload"
)

// cmdFileset is `fstress fileset`: create or augment the file set, nothing else.
func cmdFileset(args []string, _, stderr io.Writer) int {
	fs := newFlagSet("fileset")
	var c common
	c.register(fs)
	if !parseFlags(fs, args, stderr) {
		return exitUsage
	}
	w, err := c.check(fs)
	if err == nil {
		_, err = w.CheckFileset(c.rate)
	}
	if err != nil { // a refusal of the input: one line, exit 2
		errLine(stderr, "%v", err)
		return exitUsage
	}
	ctx, cancel := signalContext()
	defer cancel()
	sess, _, err := connectFileset(ctx, &c, w, c.rate, stderr)
	if err != nil {
		errLine(stderr, "%v", err)
		return exitError
	}
	sess.Close()
	return exitOK
}

// connectFileset mounts the export and creates (or reuses) the file set sized for rate, the
// first two steps of both `run` and `fileset`. The caller closes the session.
func connectFileset(ctx context.Context, c *common, w *workload.Workload, rate float64, log io.Writer) (*engine.Session, *engine.Fileset, error) {
	sess, err := engine.Connect(ctx, c.conn())
	if err != nil {
		return nil, nil, err
	}
	fset, err := engine.PrepareFileset(ctx, sess, w, rate, log)
	if err != nil {
		sess.Close()
		return nil, nil, err
	}
	return sess, fset, nil
}
