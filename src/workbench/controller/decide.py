"""Peak-rate search: `decide(spec, trials)` (a pure function of the trial log) and `find_peak`.

[CC] = Cutting Corners (shared/seeds/000_*, newer text 002_*), Algorithm 2. For each test load
the controller runs two trials, builds the CI of the mean response time at confidence c and
compares it with the peak-rate region [R_sat ± s·R_sat]:

* no overlap → the load is classified (unsaturated below / saturated above) and the picker
  nominates the next load;
* overlap → a potential peak: more trials until the stop rule holds.

Stop rules (`RatingSpec.stop_rule`, docs/controller.md "Decision rule"):
* "overlap" — the paper's rule: stop when the CI overlaps the region and its accuracy (Eq. 2)
  is ≥ a. On noisy servers this stops outside the region about a third of the time.
* "inside" (default) — stop only when the whole CI lies inside the region (and accuracy ≥ a).
  A potential peak whose accurate CI is not inside but excludes R_sat is classified below /
  above R_sat at confidence c and the search moves on inside the (narrower) bracket; a load that
  reaches `max_trials_per_load` is classified by its mean alone ("below?"/"above?").
  The search also stops when the bracket [highest unsaturated, lowest saturated] is narrower
  than `resolution`·λ (no measurable load left between them; λ* is then interpolated).
* "fit" — the inside rule, plus a stop on a local fit of log R(λ) near R_sat (fit.py); with policy
  "local" (the profiles' default, local.py) that fit also places the loads (docs/controller.md
  "The local policy").

Everything — current load, bracket, picker state, runlength — is re-derived from the log on
every call: no hidden state, deterministic, resumable after a crash.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from workbench.controller.fit import FIT_STOP_MIN_TRIALS, fit_peak, local_fit, near_r_sat
from workbench.controller.local import Local
from workbench.controller.pickers import Binsearch, Linear, Model, Picker
from workbench.controller.result import PeakResult, result_of
from workbench.controller.runlength import next_runlength
from workbench.controller.safeguarded import Safeguarded
from workbench.controller.spec import RatingSpec
from workbench.controller.state import LoadStatus, LoadSummary, load_key
from workbench.controller.steadiness import excluding_not_steady, rerun_runlength_s
from workbench.controller.summary import search_state, summarize, trial_cost_s
from workbench.controller.trial import TrialResult
from workbench.stats.intervals import accuracy as _accuracy


POLICIES = ("linear", "binsearch", "model", "safeguarded", "local")


@dataclass(frozen=True)
class NextTrial:
    load_ops_s: float
    runlength_s: float
    reason: str


@dataclass(frozen=True)
class Done:
    result: PeakResult


def make_picker(spec) -> Picker:
    """The picker named by `spec.policy` ("linear", "binsearch", "model", "safeguarded", "local")."""
    if spec.policy == "binsearch":
        return Binsearch(spec.seed_step)
    if spec.policy == "linear":
        return Linear(spec.linear_step_ops_s or spec.first_load, strawman=spec.strawman)
    if spec.policy == "model":
        return Model(spec.model_form, spec.seed_step)
    if spec.policy == "safeguarded":
        return Safeguarded(spec.model_form, spec.seed_step)
    if spec.policy == "local":
        return Local(spec)
    raise ValueError(f"policy must be one of {', '.join(POLICIES)}; got {spec.policy!r}")


def _unmeasurable(spec: RatingSpec, trials: Sequence[TrialResult]) -> dict[float, TrialResult]:
    """Loads with a run of ≥ max_invalid_per_load consecutive invalid trials → the run's last trial."""
    out: dict[float, TrialResult] = {}
    run = 0
    for i, t in enumerate(trials):
        same = i > 0 and load_key(trials[i - 1].load_ops_s) == load_key(t.load_ops_s)
        run = (run + 1 if same else 1) if not t.valid else 0
        if run >= spec.max_invalid_per_load:
            out[load_key(t.load_ops_s)] = t
    return out


