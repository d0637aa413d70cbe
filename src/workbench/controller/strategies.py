"""One goal's decision as a priority chain of small strategies (MLRsearch style) with one guard.

Each strategy reads a `Goal` (the spec at that goal, the load summaries, the search state, the log,
the loads that cannot be measured and the local fit, computed once) and returns a `Step` — the next
trial ("next", (load, reason)) or the goal's end ("done", (converged, reason, peak summary | None,
loads[, fit])) — or None to pass to the next one. `guard` is the one place a nominated load is
checked against the loads that cannot be measured and those already classified.
[CC] = Cutting Corners (shared/seeds/000_*, newer text 002_*), Algorithm 2.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Mapping, Sequence

from workbench.controller.certify import LoadBounds, certified, load_bounds, load_shown
from workbench.controller.fit import FIT_STOP_MIN_TRIALS, LocalFit, fit_peak, local_fit
from workbench.controller.spec import RatingSpec
from workbench.controller.state import LoadStatus, LoadSummary, SearchState, load_key, within_resolution
from workbench.controller.summary import search_state, summarize
from workbench.controller.trial import TrialResult
from workbench.stats.intervals import accuracy as _accuracy
from workbench.stats.sequential import look_sizes

Step = tuple[str, Any]


@dataclass
class Goal:
    spec: RatingSpec                        # at this goal (RatingSpec.at_goal)
    r_sat: float
    trials: Sequence[TrialResult]           # the server's trials (no harness failures)
    unmeasurable: Mapping[float, TrialResult]   # load key → the last of its invalid run

    @cached_property
    def loads(self) -> list[LoadSummary]:
        return [s for s in summarize(self.spec, self.trials, self.r_sat)
                if not (s.status == LoadStatus.OPEN and load_key(s.load) in self.unmeasurable)]

    @cached_property
    def st(self) -> SearchState:
        return search_state(self.spec, self.r_sat, self.loads)

    @cached_property
    def fit(self) -> LocalFit | None:
        """The local policy's fit of this decision (its stop level; the reported CI at its report
        level): one fit serves the stop test and the next load."""
        pol, c = self.spec.policy, self.spec.confidence
        if pol.name != "local":
            return None
        return local_fit(self.loads, self.r_sat, self.spec.width, pol.fit_confidence(c),
                         report_confidence=pol.fit_ci_confidence(c))


def guard(g: Goal, load: float, why: str, name: str | None) -> Step | None:
    """The nominated load, checked. name None (a strategy that may yield): None when the load lies
    at or above a load that cannot be measured. Otherwise (the picker, the last resort): an invalid
    load ends the goal; one at or above the lowest unmeasurable load above the bracket's low end is
    moved halfway below it; a classified load gives way to the bracket's midpoint."""
    lo, hi = g.st.lo, g.st.hi
    above_lo = [t for t in g.unmeasurable.values() if lo is None or t.load_ops_s > lo.load]
    if name is None:
        if load_key(load) in g.unmeasurable or any(t.load_ops_s <= load * (1 + 1e-9) for t in above_lo):
            return None
        return "next", (load, why)
    if not (math.isfinite(load) and load > 0):
        return "done", (False, f"picker proposed an invalid load {load!r}: {why}", None, g.loads)
    if above_lo:
        cap = min(above_lo, key=lambda t: t.load_ops_s)
        floor = lo.load if lo is not None else 0.0
        if load >= cap.load_ops_s * (1 - 1e-9):
            if cap.load_ops_s - floor <= g.spec.resolution * cap.load_ops_s:
                return "done", (False, f"λ* ≥ {floor:g} ops/s: {cap.load_ops_s:g} ops/s cannot be measured "
                                       f"({cap.reason or 'invalid'}) and lies within the resolution of it",
                                None, g.loads)
            load, why = ((floor + cap.load_ops_s) / 2.0,
                         f"{cap.load_ops_s:g} ops/s cannot be measured ({cap.reason or 'invalid'}) → "
                         f"halfway below it")
    if load_key(load) in g.unmeasurable:
        return "done", (False, f"{load:g} ops/s cannot be measured ({g.unmeasurable[load_key(load)].reason})",
                        None, g.loads)
    same = [s for s in g.loads if load_key(s.load) == load_key(load)]
    if same and same[0].status != LoadStatus.OPEN:
        if lo is None or hi is None:
            return "done", (False, f"picker repeated the classified load {load:g}", None, g.loads)
        load, why = (lo.load + hi.load) / 2.0, f"{why}: already classified → bisect"
        if any(load_key(s.load) == load_key(load) and s.status != LoadStatus.OPEN for s in g.loads):
            return "done", (False, "no untested load left in the bracket", None, g.loads)
    return "next", (load, f"{name}: {why}")


