"""Certifying a converged goal: trials until its λ* interval [L, H] (certify.py) is finite, and
narrow enough, each where a look-ahead shows an end with the fewest more trials."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from workbench.controller.certify import LoadBounds, certified, load_bounds, load_shown
from workbench.controller.goal import Goal, guard
from workbench.controller.state import LoadSummary, load_key
from workbench.controller.steps import GoalDone, NextLoad, Step, Tighten
from workbench.stats.sequential import look_sizes

# certification trials stop at a load with this many (a look of stats.sequential)
CERTIFY_MAX_TRIALS = 11
CERTIFY_MIN_TRIALS = 3  # ... and may take a load to this many whatever max_trials_per_load: on two
# trials a one-sided bound is t on 1 df (t_0.99 = 31.8 standard errors)
STEP_OUT = 1.25  # with no load clearly beyond λ*, certification tries one ×/÷ this further out


@dataclass(frozen=True)
class Open:
    """An end of the λ* interval is not shown and cannot be: the load to try cannot be measured
    (why)."""

    why: str


def _clearly_saturated(s: LoadSummary, r_sat: float) -> bool:
    """Median ≥ 2·R_sat, or completions short of offered by > 1 % beyond Poisson noise: the loads
    whose next trials show the upper end soonest (certify.py's log-mean and completions tests)."""
    return s.median_ms >= 2 * r_sat or (s.throughput_z < -3 and s.achieved_ops_s < 0.99 * s.load)


def _certify_step(
    g: Goal,
    room: list[LoadSummary],
    clear: list[LoadSummary],
    edge: LoadSummary,
    out: float,
    why: str,
) -> NextLoad | None:
    """One more trial at the clearest load (clear, ordered best first); else the edge load's first
    trials; else a new load `out` further from λ*. Loads near λ* are passed over: showing one of
    them saturated (or not) costs many trials, one a step further out costs one or two."""
    if clear:
        return guard(g, clear[0].load, why, None)
    if edge.n < g.spec.min_trials and any(s is edge for s in room):
        return guard(g, edge.load, why, None)  # the new load: its trials first
    return guard(g, out, why, None)


def certify_ends(g: Goal, done: GoalDone) -> Step:
    """A goal the chain found converged (`done`) needs a finite certified λ* interval (certify.py):
    while an end is not shown, one more trial where it is cheapest to show (`_certify_step`): above,
    of the loads read clearly saturated the one a look-ahead shows with the fewest more trials
    (`_trials_to_show`), else ×STEP_OUT the highest tested load; below, the same among the loads
    with a median ≤ R_sat/2, else ÷STEP_OUT the lowest. A load with
    CERTIFY_MAX_TRIALS trials is passed over; the budget, max_trials and max_loads bound the rest.
    `done` as it is once both ends are shown; not converged when the load to try cannot be measured.
    Both ends shown but H > (1 + 4·resolution)·L: a `Tighten` of `done`, a trial the goal may do
    without (decide.py)."""
    step = _certify_next(g, done)
    if isinstance(step, Open):
        why = f"not converged: {done.reason}, but the λ* interval stays open ({step.why})"
        return dataclasses.replace(done, converged=False, reason=why)
    return step or done


def _certify_next(g: Goal, done: GoalDone) -> NextLoad | Tighten | Open | None:
    """The next certification trial (a `Tighten` of `done` once both ends are shown); `Open` when
    an end is not shown and cannot be; None when both ends are shown and H ≤ (1 + 4·resolution)·L,
    or no load between them is cheap to tighten them with (one read clearly saturated, or with a
    median ≤ R_sat/2)."""
    spec = g.spec
    level = spec.bound_confidence if spec.bound_confidence is not None else spec.confidence
    b = load_bounds(
        g.r_sat,
        spec.l_sat_ms,
        level,
        g.trials,
        spec.max_loads,
        spec.policy.distrust_repeats,
        frozenset(load_key(s.load) for s in g.loads if s.latency_saturated),
    )
    if spec.strawman:
        return None
    inside, ups, downs, need = _candidates(g, b, level)
    if not math.isfinite(b.high) or b.low <= 0:
        return _show_end(g, b, inside, ups, downs)
    if b.high <= (1 + 4 * spec.resolution) * b.low:
        return None  # narrow enough: λ* ± about 2·resolution (quick: ± 10 %)
    ways = sorted(
        [(need[s.load, True], 0, s) for s in ups] + [(need[s.load, False], 1, s) for s in downs],
        key=lambda w: w[:2],
    )
    for n_more, down, s in ways:  # wider: tighten where a look-ahead says it pays off
        if n_more < math.inf:
            end = f"lower end {b.low:g}" if down else f"upper end {b.high:g}"
            why = f"certify: tighten the {end} ops/s at {s.load:g}"
            return _tighten(guard(g, s.load, why, None), done)
    return _tighten(_new_load_inside(g, b.low, b.high), done) if _too_wide(g, b, level) else None


def _candidates(
    g: Goal, b: LoadBounds, level: float
) -> tuple[
    list[LoadSummary], list[LoadSummary], list[LoadSummary], dict[tuple[float, bool], float]
]:
    """(inside, ups, downs, need): the loads strictly inside [L, H] with room for trials, those of
    them read clearly saturated (ups) and with a median ≤ R_sat/2 (downs), each sorted cheapest to
    show first (`need`: the trials a look-ahead wants for (load, upper)), then the tighter end;
    loads no look-ahead shows, the clearest first."""
    cap = max(CERTIFY_MIN_TRIALS, min(g.spec.max_trials_per_load, CERTIFY_MAX_TRIALS))
    inside = [
        s
        for s in g.loads
        if b.low < s.load < b.high and s.n < cap and load_key(s.load) not in g.unmeasurable
    ]
    ups = [s for s in inside if _clearly_saturated(s, g.r_sat)]
    downs = [s for s in inside if s.median_ms <= g.r_sat / 2]
    need = {
        (s.load, up): _trials_to_show(g, s, cap, level, up)
        for up, ss in ((True, ups), (False, downs))
        for s in ss
    }
    ups.sort(
        key=lambda s: (
            need[s.load, True],
            s.load if need[s.load, True] < math.inf else -s.median_ms,
        )
    )
    downs.sort(
        key=lambda s: (
            need[s.load, False],
            -s.load if need[s.load, False] < math.inf else s.median_ms,
        )
    )
    return inside, ups, downs, need


def _show_end(
    g: Goal,
    b: LoadBounds,
    inside: list[LoadSummary],
    ups: list[LoadSummary],
    downs: list[LoadSummary],
) -> NextLoad | Open:
    """A trial towards the end not shown yet (the upper one first), or `Open` when the load to try
    cannot be measured."""
    if not math.isfinite(b.high):
        top = max(g.loads, key=lambda s: s.load)
        step = _certify_step(
            g,
            inside,
            ups,
            top,
            STEP_OUT * top.load,
            "certify upper end: no load shown saturated yet",
        )
        return step or Open(
            f"no load shown saturated; {STEP_OUT * top.load:g} ops/s cannot be measured"
        )
    bottom = min(g.loads, key=lambda s: s.load)
    step = _certify_step(
        g,
        inside,
        downs,
        bottom,
        bottom.load / STEP_OUT,
        "certify lower end: no load shown unsaturated yet",
    )
    return step or Open(
        f"no load shown unsaturated; {bottom.load / STEP_OUT:g} ops/s cannot be measured"
    )


def _too_wide(g: Goal, b: LoadBounds, level: float) -> bool:
    """The λ* interval as reported ([L, H] = b, ∩ the local fit's: certify.certified) has a
    half-width above spec.interval_halfwidth of its low end (so of any λ* inside it)."""
    spec, hw = g.spec, g.spec.interval_halfwidth
    if hw is None or b.high - b.low <= 2 * hw * b.low:  # [L, H] holds the reported interval
        return False
    lo, hi = certified(
        g.r_sat,
        spec.l_sat_ms,
        spec.width,
        level,
        g.trials,
        g.loads,
        spec.max_loads,
        spec.policy.distrust_repeats,
        use_fit=spec.policy.uses_fit,
        bounds=b,
    ).interval
    return hi - lo > 2 * hw * lo


def _tighten(step: NextLoad | None, done: GoalDone) -> Tighten | None:
    """A tightening trial is optional: a `Tighten`, which decide drops for the goal's end (`done`)
    when the budget or max_trials cannot pay for it."""
    return None if step is None else Tighten(step, done)


def _new_load_inside(g: Goal, low: float, high: float) -> NextLoad | None:
    """No tested load can tighten [L, H], whose half-width is above spec.interval_halfwidth: a new
    load halfway across the wider of the gaps next to an end, (L, the lowest load tested above L) or
    (the highest tested below H, H), when wider than interval_halfwidth of it (so a rating adds a
    few at most). On a wall a load a step past the knee (or before it) is shown in a trial or three:
    the real 4000 ops/s, neither side at 0.5–117 ms, left [3800, 4800] where a new 4400 shows H."""
    hw = g.spec.interval_halfwidth
    if hw is None:  # (_too_wide is False then: no call)
        return None
    tested = sorted(s.load for s in g.loads)
    gaps = [
        (min(x for x in tested if x > low) - low, low, "lower"),
        (high - max(x for x in tested if x < high), high, "upper"),
    ]
    for gap, end, name in sorted(gaps, reverse=True):
        load = end + gap / 2.0 if name == "lower" else end - gap / 2.0
        if gap > hw * load:
            step = guard(
                g, load, f"certify: tighten the {name} end {end:g} ops/s at a new load", None
            )
            if step is not None:
                return step
    return None


def _trials_to_show(g: Goal, s: LoadSummary, cap: int, level: float, upper: bool) -> float:
    """How many more trials like its typical one (the median's) would show load s saturated (upper)
    or unsaturated, up to `cap` in all: a look-ahead that sends certification where it is cheapest.
    inf when none would; the bounds only move at the looks' sample sizes (stats.sequential). s lies
    strictly between the current ends, so showing it moves an end: one load's test suffices."""
    ts = [
        t
        for t in g.trials
        if load_key(t.load) == load_key(s.load) and t.valid and not t.harness_failure
    ]
    if not ts or (not upper and s.latency_saturated):
        return math.inf
    typical = min(ts, key=lambda t: abs(t.mean_ms - s.median_ms))
    for n in sorted({*look_sizes(cap, 1), *look_sizes(cap, 2)}):
        if n > len(ts) and load_shown(
            ts + [typical] * (n - len(ts)), g.r_sat, g.spec.l_sat_ms, level, g.spec.max_loads, upper
        ):
            return float(n - len(ts))
    return math.inf
