package engine

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/workload"
)

// Saturation rule: see the package doc and loadgen/README.md.
const (
	// DefaultLagBound is the default send-lag p99 bound (RunConfig.LagBound).
	DefaultLagBound = 2 * time.Millisecond

	// SentFraction is the share of the intended calls the generator must
	// send (and of the offered rate it must achieve) not to be saturated.
	SentFraction = 0.99
)

// result builds the Result of the measured interval with the run's
// metadata; startWall is the wall-clock common start.
func (r *runner) result(startWall time.Time, series *results.Series) *results.Result {
	cfg, s := &r.cfg, r.s
	host, _ := os.Hostname()
	version := ""
	if r.v4 != nil {
		version = results.NFSVersion41
	}
	res := r.rec.Result(results.Meta{Workload: r.w.Name, OfferedRate: cfg.Rate, DurationS: cfg.Duration.Seconds(),
		MixTarget: mixTarget(r.w, version), NFSVersion: version, Data: r.w.Data.String(), StartUnixNs: startWall.Add(cfg.Warmup).UnixNano(), Host: host,
		Server: s.Cfg.Server, Export: s.Cfg.Export, Pacing: pacingName(cfg.Poisson), Conns: len(s.Clients), Seed: cfg.Seed,
		WarmupS: cfg.Warmup.Seconds()})
	res.FirstCalls = r.firstCalls
	res.Series = series
	if r.v4 != nil {
		r.stats4(res)
	}
	return res
}

// mixTarget is the workload's mix as procedure name → weight.
func mixTarget(w *workload.Workload, version string) map[string]float64 {
	mix := map[string]float64{}
	for _, m := range w.Mix {
		mix[results.OpName(m.Proc, version)] += m.Weight
	}
	return mix
}

// pacingName is the result's "pacing" value.
func pacingName(poisson bool) string {
	if poisson {
		return "poisson"
	}
	return "constant"
}

// verdict is the verdict phase: it applies the saturation rule to the
// measured interval and writes the outcome into out and res
// (generator_saturated, saturation_reason); out.Result becomes res.
func (r *runner) verdict(out *Outcome, res *results.Result, stealPct float64, stealOK bool) {
	if reasons := r.saturationReasons(res, stealPct, stealOK); len(reasons) > 0 {
		out.Saturated = true
		out.Reason = strings.Join(reasons, "; ")
	}
	res.GeneratorSaturated = out.Saturated
	res.SaturationReason = out.Reason
	out.Result = res
}

// saturationReasons lists why the generator — not the server — failed to
// offer the asked load, in this order: too few sends (or, when the sends
// kept up, too few completions), send-lag p99 over the bound (with the
// host's steal when known), the outstanding-calls cap hit, calls without a
// target, a send error. Empty: not saturated.
func (r *runner) saturationReasons(res *results.Result, stealPct float64, stealOK bool) []string {
	cfg := &r.cfg
	var reasons []string
	if float64(r.sent) < SentFraction*float64(r.intended) {
		reasons = append(reasons, fmt.Sprintf("sent %d of %d intended calls (%.2f%% < 99%%)", r.sent, r.intended, 100*float64(r.sent)/math.Max(1, float64(r.intended))))
	} else if res.AchievedRate < SentFraction*cfg.Rate && r.intended > 0 && float64(r.intended) >= SentFraction*cfg.Rate*cfg.Duration.Seconds() {
		// sends kept up but fewer calls finished than were due (should not
		// happen: every sent call ends as a reply, error or timeout)
		reasons = append(reasons, fmt.Sprintf("achieved %.1f ops/s < 99%% of offered %.1f", res.AchievedRate, cfg.Rate))
	}
	if lag := time.Duration(res.SendLagMs.P99 * 1e6); lag > cfg.LagBound {
		reason := fmt.Sprintf("send-lag p99 %.3f ms > bound %.3f ms", res.SendLagMs.P99, cfg.LagBound.Seconds()*1e3)
		if stealOK {
			reason += fmt.Sprintf(" (host steal %.2f %% of CPU time)", stealPct)
		}
		reasons = append(reasons, reason)
	}
	if r.capHit {
		reasons = append(reasons, fmt.Sprintf("outstanding-calls cap %d hit", cfg.MaxOutstanding))
	}
	if r.noTarget > 0 {
		// e.g. READLINK in the mix but no symlinks in the file set
		reasons = append(reasons, fmt.Sprintf("%d calls had no target object (empty object set or scratch pool) and were not sent", r.noTarget))
	}
	if r.sendErr != nil {
		reasons = append(reasons, "send error: "+oneLine(r.sendErr))
	}
	return reasons
}