def stop_rule_met(g: Goal) -> Step | None:
    """A load whose CI meets the stop rule, or (stop_rule "fit") the fit's λ* CI inside the fitted
    peak-rate region."""
    spec = g.spec
    peaks = [s for s in g.loads if s.status == LoadStatus.PEAK]
    if peaks:
        best = min(peaks, key=lambda s: (abs(s.mean - g.r_sat), s.order))
        rule = "CI overlaps" if spec.stop_rule == "overlap" else "CI inside"
        return "done", (True, f"{rule} the peak-rate region at {best.load:g} ops/s with accuracy "
                              f"{best.ci.accuracy:.3f} ≥ {spec.accuracy:g}", best, g.loads)
    if spec.stop_rule != "fit":
        return None
    if spec.policy.name == "local":
        return _local_fit_stop(g)
    fit = fit_peak(g.loads, g.r_sat, spec.width, spec.confidence)
    if fit is not None and fit.inside:
        return "done", (True, f"fit: λ* CI [{fit.ci[0]:.4g}, {fit.ci[1]:.4g}] inside the fitted region "
                              f"[{fit.region[0]:.4g}, {fit.region[1]:.4g}] ({fit.n_trials} trials at "
                              f"{len(fit.loads)} loads)", None, g.loads, fit)
    return None


def _local_fit_stop(g: Goal) -> Step | None:
    """The local policy's stop: the fitted mean at λ̂* inside the region, or λ̂*'s CI inside the
    fitted region (docs/controller.md "The local policy")."""
    lf = g.fit
    if lf is None or lf.n_trials < FIT_STOP_MIN_TRIALS:
        return None          # σ̂ on < 10 residual df: a look at a fluke-small σ̂ would stop the rating
    if g.spec.accuracy > 1.0 - g.spec.width and _accuracy(*lf.level_ci) < g.spec.accuracy:
        return None          # Eq. 2 on the fitted mean's CI (a CI inside [R_sat ± s] has accuracy ≥ 1 − s)
    if not lf.inside and lf.level_inside:
        return "done", (True, f"fit: mean at λ̂* {lf.peak_rate:.5g} CI [{lf.level_ci[0]:.4g}, {lf.level_ci[1]:.4g}] "
                              f"ms inside the peak-rate region ({lf.n_trials} trials at {len(lf.loads)} loads)",
                        None, g.loads, lf.reported)
    if lf.inside:
        return "done", (True, f"fit: λ* CI [{lf.ci[0]:.4g}, {lf.ci[1]:.4g}] inside the fitted region "
                              f"[{lf.region[0]:.4g}, {lf.region[1]:.4g}] ({lf.n_trials} trials at "
                              f"{len(lf.loads)} loads)", None, g.loads, lf.reported)
    return None


def local_fit_step(g: Goal) -> Step | None:
    """policy "local": where the local fit puts λ* (local.py), unless the seed sample of
    seed_trials is not complete or the guard refuses it."""
    spec = g.spec
    if spec.policy.name != "local":
        return None
    if spec.seed_load is not None and any(load_key(s.load) == load_key(spec.seed_load)
                                          and s.n < spec.min_trials_at(s.load) for s in g.loads):
        return None
    last = next((t.load_ops_s for t in reversed(g.trials) if t.valid), None)
    placed = spec.policy.picker(spec).place(g.st, last, g.fit)
    return None if placed is None else guard(g, placed[0], placed[1], None)