def _stop_now(spec: RatingSpec, r_sat: float, loads: list[LoadSummary]) -> tuple | None:
    """The done payload when the stop rule holds: a load whose CI meets it, or (stop_rule "fit")
    the local fit's λ* CI inside the fitted peak-rate region; else None."""
    peaks = [s for s in loads if s.status == LoadStatus.PEAK]
    if peaks:
        best = min(peaks, key=lambda s: (abs(s.mean - r_sat), s.order))
        rule = "CI overlaps" if spec.stop_rule == "overlap" else "CI inside"
        return (True, f"{rule} the peak-rate region at {best.load:g} ops/s with accuracy "
                      f"{best.ci.accuracy:.3f} ≥ {spec.accuracy:g}", best, loads)
    if spec.stop_rule == "fit":
        if spec.policy == "local":
            lf = local_fit(loads, r_sat, spec.width, spec.fit_confidence or spec.confidence,
                           report_confidence=spec.fit_ci_confidence or spec.confidence)
            if lf is not None and spec.accuracy > 1.0 - spec.width and _accuracy(*lf.level_ci) < spec.accuracy:
                lf = None    # Eq. 2 on the fitted mean's CI (a CI inside [R_sat ± s] has accuracy ≥ 1 − s)
            if lf is not None and lf.n_trials < FIT_STOP_MIN_TRIALS:
                lf = None    # σ̂ on < 10 residual df: a look at a fluke-small σ̂ would stop the rating
            if lf is not None and not lf.inside and lf.level_inside:
                return (True, f"fit: mean at λ̂* {lf.peak_rate:.5g} CI [{lf.level_ci[0]:.4g}, {lf.level_ci[1]:.4g}] ms "
                              f"inside the peak-rate region ({lf.n_trials} trials at {len(lf.loads)} loads)",
                        None, loads, lf.reported)
            if lf is not None and lf.inside:
                return (True, f"fit: λ* CI [{lf.ci[0]:.4g}, {lf.ci[1]:.4g}] inside the fitted region "
                              f"[{lf.region[0]:.4g}, {lf.region[1]:.4g}] ({lf.n_trials} trials at "
                              f"{len(lf.loads)} loads)", None, loads, lf.reported)
            fit = None
        else:
            fit = fit_peak(loads, r_sat, spec.width, spec.confidence)
        if fit is not None and fit.inside:
            return (True, f"fit: λ* CI [{fit.ci[0]:.4g}, {fit.ci[1]:.4g}] inside the fitted region "
                          f"[{fit.region[0]:.4g}, {fit.region[1]:.4g}] ({fit.n_trials} trials at "
                          f"{len(fit.loads)} loads)", None, loads, fit)
    return None


def _local_step(spec: RatingSpec, st, loads: list[LoadSummary], trials: Sequence[TrialResult],
                unmeasurable: Mapping[float, TrialResult]) -> tuple[float, str] | None:
    """policy "local": the local fit's nomination (local.py), or None (no usable fit; the seed
    sample of seed_trials not complete yet; a load at or above an unmeasurable one)."""
    if spec.seed_load is not None and any(load_key(s.load) == load_key(spec.seed_load)
                                          and s.n < spec.min_trials_at(s.load) for s in loads):
        return None
    last = next((t.load_ops_s for t in reversed(trials) if t.valid), None)
    placed = Local(spec).place(st, last)
    if placed is None or load_key(placed[0]) in unmeasurable or any(
            t.load_ops_s <= placed[0] * (1 + 1e-9) for t in unmeasurable.values()
            if st.lo is None or t.load_ops_s > st.lo.load):
        return None
    return placed


