"""`PeakResult`: λ*, its bracket and CI, and the mean response time there, from the trial log."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.controller.certify import Certified, LoadBounds, certified
from workbench.controller.fit import FitPeak, local_fit
from workbench.controller.pickers import two_point_fit
from workbench.controller.policy import RECOMMENDED
from workbench.controller.spec import RatingSpec
from workbench.controller.state import LoadSummary, load_key
from workbench.controller.steps import GoalDone
from workbench.controller.summary import search_state, summarize, trial_cost_s
from workbench.controller.trial import TrialResult
from workbench.stats.intervals import accuracy as _accuracy

# what differs between the goals of one search (the trials, loads and cost are shared)
GOAL_FIELDS = (
    "r_sat_ms",
    "l_sat_ms",
    "peak_rate",
    "converged",
    "reason",
    "bracket",
    "peak_rate_ci",
    "peak_rate_ci_method",
    "peak_rate_ci_level",
    "peak_rate_ci_model",
    "mean_ms_at_peak",
    "mean_ms_ci",
    "accuracy",
    "mean_load_ops_s",
    "n_trials_at_peak",
)


@dataclass(frozen=True)
class PeakResult:
    peak_rate: float  # λ* (ops/s)
    converged: bool
    reason: str
    bracket: tuple[float, float]  # (highest unsaturated load, lowest saturated load)
    # the certified λ* interval at peak_rate_ci_level (certify.py)
    peak_rate_ci: tuple[float, float]
    mean_ms_at_peak: float  # mean response time at mean_load_ops_s
    mean_ms_ci: tuple[float, float]  # [CC] Eq. 1's t interval, clipped at 0 (_mean_ci)
    accuracy: float  # Eq. 2 accuracy of mean_ms_ci, in [0, 1]
    n_loads: int
    n_trials: int  # all trials, invalid and harness failures included
    cost_s: float  # Σ runlengths + n_trials × trial_overhead_s
    trials: list[TrialResult] = field(default_factory=list, repr=False)
    trace: list[tuple[float, float]] = field(default_factory=list, repr=False)
    per_goal: dict[float, PeakResult] = field(default_factory=dict, repr=False)
    r_sat_ms: float = 40.0
    l_sat_ms: float = math.inf  # the goal's percentile threshold (RatingSpec.l_sat_for)
    n_invalid: int = 0  # the server's invalid trials (harness failures are not)
    n_trials_at_peak: int = 0
    peak_rate_ci_model: tuple[float, float] = (math.nan, math.nan)
    # RatingSpec's defaults (the recommended policy's name and stop rule); _goal_result names the
    # spec's own
    stop_rule: str = RECOMMENDED.stop_rule
    policy: str = RECOMMENDED.name
    mean_load_ops_s: float = math.nan  # the tested load whose trials give mean_ms_at_peak
    n_harness: int = 0  # harness failures: no sample of the server, re-run
    not_steady: dict[int, str] = field(default_factory=dict)  # trial n → why it was excluded as not
    # steady (steadiness.py; not among n_invalid)
    peak_rate_ci_method: str = ""  # how peak_rate_ci was made (certify.METHOD), one line
    peak_rate_ci_level: float = math.nan  # its confidence level (c, or bound_confidence)

    @property
    def n_not_steady(self) -> int:
        """Trials excluded as not steady (and re-run)."""
        return len(self.not_steady)

    def to_dict(self) -> dict[str, Any]:
        d = {
            k: getattr(self, k)
            for k in (
                "peak_rate",
                "converged",
                "reason",
                "bracket",
                "peak_rate_ci",
                "mean_ms_at_peak",
                "mean_ms_ci",
                "accuracy",
                "n_loads",
                "n_trials",
                "cost_s",
                "trace",
                "r_sat_ms",
                "l_sat_ms",
                "n_invalid",
                "n_trials_at_peak",
                "peak_rate_ci_model",
                "stop_rule",
                "policy",
                "mean_load_ops_s",
                "n_harness",
                "peak_rate_ci_method",
                "peak_rate_ci_level",
            )
        }
        d["n_not_steady"] = self.n_not_steady
        d["not_steady"] = {str(k): v for k, v in sorted(self.not_steady.items())}
        d["per_goal"] = {
            f"{k:g}": {f: getattr(v, f) for f in GOAL_FIELDS} for k, v in self.per_goal.items()
        }
        d["trials"] = [t.to_dict() for t in self.trials]
        return d


def interpolate_peak(lo: LoadSummary, hi: LoadSummary, r_sat: float, form: str) -> float:
    """λ where the response curve through the bracket ends crosses R_sat (1/R linear), kept inside
    the bracket (a crossing beyond an end: that end; e.g. lo's mean above R_sat, classified below on
    its median), the bracket's midpoint when the curve does not cross."""
    p = two_point_fit((lo.load, lo.mean), (hi.load, hi.mean), r_sat, form)
    return min(max(p, lo.load), hi.load) if math.isfinite(p) else (lo.load + hi.load) / 2.0


