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

import dataclasses
import itertools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workbench.controller.fit import near_r_sat
from workbench.controller.result import PeakResult, result_of
from workbench.controller.runlength import next_runlength
from workbench.controller.spec import RatingSpec
from workbench.controller.state import load_key
from workbench.controller.steadiness import excluding_not_steady, rerun_runlength_s
from workbench.controller.steps import GoalDone, NextLoad, Tighten
from workbench.controller.strategies import decide_goal
from workbench.controller.summary import trial_cost_s
from workbench.controller.trial import TrialResult


@dataclass(frozen=True)
class NextTrial:
    load_ops_s: float
    runlength_s: float
    reason: str


@dataclass(frozen=True)
class Done:
    result: PeakResult


def _unmeasurable(spec: RatingSpec, trials: Sequence[TrialResult]) -> dict[float, TrialResult]:
    """Loads with a run of ≥ max_invalid_per_load consecutive invalid trials → the run's last
    trial."""
    out: dict[float, TrialResult] = {}
    run = 0
    for i, t in enumerate(trials):
        same = i > 0 and load_key(trials[i - 1].load) == load_key(t.load)
        run = (run + 1 if same else 1) if not t.valid else 0
        if run >= spec.max_invalid_per_load:
            out[load_key(t.load)] = t
    return out


def _probe(
    spec: RatingSpec, r_sat: float, valid: Sequence[TrialResult], step: NextLoad
) -> float | None:
    """The probe runlength of the policy (local: probe_share·runlength_s) for a trial at a load the
    local fit did not place (step.fit_placed) whose valid trials so far (none, or their median) lie
    outside the fit's window: it only has to tell far below from far above ([CC] §3.2: a shorter
    trial is noisier by √); else None."""
    probe_s = spec.policy.probe_runlength_s(spec)
    if probe_s is None or step.fit_placed:
        return None
    if not valid:
        return probe_s
    med = float(statistics.median([t.mean_ms for t in valid]))
    return None if near_r_sat(med, r_sat) else probe_s


def harness_failing(spec: RatingSpec, trials: Sequence[TrialResult]) -> str | None:
    """The stop reason when the harness keeps failing: the log ends in max_harness_in_row
    harness failures in a row ("harness failing: <the last one's reason>"); else None."""
    tail = list(itertools.takewhile(lambda t: t.harness_failure, reversed(trials)))
    if len(tail) < spec.max_harness_in_row:
        return None
    return (
        f"harness failing: {len(tail)} harness failures in a row "
        f"({tail[0].reason or 'no reason given'})"
    )


def _rerun_invalid(
    spec: RatingSpec, server: Sequence[TrialResult], not_steady: bool
) -> tuple[NextTrial | None, str | None]:
    """(next trial, stop reason) after an invalid trial, server[-1] (not_steady: one the
    controller excluded, steadiness.py). Invalid trials never count and are re-run at the same load
    and runlength (a not-steady one longer where its warm-up says so). After max_invalid_per_load
    in a row the load is unmeasurable (a generator at its ceiling; a server so far past λ* that its
    backlog delays the generator's sends): once another load has a valid trial the search goes on
    below it (_decide_goal: next None); it ends at twice that many invalid trials in a row, or
    when no other load was ever measured (the harness itself is suspect)."""
    last = server[-1]
    tail = list(itertools.takewhile(lambda t: not t.valid, reversed(server)))  # newest first
    run = len(tail)
    at_last = load_key(last.load)
    streak = len(list(itertools.takewhile(lambda t: load_key(t.load) == at_last, tail)))
    measured_elsewhere = any(t.valid and load_key(t.load) != at_last for t in server)
    if streak < spec.max_invalid_per_load:
        load = float(last.load)
        if not_steady:
            rl = float(rerun_runlength_s(spec, last))
            return NextTrial(load, rl, f"re-run {last.reason}"), None
        why = f"re-run invalid trial ({last.reason or 'invalid'})"
        return NextTrial(load, float(last.runlength), why), None
    if run >= 2 * spec.max_invalid_per_load or not measured_elsewhere:
        return (
            None,
            (
                f"{run} consecutive invalid trials"
                + (
                    f" at {last.load_ops_s:g} ops/s"
                    if run == streak
                    else f", the last {streak} at {last.load_ops_s:g} ops/s"
                )
                + f" ({last.reason or 'no reason given'})"
            ),
        )
    return None, None


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
    # not-steady trials: invalid, re-run
    trials, not_steady = excluding_not_steady(spec, trials)
    cost = trial_cost_s(spec, trials)  # every trial costs, harness failures too
    server = [t for t in trials if not t.harness_failure]  # the samples of the server
    done: dict[float, GoalDone] = {}
    nxt: NextTrial | None = None
    stop_reason: str | None = harness_failing(spec, trials)
    if stop_reason is None and server and not server[-1].valid:
        last = max(i for i, t in enumerate(trials) if not t.harness_failure)
        nxt, stop_reason = _rerun_invalid(spec, server, last in not_steady)
    open_search = nxt is None and stop_reason is None
    if open_search or len(spec.goals) > 1:  # several goals: a stop reports every met one
        placed = _judge_goals(spec, trials, server, open_search, cost, done)
        if placed is not None:
            nxt = placed
    if nxt is not None and trials and trials[-1].harness_failure:
        why = trials[-1].reason or "no reason given"
        nxt = dataclasses.replace(
            nxt, reason=f"re-run after a harness failure ({why}): {nxt.reason}"
        )
    if nxt is not None and stop_reason is None:
        stop_reason = _unaffordable(spec, trials, cost, nxt.runlength_s)
        if not stop_reason:
            return nxt
    return Done(result_of(spec, trials, done, stop_reason, not_steady))