def _decide_goal(spec: RatingSpec, r_sat: float, trials: Sequence[TrialResult],
                 unmeasurable: Mapping[float, TrialResult] | None = None) -> tuple[str, Any]:
    """("next", (load, reason)) or ("done", (converged, reason, peak_summary|None, loads)).

    unmeasurable: loads never to nominate again (see decide); nominations at or above the lowest
    one above the bracket's low end are moved halfway between that low end (or 0) and it."""
    unmeasurable = unmeasurable or {}
    loads = [s for s in summarize(spec, trials, r_sat)
             if not (s.status == LoadStatus.OPEN and load_key(s.load) in unmeasurable)]
    stop = _stop_now(spec, r_sat, loads)
    if stop is not None:
        return "done", stop
    st = search_state(spec, r_sat, loads)
    lo, hi = st.lo, st.hi
    placed = _local_step(spec, st, loads, trials, unmeasurable) if spec.policy == "local" else None
    if placed is not None:
        return "next", placed
    # an undecided load inside the bracket: keep sampling it (Algorithm 2 step 6)
    open_in = [s for s in loads if s.status == LoadStatus.OPEN
               and (lo is None or s.load > lo.load) and (hi is None or s.load < hi.load)]
    if open_in:
        last = {(load_key(t.load_ops_s)): i for i, t in enumerate(trials)}
        cur = max(open_in, key=lambda s: last[load_key(s.load)])
        holder = next((s for s in loads if cur.held_by is not None and s.load == cur.held_by), None)
        if holder is not None and holder.n <= cur.n:
            # the lower load's median on fewer trials is the likelier fluke: one more trial there
            return "next", (holder.load, f"monotone check: {holder.load:g} ops/s (median "
                                         f"{np.median(holder.means):.4g} ms, {holder.n} trials) reads above "
                                         f"{cur.load:g} ops/s ({cur.n} trials): another trial at the lower load")
        if cur.n < spec.min_trials:
            why = "first trials"
        elif cur.n < spec.min_trials_at(cur.load):
            why = f"seed sample: trial {cur.n + 1} of {spec.seed_trials} at the seed load"
        else:
            why = (f"potential peak: CI [{cur.ci.low:.4g}, {cur.ci.high:.4g}] ms, accuracy "
                   f"{cur.ci.accuracy:.3f}")
        return "next", (cur.load, why)
    if spec.strawman and lo is not None and hi is not None:
        step = spec.linear_step
        ok = (hi.load - lo.load) <= step * (1 + 1e-9)
        return "done", (ok, f"linear strawman: first saturated load {hi.load:g} ops/s "
                            f"({spec.linear_trials} trials each); λ* = last unsaturated load "
                            f"{lo.load:g}" + ("" if ok else f" (bracket wider than the increment {step:g})"),
                        None, loads)
    if lo is not None and hi is not None and (hi.load - lo.load) <= spec.resolution * hi.load:
        if hi.latency_saturated:
            return "done", (True, f"latency rule: bracket [{lo.load:g}, {hi.load:g}] resolved", None, loads)
        return "done", (True, f"bracket [{lo.load:g}, {hi.load:g}] narrower than resolution "
                              f"{spec.resolution:g}: λ* interpolated", None, loads)
    if len(loads) >= spec.max_loads:
        return "done", (False, f"max_loads ({spec.max_loads}) reached", None, loads)
    picker = make_picker(spec)
    load, why = picker.next_load(st)
    if not (math.isfinite(load) and load > 0):
        return "done", (False, f"picker proposed an invalid load {load!r}: {why}", None, loads)
    caps = [t for t in unmeasurable.values() if lo is None or t.load_ops_s > lo.load]
    if caps:
        cap = min(caps, key=lambda t: t.load_ops_s)
        floor = lo.load if lo is not None else 0.0
        if load >= cap.load_ops_s * (1 - 1e-9):
            if cap.load_ops_s - floor <= spec.resolution * cap.load_ops_s:
                return "done", (False, f"λ* ≥ {floor:g} ops/s: {cap.load_ops_s:g} ops/s cannot be measured "
                                       f"({cap.reason or 'invalid'}) and lies within the resolution of it",
                                None, loads)
            load, why = ((floor + cap.load_ops_s) / 2.0,
                         f"{cap.load_ops_s:g} ops/s cannot be measured ({cap.reason or 'invalid'}) → "
                         f"halfway below it")
    if load_key(load) in unmeasurable:
        return "done", (False, f"{load:g} ops/s cannot be measured ({unmeasurable[load_key(load)].reason})",
                        None, loads)
    same = [s for s in loads if load_key(s.load) == load_key(load)]
    if same and same[0].status != LoadStatus.OPEN:
        if lo is not None and hi is not None:
            load, why = (lo.load + hi.load) / 2.0, f"{why}: already classified → bisect"
            if any(load_key(s.load) == load_key(load) and s.status != LoadStatus.OPEN for s in loads):
                return "done", (False, "no untested load left in the bracket", None, loads)
        else:
            return "done", (False, f"picker repeated the classified load {load:g}", None, loads)
    return "next", (load, f"{picker.name}: {why}")