def keep_sampling(g: Goal) -> Step | None:
    """An undecided load inside the bracket: more trials there (Algorithm 2 step 6), or one more at
    the lower load that reads above it (the monotone check)."""
    lo, hi = g.st.lo, g.st.hi
    open_in = [s for s in g.loads if s.status == LoadStatus.OPEN
               and (lo is None or s.load > lo.load) and (hi is None or s.load < hi.load)]
    if not open_in:
        return None
    last = {(load_key(t.load_ops_s)): i for i, t in enumerate(g.trials)}
    cur = max(open_in, key=lambda s: last[load_key(s.load)])
    holder = next((s for s in g.loads if cur.held_by is not None and s.load == cur.held_by), None)
    if holder is not None and holder.n <= cur.n:
        # the lower load's median on fewer trials is the likelier fluke: one more trial there
        return "next", (holder.load, f"monotone check: {holder.load:g} ops/s (median "
                                     f"{holder.median_ms:.4g} ms, {holder.n} trials) reads above "
                                     f"{cur.load:g} ops/s ({cur.n} trials): another trial at the lower load")
    spec = g.spec
    if cur.n < spec.min_trials:
        why = "first trials"
    elif cur.n < spec.min_trials_at(cur.load):
        why = f"seed sample: trial {cur.n + 1} of {spec.seed_trials} at the seed load"
    else:
        why = f"potential peak: {_ci_text(cur)}"
    return "next", (cur.load, why)


def _ci_text(s: LoadSummary) -> str:
    """A load's CI for a reason line: [CC] Eq. 1's, its lower end clipped at 0 (a mean response time
    is ≥ 0, so the clipped interval covers it whenever Eq. 1's does): no latency bound below zero."""
    lo = max(0.0, s.ci.low)
    return f"CI [{lo:.4g}, {s.ci.high:.4g}] ms, accuracy {_accuracy(lo, s.ci.high):.3f}"


def strawman_end(g: Goal) -> Step | None:
    """§3.1 strawman: the first saturated load ends the search."""
    lo, hi, spec = g.st.lo, g.st.hi, g.spec
    if not (spec.strawman and lo is not None and hi is not None):
        return None
    step = spec.policy.step(spec)
    ok = (hi.load - lo.load) <= step * (1 + 1e-9)
    return "done", (ok, f"linear strawman: first saturated load {hi.load:g} ops/s "
                        f"({spec.policy.trials} trials each); λ* = last unsaturated load "
                        f"{lo.load:g}" + ("" if ok else f" (bracket wider than the increment {step:g})"),
                    None, g.loads)


def bracket_resolved(g: Goal) -> Step | None:
    lo, hi = g.st.lo, g.st.hi
    if lo is None or hi is None or not within_resolution(lo.load, hi.load, g.spec.resolution):
        return None
    if hi.latency_saturated:
        return "done", (True, f"latency rule: bracket [{lo.load:g}, {hi.load:g}] resolved", None, g.loads)
    return "done", (True, f"bracket [{lo.load:g}, {hi.load:g}] narrower than resolution "
                          f"{g.spec.resolution:g}: λ* interpolated", None, g.loads)


def loads_exhausted(g: Goal) -> Step | None:
    if len(g.loads) >= g.spec.max_loads:
        return "done", (False, f"max_loads ({g.spec.max_loads}) reached", None, g.loads)
    return None


def picker_step(g: Goal) -> Step:
    """The policy's picker (pickers.py, safeguarded.py), through the guard."""
    picker = g.spec.policy.picker(g.spec)
    load, why = picker.next_load(g.st)
    return guard(g, load, why, picker.name)


CHAIN: tuple[Callable[[Goal], Step | None], ...] = (
    stop_rule_met, local_fit_step, keep_sampling, strawman_end, bracket_resolved, loads_exhausted, picker_step)


CERTIFY_MAX_TRIALS = 11    # certification trials stop at a load with this many (a look of stats.sequential)
CERTIFY_MIN_TRIALS = 3     # ... and may take a load to this many whatever max_trials_per_load: on two
                           # trials a one-sided bound is t on 1 df (t_0.99 = 31.8 standard errors)
STEP_OUT = 1.25            # with no load clearly beyond λ*, certification tries one ×/÷ this further out


def _clearly_saturated(s: LoadSummary, r_sat: float) -> bool:
    """Median ≥ 2·R_sat, or completions short of offered by > 1 % beyond Poisson noise: the loads whose
    next trials show the upper end soonest (certify.py's log-mean and completions tests)."""
    return s.median_ms >= 2 * r_sat or (s.throughput_z < -3 and s.achieved_ops_s < 0.99 * s.load)