def _model_ci(loads: Sequence[LoadSummary], r_sat: float, spec: RatingSpec) -> tuple[float, float]:
    """`peak_rate_ci_model`: the Fieller interval at c of the local fit (`fit.local_fit`: robust WLS
    of log R on λ over the trials near R_sat, with a first-trial term), whatever the policy; NaN
    when there is no fit or its slope is not significant. Informational: the λ* CI of a rating is
    `peak_rate_ci`. (It replaced a 1/R-linear delta-method interval on four load means that
    covered the true λ* only 20–60 % of the time.)"""
    lf = local_fit(loads, r_sat, spec.width, spec.confidence)
    if lf is None or not (math.isfinite(lf.ci[0]) and math.isfinite(lf.ci[1])):
        return (math.nan, math.nan)
    return (float(lf.ci[0]), float(lf.ci[1]))


def _point(
    spec: RatingSpec,
    r_sat: float,
    loads: list[LoadSummary],
    lo: LoadSummary | None,
    hi: LoadSummary | None,
    peak: LoadSummary | None,
    fit: FitPeak | None,
) -> tuple[float, LoadSummary | None]:
    """(λ*, the tested load nearest it): the fit's λ̂*, the stop rule's load, the §3.1 strawman's
    last unsaturated load, or the bracket's interpolation."""
    if peak is not None:
        return peak.load, peak
    if fit is not None:  # stop_rule "fit": λ* on the local fit
        lam = fit.peak_rate
        # a CI needs 2 trials
        sampled = [s for s in loads if s.n >= 2] or [s for s in loads if s.n >= 1]
        return lam, min(sampled, key=lambda s: abs(s.load - lam))
    if lo is not None and hi is not None and spec.strawman:
        return lo.load, lo  # §3.1: the largest load that does not saturate
    if lo is not None and hi is not None:
        lam = (
            interpolate_peak(lo, hi, r_sat, spec.model_form)
            if not hi.latency_saturated
            else lo.load
        )
        return lam, min((lo, hi), key=lambda s: abs(s.load - lam))
    if lo is not None:
        return lo.load, lo
    cands = [s for s in loads if s.n >= 1]
    if cands:
        near = min(cands, key=lambda s: abs(s.mean - r_sat))
        return near.load, near
    return math.nan, None


def _mean_ci(near: LoadSummary | None) -> tuple[float, float]:
    """The CI of the mean response at the load nearest λ*: [CC] Eq. 1, its lower end clipped at 0 (a
    mean response time is ≥ 0: the clipped interval covers it whenever Eq. 1's does; Cox's lognormal
    interval, used before, read [0.004, 6·10⁸] ms on a real wall's 0.45–128 ms); (nan, nan) with
    fewer than two trials."""
    if near is None or near.n < 2 or not math.isfinite(near.ci.high):
        return (math.nan, math.nan)
    return (max(0.0, near.ci.low), near.ci.high)


def _certified(
    spec: RatingSpec,
    r_sat: float,
    level: float,
    server: Sequence[TrialResult],
    loads: list[LoadSummary],
) -> Certified:
    """The certified λ* interval of goal r_sat at `level` (certify.py)."""
    return certified(
        r_sat,
        spec.l_sat_ms,
        spec.width,
        level,
        server,
        loads,
        spec.max_loads,
        spec.policy.distrust_repeats,
        use_fit=spec.policy.uses_fit,
    )


def _trace(
    spec: RatingSpec, trials: Sequence[TrialResult], lam: float
) -> list[tuple[float, float]]:
    """(cumulative cost s, load factor λ/λ*) of each trial (NaN without a λ* > 0)."""
    lf = lam if math.isfinite(lam) and lam > 0 else None
    trace, cum = [], 0.0
    for t in trials:
        cum += float(t.runlength_s or 0.0) + spec.trial_overhead_s
        trace.append((cum, t.load / lf if lf else math.nan))
    return trace