def _probe(spec: RatingSpec, r_sat: float, valid: Sequence[TrialResult], why: str) -> bool:
    """policy "local" with probe_runlength_s: a trial at a load the local fit did not place whose
    valid trials so far (none, or their median) lie outside the fit's window runs probe_runlength_s:
    it only has to tell far below from far above ([CC] §3.2: a shorter trial is noisier by √)."""
    if spec.policy != "local" or spec.probe_runlength_s is None or why.startswith("local fit"):
        return False
    if not valid:
        return True
    med = float(np.median([t.mean_ms for t in valid]))
    return not near_r_sat(med, r_sat)


def harness_failing(spec: RatingSpec, trials: Sequence[TrialResult]) -> str | None:
    """The stop reason when the harness keeps failing: the log ends in max_harness_in_row
    harness failures in a row ("harness failing: <the last one's reason>"); else None."""
    tail = list(itertools.takewhile(lambda t: t.harness_failure, reversed(trials)))
    if len(tail) < spec.max_harness_in_row:
        return None
    return (f"harness failing: {len(tail)} harness failures in a row "
            f"({tail[0].reason or 'no reason given'})")


def _rerun_invalid(spec: RatingSpec, server: Sequence[TrialResult], not_steady: bool
                   ) -> tuple[tuple[float, str] | None, float, str | None]:
    """(next, runlength, stop reason) after an invalid trial, server[-1] (not_steady: one the
    controller excluded, steadiness.py). Invalid trials never count and are re-run at the same load
    and runlength (a not-steady one longer where its warm-up says so). After max_invalid_per_load
    in a row the load is unmeasurable (a generator at its ceiling; a server so far past λ* that its
    backlog delays the generator's sends): once another load has a valid trial the search goes on
    below it (_decide_goal: next None); it ends at twice that many invalid trials in a row, or
    when no other load was ever measured (the harness itself is suspect)."""
    last = server[-1]
    tail = list(itertools.takewhile(lambda t: not t.valid, reversed(server)))   # invalid, newest first
    run = len(tail)
    streak = len(list(itertools.takewhile(lambda t: load_key(t.load_ops_s) == load_key(last.load_ops_s), tail)))
    measured_elsewhere = any(t.valid and load_key(t.load_ops_s) != load_key(last.load_ops_s) for t in server)
    if streak < spec.max_invalid_per_load:
        if not_steady:
            return (last.load_ops_s, f"re-run {last.reason}"), rerun_runlength_s(spec, last), None
        return (last.load_ops_s, f"re-run invalid trial ({last.reason or 'invalid'})"), float(last.runlength_s), None
    if run >= 2 * spec.max_invalid_per_load or not measured_elsewhere:
        return None, spec.runlength_s, (f"{run} consecutive invalid trials"
                                        + (f" at {last.load_ops_s:g} ops/s" if run == streak else
                                           f", the last {streak} at {last.load_ops_s:g} ops/s")
                                        + f" ({last.reason or 'no reason given'})")
    return None, spec.runlength_s, None