def _certify_step(g: Goal, room: list[LoadSummary], clear: list[LoadSummary], edge: LoadSummary,
                  out: float, why: str) -> Step | None:
    """One more trial at the clearest load (clear, ordered best first); else the edge load's first
    trials; else a new load `out` further from λ*. Loads near λ* are passed over: showing one of them
    saturated (or not) costs many trials, one a step further out costs one or two."""
    if clear:
        return guard(g, clear[0].load, why, None)
    if edge.n < g.spec.min_trials and any(s is edge for s in room):
        return guard(g, edge.load, why, None)       # the new load: its trials first
    return guard(g, out, why, None)


def certify_ends(g: Goal, done: Step) -> Step:
    """A goal the chain found converged (`done`) needs a finite certified λ* interval (certify.py):
    while an end is not shown, one more trial where it is cheapest to show (`_certify_step`): above,
    of the loads read clearly saturated the one a look-ahead shows with the fewest more trials
    (`_trials_to_show`), else ×STEP_OUT the highest tested load; below, the same among the loads with
    a median ≤ R_sat/2, else ÷STEP_OUT the lowest. A load with
    CERTIFY_MAX_TRIALS trials is passed over; the budget, max_trials and max_loads bound the rest.
    `done` as it is once both ends are shown; not converged when the load to try cannot be measured.
    Both ends shown but H > (1 + 4·resolution)·L: ("tighten", (load, why, done's payload)), a trial
    the goal may do without (decide.py)."""
    step = _certify_next(g)
    if step is not None and step[0] == "tighten":
        return "tighten", (*step[1], done[1])
    if step is None or step[0] != "open":
        return step or done
    conv, reason, *rest = done[1]
    return "done", (False, f"not converged: {reason}, but the λ* interval stays open ({step[1]})", *rest)


def _certify_next(g: Goal) -> Step | None:
    """The next certification trial; ("open", why) when an end is not shown and cannot be; None
    when both ends are shown and H ≤ (1 + 4·resolution)·L, or no load between them is cheap to
    tighten them with (one read clearly saturated, or with a median ≤ R_sat/2)."""
    spec = g.spec
    level = spec.bound_confidence if spec.bound_confidence is not None else spec.confidence
    b = load_bounds(g.r_sat, spec.l_sat_ms, level, g.trials, spec.max_loads, spec.policy.distrust_repeats,
                    frozenset(load_key(s.load) for s in g.loads if s.latency_saturated))
    if spec.strawman:
        return None
    cap = max(CERTIFY_MIN_TRIALS, min(spec.max_trials_per_load, CERTIFY_MAX_TRIALS))
    inside = [s for s in g.loads if b.low < s.load < b.high and s.n < cap and load_key(s.load) not in g.unmeasurable]
    ups = [s for s in inside if _clearly_saturated(s, g.r_sat)]
    downs = [s for s in inside if s.median_ms <= g.r_sat / 2]
    need = {(s.load, up): _trials_to_show(g, s, cap, level, up)
            for up, ss in ((True, ups), (False, downs)) for s in ss}
    # cheapest to show first (fewest more trials like its typical one), then the tighter end; loads
    # no look-ahead shows, the clearest first
    ups.sort(key=lambda s: (need[s.load, True], s.load if need[s.load, True] < math.inf else -s.median_ms))
    downs.sort(key=lambda s: (need[s.load, False], -s.load if need[s.load, False] < math.inf else s.median_ms))
    if not math.isfinite(b.high):
        top = max(g.loads, key=lambda s: s.load)
        step = _certify_step(g, inside, ups, top, STEP_OUT * top.load, "certify upper end: no load shown saturated yet")
        return step or ("open", f"no load shown saturated; {STEP_OUT * top.load:g} ops/s cannot be measured")
    if b.low <= 0:
        bottom = min(g.loads, key=lambda s: s.load)
        step = _certify_step(g, inside, downs, bottom, bottom.load / STEP_OUT, "certify lower end: no load shown unsaturated yet")
        return step or ("open", f"no load shown unsaturated; {bottom.load / STEP_OUT:g} ops/s cannot be measured")
    if b.high <= (1 + 4 * spec.resolution) * b.low:
        return None    # narrow enough: λ* ± about 2·resolution (quick: ± 10 %)
    ways = sorted([(need[s.load, True], 0, s) for s in ups] + [(need[s.load, False], 1, s) for s in downs],
                  key=lambda w: w[:2])
    for n_more, down, s in ways:           # wider: tighten where a look-ahead says it pays off
        if n_more < math.inf:
            end = f"lower end {b.low:g}" if down else f"upper end {b.high:g}"
            return _tighten(guard(g, s.load, f"certify: tighten the {end} ops/s at {s.load:g}", None))
    return _tighten(_new_load_inside(g, b.low, b.high)) if _too_wide(g, b, level) else None


