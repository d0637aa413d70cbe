"""One goal's decision as a priority chain of small strategies (MLRsearch style) with one guard.

Each strategy reads a `Goal` (goal.py: the spec at that goal, the load summaries, the search state,
the log, the loads that cannot be measured and the local fit, computed once) and returns a `Step`
(steps.py) — the next trial (`NextLoad`) or the goal's end (`GoalDone`) — or None to pass to the
next one. `guard` (goal.py) is the one place a nominated load is checked against the loads that
cannot be measured and those already classified; a converged goal is then certified
(certifying.py), which may add an optional tightening trial (`Tighten`).
[CC] = Cutting Corners (shared/seeds/000_*, newer text 002_*), Algorithm 2.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from workbench.controller.certifying import certify_ends
from workbench.controller.fit import FIT_STOP_MIN_TRIALS, fit_peak
from workbench.controller.goal import Goal, guard
from workbench.controller.policy import LinearPolicy
from workbench.controller.spec import RatingSpec
from workbench.controller.state import LoadStatus, LoadSummary, load_key, within_resolution
from workbench.controller.steps import GoalDone, NextLoad, Step
from workbench.controller.trial import TrialResult
from workbench.stats.intervals import accuracy as _accuracy


def stop_rule_met(g: Goal) -> GoalDone | None:
    """A load whose CI meets the stop rule, or (stop_rule "fit") the fit's λ* CI inside the fitted
    peak-rate region (the policy's local fit when it has one: Policy.uses_fit)."""
    spec = g.spec
    peaks = [s for s in g.loads if s.status == LoadStatus.PEAK]
    if peaks:
        best = min(peaks, key=lambda s: (abs(s.mean - g.r_sat), s.order))
        rule = "CI overlaps" if spec.stop_rule == "overlap" else "CI inside"
        return GoalDone(
            True,
            f"{rule} the peak-rate region at {best.load:g} ops/s with accuracy "
            f"{best.ci.accuracy:.3f} ≥ {spec.accuracy:g}",
            best,
            g.loads,
        )
    if spec.stop_rule != "fit":
        return None
    if spec.policy.uses_fit:
        return _local_fit_stop(g)
    fit = fit_peak(g.loads, g.r_sat, spec.width, spec.confidence)
    if fit is not None and fit.inside:
        return GoalDone(
            True,
            f"fit: λ* CI [{fit.ci[0]:.4g}, {fit.ci[1]:.4g}] inside the fitted region "
            f"[{fit.region[0]:.4g}, {fit.region[1]:.4g}] ({fit.n_trials} trials at "
            f"{len(fit.loads)} loads)",
            None,
            g.loads,
            fit,
        )
    return None


def _local_fit_stop(g: Goal) -> GoalDone | None:
    """The local fit's stop (Policy.uses_fit): the fitted mean at λ̂* inside the region, or λ̂*'s
    CI inside the fitted region (docs/controller.md "The local policy")."""
    lf = g.fit
    if lf is None or lf.n_trials < FIT_STOP_MIN_TRIALS:
        return None  # σ̂ on < 10 residual df: a look at a fluke-small σ̂ would stop the rating
    if g.spec.accuracy > 1.0 - g.spec.width and _accuracy(*lf.level_ci) < g.spec.accuracy:
        return None  # Eq. 2 on the fitted mean's CI (a CI inside [R_sat ± s] has accuracy ≥ 1 − s)
    if not lf.inside and lf.level_inside:
        return GoalDone(
            True,
            f"fit: mean at λ̂* {lf.peak_rate:.5g} CI [{lf.level_ci[0]:.4g}, {lf.level_ci[1]:.4g}] "
            f"ms inside the peak-rate region ({lf.n_trials} trials at {len(lf.loads)} loads)",
            None,
            g.loads,
            lf.reported,
        )
    if lf.inside:
        return GoalDone(
            True,
            f"fit: λ* CI [{lf.ci[0]:.4g}, {lf.ci[1]:.4g}] inside the fitted region "
            f"[{lf.region[0]:.4g}, {lf.region[1]:.4g}] ({lf.n_trials} trials at "
            f"{len(lf.loads)} loads)",
            None,
            g.loads,
            lf.reported,
        )
    return None


def local_fit_step(g: Goal) -> NextLoad | None:
    """A policy with a local fit (Policy.uses_fit, e.g. "local"): where the fit puts λ*
    (Policy.fit_place; local.py), unless the seed sample of seed_trials is not complete or the guard
    refuses it."""
    spec, pol = g.spec, g.spec.policy
    if not pol.uses_fit:
        return None
    if spec.seed_load is not None and any(
        load_key(s.load) == load_key(spec.seed_load) and s.n < spec.min_trials_at(s.load)
        for s in g.loads
    ):
        return None
    last = next((t.load_ops_s for t in reversed(g.trials) if t.valid), None)
    placed = pol.fit_place(spec, g.st, last, g.fit)
    if placed is None:
        return None
    load, why = placed
    step = guard(g, load, why, None)
    return None if step is None else dataclasses.replace(step, fit_placed=True)


def keep_sampling(g: Goal) -> NextLoad | None:
    """An undecided load inside the bracket: more trials there (Algorithm 2 step 6), or one more at
    the lower load that reads above it (the monotone check)."""
    lo, hi = g.st.lo, g.st.hi
    open_in = [
        s
        for s in g.loads
        if s.status == LoadStatus.OPEN
        and (lo is None or s.load > lo.load)
        and (hi is None or s.load < hi.load)
    ]
    if not open_in:
        return None
    last = {load_key(t.load): i for i, t in enumerate(g.trials)}
    cur = max(open_in, key=lambda s: last[load_key(s.load)])
    holder = next((s for s in g.loads if cur.held_by is not None and s.load == cur.held_by), None)
    if holder is not None and holder.n <= cur.n:
        # the lower load's median on fewer trials is the likelier fluke: one more trial there
        return NextLoad(
            holder.load,
            f"monotone check: {holder.load:g} ops/s (median "
            f"{holder.median_ms:.4g} ms, {holder.n} trials) reads above "
            f"{cur.load:g} ops/s ({cur.n} trials): another trial at the lower load",
        )
    spec = g.spec
    if cur.n < spec.min_trials:
        why = "first trials"
    elif cur.n < spec.min_trials_at(cur.load):
        why = f"seed sample: trial {cur.n + 1} of {spec.seed_trials} at the seed load"
    else:
        why = f"potential peak: {_ci_text(cur)}"
    return NextLoad(cur.load, why)


def _ci_text(s: LoadSummary) -> str:
    """A load's CI for a reason line: [CC] Eq. 1's, its lower end clipped at 0 (a mean response time
    is ≥ 0, so the clipped interval covers it whenever Eq. 1's does): no latency bound below
    zero."""
    lo = max(0.0, s.ci.low)
    return f"CI [{lo:.4g}, {s.ci.high:.4g}] ms, accuracy {_accuracy(lo, s.ci.high):.3f}"


def strawman_end(g: Goal) -> GoalDone | None:
    """§3.1 strawman: the first saturated load ends the search."""
    lo, hi, spec, pol = g.st.lo, g.st.hi, g.spec, g.spec.policy
    if not (isinstance(pol, LinearPolicy) and spec.strawman and lo is not None and hi is not None):
        return None
    step = pol.step(spec)
    ok = (hi.load - lo.load) <= step * (1 + 1e-9)
    return GoalDone(
        ok,
        f"linear strawman: first saturated load {hi.load:g} ops/s "
        f"({pol.trials} trials each); λ* = last unsaturated load "
        f"{lo.load:g}" + ("" if ok else f" (bracket wider than the increment {step:g})"),
        None,
        g.loads,
    )


def bracket_resolved(g: Goal) -> GoalDone | None:
    lo, hi = g.st.lo, g.st.hi
    if lo is None or hi is None or not within_resolution(lo.load, hi.load, g.spec.resolution):
        return None
    if hi.latency_saturated:
        return GoalDone(
            True,
            f"latency rule: bracket [{lo.load:g}, {hi.load:g}] resolved",
            None,
            g.loads,
        )
    return GoalDone(
        True,
        f"bracket [{lo.load:g}, {hi.load:g}] narrower than resolution "
        f"{g.spec.resolution:g}: λ* interpolated",
        None,
        g.loads,
    )


def loads_exhausted(g: Goal) -> GoalDone | None:
    if len(g.loads) >= g.spec.max_loads:
        return GoalDone(False, f"max_loads ({g.spec.max_loads}) reached", None, g.loads)
    return None


def picker_step(g: Goal) -> NextLoad | GoalDone:
    """The policy's picker (pickers.py, safeguarded.py), through the guard."""
    picker = g.spec.policy.picker(g.spec)
    load, why = picker.next_load(g.st)
    return guard(g, load, why, picker.name)


CHAIN: tuple[Callable[[Goal], Step | None], ...] = (
    stop_rule_met,
    local_fit_step,
    keep_sampling,
    strawman_end,
    bracket_resolved,
    loads_exhausted,
    picker_step,
)


def decide_goal(
    spec: RatingSpec,
    r_sat: float,
    trials: Sequence[TrialResult],
    unmeasurable: Mapping[float, TrialResult] | None = None,
) -> Step:
    """The next trial (NextLoad), the goal's end (GoalDone) or a converged goal's optional
    tightening trial (Tighten): the first strategy of CHAIN that has something to say, and a
    converged goal's certification (certify_ends)."""
    g = Goal(spec, r_sat, trials, unmeasurable or {})
    for strategy in CHAIN:
        step = strategy(g)
        if step is not None:
            if isinstance(step, GoalDone) and step.converged:
                return certify_ends(g, step)
            return step
    raise AssertionError("picker_step always answers")
