package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"workbench/loadgen/internal/engine"
	"workbench/loadgen/internal/probe"
	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/workload"
)

// drainFailed reports a drain's error: exit 4 for a server that did not
// drain, 1 for any other failure.
func drainFailed(err error, stderr io.Writer) int {
	errLine(stderr, "%v", err)
	if nd := (*probe.NotDrainedError)(nil); errors.As(err, &nd) {
		return exitNotDrained
	}
	return exitError
}

// drainServer is the NULL stage of the drain probe (package probe) —
// before the run's connect and file-set lookup, which a backlog would slow
// or time out.
func drainServer(ctx context.Context, c *common, o *runOpts, stderr io.Writer) (*results.Drain, error) {
	var addr string
	var err error
	vers := uint32(3)
	if c.v41() {
		addr, err = engine.NFS4Addr(c.server)
		vers = 4
	} else {
		addr, err = engine.NFSAddr(ctx, c.server)
	}
	if err != nil {
		return nil, err
	}
	cfg := o.drain
	from := idleFrom(c, o, probe.ProbeNull, &cfg, stderr)
	d, err := probe.DrainVersion(ctx, addr, cfg, from, vers)
	rememberIdle(c, o, d, err, stderr)
	return d, err
}

// readStageAndFileset is the READ stage of the drain probe (when the NULL
// stage ran, --drain-probe is read and the workload has files) and the
// file-set lookup: the READ stage first, looking up the files it picks, so
// that it, not the lookup of the whole set, waits out a backlog; on an
// export without the file set, after building it. The drain record is the
// READ stage's with the NULL stage's (null) in it.
func readStageAndFileset(ctx context.Context, c *common, o *runOpts, w *workload.Workload, sess *engine.Session,
	null *results.Drain, stderr io.Writer) (*engine.Fileset, *results.Drain, error) {
	rate := o.filesetFor(c.rate)
	// NFSv4.1: the NULL stage alone (the READ stage speaks NFSv3)
	if null == nil || o.drainProbe != probe.ProbeRead || !engine.NeedsFileset(w) || c.v41() {
		fset, err := engine.PrepareFileset(ctx, sess, w, rate, stderr)
		return fset, null, err
	}
	d, err := drainReads(ctx, c, o, sess.Cfg.Server, engine.NewDrainFiles(w, rate, sess.Root), null, stderr)
	switch {
	case errors.Is(err, probe.ErrNoData): // nothing to READ: the NULL stage alone
		d, err = null, nil
	case errors.Is(err, engine.ErrNoFileset): // the first run on this export: READ the set it builds
		fset, err := engine.PrepareFileset(ctx, sess, w, rate, stderr)
		if err != nil {
			return nil, nil, err
		}
		d, err = drainReads(ctx, c, o, sess.Cfg.Server, probe.Handles{FH: fset.FileFH, Sizes: fset.FileSize}, null, stderr)
		return fset, d, err
	}
	if err != nil {
		return nil, nil, err
	}
	fset, err := engine.PrepareFileset(ctx, sess, w, rate, stderr)
	return fset, d, err
}

// drainReads is the READ stage on the NFS service at addr, within what the
// NULL stage left of --drain-timeout.
func drainReads(ctx context.Context, c *common, o *runOpts, addr string, files probe.ReadFiles, null *results.Drain,
	stderr io.Writer) (*results.Drain, error) {
	cfg := o.drainRead
	cfg.Timeout = max(o.drain.Timeout-time.Duration(null.DrainS*float64(time.Second)), time.Millisecond)
	from := idleFrom(c, o, probe.ProbeRead, &cfg, stderr)
	d, err := probe.DrainRead(ctx, addr, cfg, from, files, o.seed)
	rememberIdle(c, o, d, err, stderr)
	if d != nil {
		d.Null, d.DrainS = null, d.DrainS+null.DrainS
	}
	return d, err
}

// idleFrom sets cfg.IdleRTT for the stage of probe kind k: --drain-idle-rtt
// (NULL stage), else the one --drain-state remembers, else 0 (measured by
// this drain); it returns where the figure came from.
func idleFrom(c *common, o *runOpts, k string, cfg *probe.DrainConfig, stderr io.Writer) string {
	if cfg.IdleRTT > 0 || o.drainState == "" {
		return "given"
	}
	idle, err := probe.LoadIdle(o.drainState, c.server, c.export, k)
	if err != nil {
		fmt.Fprintf(stderr, "fstress: warning: drain state ignored: %v\n", err)
	}
	cfg.IdleRTT = idle
	return "state"
}

// rememberIdle keeps an idle RTT a drain measured in --drain-state.
func rememberIdle(c *common, o *runOpts, d *results.Drain, err error, stderr io.Writer) {
	if err != nil || d.IdleFrom != "measured" || o.drainState == "" {
		return
	}
	if serr := probe.SaveIdle(o.drainState, c.server, c.export, d.Probe, d.IdleRTTUs); serr != nil {
		fmt.Fprintf(stderr, "fstress: warning: drain state not saved: %v\n", serr)
	}
}