def decide(spec: RatingSpec, trials: Sequence[TrialResult]) -> NextTrial | Done:
    """Algorithm 2 as a pure function of the trial log: the next trial to run, or the result.

    Harness failures (TrialResult.harness_failure) measured nothing of the server: every
    statistical step below reads only the server's trials (`server`: measured and invalid), so
    after a harness failure the decision is the one taken before it — the same load and runlength
    are run again. They cost: the budget and max_trials count every trial, and
    `max_harness_in_row` of them in a row stop the rating (harness_failing). A trial judged not
    steady is, to everything below, an invalid trial (steadiness.py).

    Several R_sat goals (spec.goals): every goal is judged on the one log; the lowest goal not met
    yet places the next trial, so the search ends when every goal is met or the budget (max_trials)
    ends, and the result gives each goal's λ* (result.result_of)."""
    trials = list(trials)
    for i, t in enumerate(trials):
        if not isinstance(t, TrialResult):
            raise TypeError(f"trial {i} is not a TrialResult")
    trials, not_steady = excluding_not_steady(spec, trials)  # not-steady trials: invalid, re-run
    cost = trial_cost_s(spec, trials)                        # every trial costs, harness failures too
    server = [t for t in trials if not t.harness_failure]    # the samples of the server
    goals = spec.goals
    done: dict[float, tuple] = {}
    nxt: tuple[float, str] | None = None
    stop_reason: str | None = harness_failing(spec, trials)
    rl = spec.runlength_s
    unmeasurable = _unmeasurable(spec, server)
    if stop_reason is None and server and not server[-1].valid:
        last_is_not_steady = max(i for i, t in enumerate(trials) if not t.harness_failure) in not_steady
        nxt, rl, stop_reason = _rerun_invalid(spec, server, last_is_not_steady)
    open_search = nxt is None and stop_reason is None
    if open_search or len(goals) > 1:   # several goals: each is judged, so a stop reports every met one
        for g in goals:
            kind, payload = _decide_goal(spec.at_goal(g), g, server, unmeasurable)
            if kind == "done":
                done[g] = payload
                continue
            if not open_search or nxt is not None:      # the lowest open goal places the next trial
                continue
            load, why = payload
            nxt = (load, why if len(goals) == 1 else f"goal {g:g} ms: {why}")
            valid = [t for t in server if t.valid and load_key(t.load_ops_s) == load_key(load)]
            rl = next_runlength(spec, [t.mean_ms for t in valid],
                                [float(t.runlength_s) for t in valid]).runlength_s
            if _probe(spec.at_goal(g), g, valid, why):
                rl = float(spec.probe_runlength_s)
    if nxt is not None and trials and trials[-1].harness_failure:
        nxt = (nxt[0], f"re-run after a harness failure ({trials[-1].reason or 'no reason given'}): {nxt[1]}")
    if nxt is not None and stop_reason is None:
        if len(trials) >= spec.max_trials:
            stop_reason = f"max_trials ({spec.max_trials}) exhausted"
        elif cost + rl + spec.trial_overhead_s > spec.budget_s * (1 + 1e-12):
            stop_reason = (f"budget exhausted: {cost:g} s spent, next trial needs "
                           f"{rl + spec.trial_overhead_s:g} s of {spec.budget_s:g} s")
        else:
            return NextTrial(float(nxt[0]), float(rl), nxt[1])
    return Done(result_of(spec, trials, done, stop_reason, not_steady))


def find_peak(spec: RatingSpec, measure: Callable[[float, float], TrialResult],
              trials: Sequence[TrialResult] = (),
              on_trial: Callable[[TrialResult], None] | None = None) -> PeakResult:
    """The loop around `decide` (one code path): ask, measure, append, repeat.

    `trials` resumes from an existing log. `measure(load_ops_s, runlength_s)` returns a
    TrialResult; it is tagged with `.at(load, runlength)` before it enters the log.
    """
    log = list(trials)
    while True:
        d = decide(spec, log)
        if isinstance(d, Done):
            return d.result
        t = measure(d.load_ops_s, d.runlength_s)
        if not isinstance(t, TrialResult):
            raise TypeError(f"measure() must return a TrialResult, got {type(t).__name__}")
        t = t.at(d.load_ops_s, d.runlength_s)
        log.append(t)
        if on_trial is not None:
            on_trial(t)
