package engine

import (
	"context"
	"fmt"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nfs4"
	"workbench/loadgen/internal/probe"
	"workbench/loadgen/internal/results"
)

// The NULL probe beside the run (RunConfig.BesideNullGap > 0;
// probe.Beside): NULL calls of the run's NFS version, one at a time on a
// connection of their own, over the measured window — the network round
// trip that the result's null_rtt_ms reports beside the calls' latency.

// dialBeside connects the beside probe to the session's NFS service; nil
// when it is off, or could not connect (a warning on cfg.Log: the run goes
// on without null_rtt_ms).
func dialBeside(ctx context.Context, s *Session, cfg *RunConfig) *probe.Beside {
	if cfg.BesideNullGap <= 0 {
		return nil
	}
	vers := uint32(nfs3.Version)
	if s.V4 != nil {
		vers = nfs4.Version
	}
	b, err := probe.DialBeside(ctx, probe.BesideConfig{Addr: s.Cfg.Server, Vers: vers, Gap: cfg.BesideNullGap})
	if err != nil && cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "fstress: warning: no NULL calls beside the run: %v\n", oneLine(err))
	}
	return b
}

// startBeside runs b over the measured window of a run that starts at
// start, on a goroutine of its own; the returned stop ends it (the run's
// end) and returns its record (nil when b is nil).
func startBeside(ctx context.Context, b *probe.Beside, start time.Time, cfg *RunConfig) (stop func() *results.NullRTT) {
	if b == nil {
		return func() *results.NullRTT { return nil }
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan *results.NullRTT, 1)
	from := start.Add(cfg.Warmup)
	go func() { done <- b.Run(ctx, from, from.Add(cfg.Duration)) }()
	return func() *results.NullRTT {
		cancel()
		return <-done
	}
}