def _too_wide(g: Goal, b: LoadBounds, level: float) -> bool:
    """The λ* interval as reported ([L, H] = b, ∩ the local fit's: certify.certified) has a half-width
    above spec.interval_halfwidth of its low end (so of any λ* inside it)."""
    spec, hw = g.spec, g.spec.interval_halfwidth
    if hw is None or b.high - b.low <= 2 * hw * b.low:       # [L, H] holds the reported interval
        return False
    lo, hi = certified(g.r_sat, spec.l_sat_ms, spec.width, level, g.trials, g.loads, spec.max_loads,
                       spec.policy.distrust_repeats, use_fit=spec.policy.name == "local", bounds=b).interval
    return hi - lo > 2 * hw * lo


def _tighten(step: Step | None) -> Step | None:
    """A tightening trial is optional: ("tighten", (load, why)), which decide drops for the goal's
    result when the budget or max_trials cannot pay for it."""
    return None if step is None else ("tighten", step[1])


def _new_load_inside(g: Goal, low: float, high: float) -> Step | None:
    """No tested load can tighten [L, H], whose half-width is above spec.interval_halfwidth: a new
    load halfway across the wider of the gaps next to an end, (L, the lowest load tested above L) or
    (the highest tested below H, H), when wider than interval_halfwidth of it (so a rating adds a few
    at most). On a wall a load a step past the knee (or before it) is shown in a trial or three: the
    real 4000 ops/s, neither side at 0.5–117 ms, left [3800, 4800] where a new 4400 shows H."""
    tested = sorted(s.load for s in g.loads)
    gaps = [(min(x for x in tested if x > low) - low, low, "lower"),
            (high - max(x for x in tested if x < high), high, "upper")]
    for gap, end, name in sorted(gaps, reverse=True):
        load = end + gap / 2.0 if name == "lower" else end - gap / 2.0
        if gap > g.spec.interval_halfwidth * load:
            step = guard(g, load, f"certify: tighten the {name} end {end:g} ops/s at a new load", None)
            if step is not None:
                return step
    return None


def _trials_to_show(g: Goal, s: LoadSummary, cap: int, level: float, upper: bool) -> float:
    """How many more trials like its typical one (the median's) would show load s saturated (upper)
    or unsaturated, up to `cap` in all: a look-ahead that sends certification where it is cheapest.
    inf when none would; the bounds only move at the looks' sample sizes (stats.sequential). s lies
    strictly between the current ends, so showing it moves an end: one load's test suffices."""
    ts = [t for t in g.trials if load_key(t.load_ops_s) == load_key(s.load) and t.valid and not t.harness_failure]
    if not ts or (not upper and s.latency_saturated):
        return math.inf
    typical = min(ts, key=lambda t: abs(t.mean_ms - s.median_ms))
    for n in sorted({*look_sizes(cap, 1), *look_sizes(cap, 2)}):
        if n > len(ts) and load_shown(ts + [typical] * (n - len(ts)), g.r_sat, g.spec.l_sat_ms, level,
                                      g.spec.max_loads, upper):
            return float(n - len(ts))
    return math.inf


def decide_goal(spec: RatingSpec, r_sat: float, trials: Sequence[TrialResult],
                unmeasurable: Mapping[float, TrialResult] | None = None) -> Step:
    """("next", (load, reason)), ("done", (converged, reason, peak_summary|None, loads[, fit])) or
    ("tighten", (load, reason, done's payload)): the first strategy of CHAIN that has something to
    say, and a converged goal's certification (certify_ends)."""
    g = Goal(spec, r_sat, trials, unmeasurable or {})
    for strategy in CHAIN:
        step = strategy(g)
        if step is not None:
            if step[0] == "done" and step[1][0]:
                return certify_ends(g, step)
            return step
    raise AssertionError("picker_step always answers")