def _judge_goals(
    spec: RatingSpec,
    trials: Sequence[TrialResult],
    server: Sequence[TrialResult],
    open_search: bool,
    cost: float,
    done: dict[float, GoalDone],
) -> NextTrial | None:
    """Every goal judged on the one log (a goal that ended goes into `done`); with the search open,
    the next trial: the lowest open goal places it, or, every goal converged, the lowest that may
    narrow its interval does when the budget pays for it."""
    unmeasurable = _unmeasurable(spec, server)
    nxt: NextTrial | None = None
    optional: tuple[float, NextLoad] | None = None  # the lowest goal that may narrow its interval
    for g in spec.goals:
        step = decide_goal(spec.at_goal(g), g, server, unmeasurable)
        if isinstance(step, Tighten):  # converged, its interval finite: a trial is optional
            done[g] = step.done
            optional = optional or (g, step.next)
        elif isinstance(step, GoalDone):
            done[g] = step
        elif open_search and nxt is None:  # the lowest open goal places the next trial
            nxt = _placed(spec, g, server, step)
    if open_search and nxt is None and optional:  # every goal converged: tighten, if affordable
        goal, tighten = optional
        nxt = _placed(spec, goal, server, tighten)
        if _unaffordable(spec, trials, cost, nxt.runlength_s):
            return None
    return nxt


def _placed(spec: RatingSpec, g: float, server: Sequence[TrialResult], step: NextLoad) -> NextTrial:
    """Goal g's next trial: the goal's step with its runlength."""
    load = step.load_ops_s
    valid = [t for t in server if t.valid and load_key(t.load) == load_key(load)]
    runlengths = [float(t.runlength) for t in valid]
    rl = next_runlength(spec, [t.mean_ms for t in valid], runlengths).runlength_s
    probe_s = _probe(spec.at_goal(g), g, valid, step)
    why = step.reason if len(spec.goals) == 1 else f"goal {g:g} ms: {step.reason}"
    return NextTrial(float(load), float(rl if probe_s is None else probe_s), why)


def _unaffordable(spec: RatingSpec, trials: Sequence[TrialResult], cost: float, rl: float) -> str:
    """Why max_trials or the budget cannot pay for one more trial of rl seconds, or ''."""
    if len(trials) >= spec.max_trials:
        return f"max_trials ({spec.max_trials}) exhausted"
    if cost + rl + spec.trial_overhead_s > spec.budget_s * (1 + 1e-12):
        return (
            f"budget exhausted: {cost:g} s spent, next trial needs "
            f"{rl + spec.trial_overhead_s:g} s of {spec.budget_s:g} s"
        )
    return ""


def find_peak(
    spec: RatingSpec,
    measure: Callable[[float, float], TrialResult],
    trials: Sequence[TrialResult] = (),
    on_trial: Callable[[TrialResult], None] | None = None,
) -> PeakResult:
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