def _within_bounds(
    lam: float, near: LoadSummary | None, loads: list[LoadSummary], b: LoadBounds
) -> tuple[float, LoadSummary | None]:
    """λ* never beyond a load shown saturated (or below one shown not): clipped into [L, H], and
    then the tested load nearest it."""
    if math.isfinite(lam) and b.low <= b.high and not b.low <= lam <= b.high:
        lam = min(max(lam, b.low), b.high)
        near = min((s for s in loads if s.n >= 1), key=lambda s: abs(s.load - lam))
    return lam, near


def _goal_result(
    spec: RatingSpec,
    r_sat: float,
    trials: Sequence[TrialResult],
    converged: bool,
    reason: str,
    peak: LoadSummary | None,
    loads: list[LoadSummary] | None,
    fit: FitPeak | None = None,
    not_steady: Mapping[int, str] | None = None,
) -> PeakResult:
    """One goal's result from the log (its loads, when the decision summarized them already)."""
    server = [t for t in trials if not t.harness_failure]  # harness failures: no sample
    if loads is None:
        loads = summarize(spec, server, r_sat)
    st = search_state(spec, r_sat, loads)
    lo, hi = st.lo, st.hi
    lam, near = _point(spec, r_sat, loads, lo, hi, peak, fit)
    bracket = (lo.load if lo is not None else 0.0, hi.load if hi is not None else math.inf)
    level = spec.bound_confidence if spec.bound_confidence is not None else spec.confidence
    cert = _certified(spec, r_sat, level, server, loads)
    lam, near = _within_bounds(lam, near, loads, cert.bounds)
    pci = cert.interval
    if math.isfinite(lam):
        pci = (min(pci[0], lam), max(pci[1], lam))
    mci = _mean_ci(near)
    return PeakResult(
        peak_rate=float(lam),
        converged=converged,
        reason=reason,
        bracket=bracket,
        peak_rate_ci=(float(pci[0]), float(pci[1])),
        mean_ms_at_peak=near.mean if near is not None else math.nan,
        mean_ms_ci=mci,
        accuracy=_accuracy(*mci),
        n_loads=len({load_key(t.load) for t in server}),
        n_trials=len(trials),
        cost_s=trial_cost_s(spec, trials),
        trials=list(trials),
        trace=_trace(spec, trials, lam),
        r_sat_ms=r_sat,
        l_sat_ms=spec.l_sat_ms,
        # the excluded (not_steady) are not the server's invalid trials
        n_invalid=sum(1 for t in server if not t.valid) - len(not_steady or {}),
        n_harness=len(trials) - len(server),
        not_steady=dict(not_steady or {}),
        n_trials_at_peak=near.n if near is not None else 0,
        peak_rate_ci_model=_model_ci(loads, r_sat, spec),
        stop_rule=spec.stop_rule or spec.policy.stop_rule,  # (filled in by RatingSpec)
        policy=spec.policy.name,
        mean_load_ops_s=near.load if near is not None else math.nan,
        peak_rate_ci_method=cert.method,
        peak_rate_ci_level=float(level),
    )


def result_of(
    spec: RatingSpec,
    trials: Sequence[TrialResult],
    done: Mapping[float, GoalDone],
    stop_reason: str | None,
    not_steady: Mapping[int, str] | None = None,
) -> PeakResult:
    """The result of the trial log as decide read it (not_steady: the excluded trials, now
    invalid)."""
    per: dict[float, PeakResult] = {}
    for g in spec.goals:
        if g in done:
            d = done[g]
            per[g] = _goal_result(
                spec.at_goal(g),
                g,
                trials,
                d.converged,
                d.reason,
                d.peak,
                d.loads,
                d.fit,
                not_steady,
            )
        else:
            per[g] = _goal_result(
                spec.at_goal(g),
                g,
                trials,
                False,
                stop_reason or "not reached",
                None,
                None,
                not_steady=not_steady,
            )
    main = per[float(spec.r_sat_ms)]
    missed = [r for r in per.values() if not r.converged]
    # every goal is the rating's: one short of λ* leaves it unconverged
    if main.converged and missed:
        main = dataclasses.replace(
            main, converged=False, reason=f"goal {missed[0].r_sat_ms:g} ms: {missed[0].reason}"
        )
    return dataclasses.replace(main, per_goal=per)


def goal_results(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-goal entries of a stored result (PeakResult.to_dict), ascending by R_sat; a result
    stored without them (one goal) gives its own fields."""
    per = result.get("per_goal") or {}
    rows = [dict(v) for v in per.values()] if per else [{f: result.get(f) for f in GOAL_FIELDS}]
    return sorted(rows, key=lambda r: float(r.get("r_sat_ms") or 0.0))
