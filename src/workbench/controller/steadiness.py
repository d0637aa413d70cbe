"""The controller acts on each trial's steady-state verdict (stats.steady, recorded in
raw["steady"]).

A valid trial judged not steady (trend, stall or backlog; not "short" or without a series: nothing
to judge) is excluded: `decide` sees it as an invalid trial (reason "not steady: …"), so it counts
toward no load's statistics and the invalid-trial path re-runs it at the same load — longer when
MSER's warm-up took a large part of it (rerun_runlength_s). At most `spec.max_unsteady_reruns`
re-runs per load: the next not-steady trial there ends them, and the load is judged on all its
trials, the not-steady ones included (the server does not settle at that load, and what it gives
there is all there is to judge; a saturated server's queue grows in every trial). A trial counted
that way is not excluded, and the report marks it "counted". Nor is a rise that is saturated on its
own: one whose mean is above every R_sat goal, or whose first interval already read above
far_factor·R_sat; nor a stall or backlog whose median interval is above every goal. Nor is an
immaterial trend: one whose Theil–Sen change over the trial is under the region's half-width
s·R_sat (of the lowest goal), with no stall or backlog beside it: its mean lies within s·R_sat/2 of
where the trial ended, and a re-run cannot move its load across the region (a real quick rating,
R_sat 40 ms, re-ran three such trials at 3200 and 3600 ops/s: means 0.9–2.1 ms, changes −0.9 to
+1.7 ms; bench/steady_replay.py). A trial starts on a drained server; latency
that climbs all through it is a queue growing (arrivals above the service rate), and its mean
understates where that load settles, so "above R_sat" read from it is conservative. Re-runs only
grow it again: a quick rating re-ran 6400 and 4800 ops/s twice each (1197 and 437 ms to 6.1 and
2.9 s every time), and 4400 ops/s twice from a low start (1.9 → 1092 ms; means 599, 564, 1407 ms),
and stopped on six invalid trials in a row. A rise that stays below R_sat is still re-run: it may
be a transient.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.controller.state import load_key
from workbench.controller.trial import TrialResult
from workbench.stats.steady import NOT_STEADY

# MSER's warm-up this share of a trial's intervals or more: the re-run is longer
WARMUP_SHARE = 0.25


def verdict_of(t: TrialResult) -> Mapping[str, Any]:
    """The trial's steady-state verdict (stats.steady.judge), {} when it has none."""
    v = (t.raw or {}).get("steady")
    return v if isinstance(v, Mapping) else {}


def is_not_steady(t: TrialResult) -> bool:
    """A valid trial whose verdict says the server was not in a steady state while it ran."""
    return t.valid and verdict_of(t).get("verdict") in NOT_STEADY


def _why(v: Mapping[str, Any]) -> str:
    """'not steady: <verdict>' with the figures behind it."""
    parts = []
    if v.get("verdict") == "stall":
        parts.append("interval " + ", ".join(str(i) for i in v.get("stall_intervals") or []))
    elif str(v.get("verdict")).startswith("trend") and v.get("mk_p") is not None:
        change = v.get("trend_change_ms")
        parts.append(
            f"Mann–Kendall τ {v.get('mk_tau', float('nan')):.2f}, p {v['mk_p']:.2g}"
            + (f", {change:+.3g} ms" if isinstance(change, (int, float)) else "")
        )
    elif v.get("verdict") == "backlog" and v.get("backlog_ratio") is not None:
        parts.append(
            f"{v.get('outstanding_at_stop')} calls outstanding at the stop, "
            f"{v['backlog_ratio']:.1f}× Little's L"
        )
    if v.get("low_start"):
        n = v["low_start"]
        parts.append(
            f"a rise from a low start of {n} interval{'s' if n != 1 else ''}, judged whole"
        )
    if v.get("warmup_intervals"):
        parts.append(
            f"warm-up {v['warmup_intervals']} of "
            f"{v['warmup_intervals'] + (v.get('intervals') or 0)} intervals"
        )
    return f"not steady: {v.get('verdict')}" + (f" ({'; '.join(parts)})" if parts else "")


def saturated_anyway(spec, t: TrialResult) -> bool:
    """A not-steady trial that reads saturated whatever a re-run shows: a rise (trend up) whose mean
    is above every R_sat goal, or whose first interval read above far_factor·R_sat (a queue growing
    at a load past capacity, not a transient); a stall or a backlog whose median interval is above
    every goal (saturated without its stall or backlog too: at 4400 ops/s a 109 ms trial, no longer
    a trend once whitened, read as a stall and was re-run)."""
    v = verdict_of(t)
    if v.get("verdict") in ("stall", "backlog"):
        median = v.get("median_ms")
        return isinstance(median, (int, float)) and median > max(spec.goals)
    if v.get("verdict") != "trend up":
        return False
    first = v.get("first_ms")
    far_ms = spec.policy.far_threshold_ms(spec.r_sat_ms)
    return t.mean_ms > max(spec.goals) or (
        far_ms is not None and isinstance(first, (int, float)) and first > far_ms
    )


def immaterial_trend(v: Mapping[str, Any], r_sat_ms: float, width: float) -> bool:
    """A trend verdict whose Theil–Sen change over the trial (stats.steady: trend_change_ms) is
    under the region's half-width width·R_sat, with no stall or backlog beside it: no re-run of it
    can move its load across the region."""
    change = v.get("trend_change_ms")
    return (
        str(v.get("verdict")).startswith("trend")
        and isinstance(change, (int, float))
        and abs(change) < width * r_sat_ms
        and not v.get("stall_intervals")
        and not v.get("backlog")
    )


def not_steady_excluded(spec, trials: Sequence[TrialResult]) -> dict[int, str]:
    """{trial index: reason} of the not-steady trials the controller excludes: all of a load's
    while it has at most spec.max_unsteady_reruns of them, none once it has more; never one
    saturated anyway or an immaterial trend."""
    at: dict[float, list[int]] = {}
    for i, t in enumerate(trials):
        if (
            is_not_steady(t)
            and not saturated_anyway(spec, t)
            and not immaterial_trend(verdict_of(t), min(spec.goals), spec.width)
        ):
            at.setdefault(load_key(t.load), []).append(i)
    return {
        i: _why(verdict_of(trials[i]))
        for idx in at.values()
        if len(idx) <= spec.max_unsteady_reruns
        for i in idx
    }


def excluding_not_steady(
    spec, trials: Sequence[TrialResult]
) -> tuple[list[TrialResult], dict[int, str]]:
    """The log as the controller reads it — each excluded not-steady trial an invalid trial with its
    reason — and {index: reason} of those trials."""
    out = not_steady_excluded(spec, trials)
    view = [
        dataclasses.replace(t, valid=False, reason=out[i]) if i in out else t
        for i, t in enumerate(trials)
    ]
    return view, out


def rerun_runlength_s(spec, t: TrialResult) -> float:
    """Runlength of the re-run of the not-steady trial t."""
    v = verdict_of(t)
    d = int(v.get("warmup_intervals") or 0)
    n = d + int(v.get("intervals") or 0)
    r = float(t.runlength)
    # warm-up (MSER's d) ≥ WARMUP_SHARE of the intervals: 2·r, capped by runlength_max_s (never
    # below r)
    return max(r, min(2.0 * r, spec.runlength_max_s)) if n and d >= WARMUP_SHARE * n else r


def records_as_read(
    not_steady: Mapping[str, str] | None, records: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """Stored trial records as decide read them, given a result's `not_steady` ({"n": why}): an
    excluded trial is not valid, its reason first, and `excluded` says "not steady"."""
    out = not_steady or {}
    return [
        {
            **r,
            "valid": False,
            "excluded": "not steady",
            "reason": "; ".join(x for x in (out[str(r.get("n"))], r.get("reason")) if x),
        }
        if str(r.get("n")) in out and not r.get("excluded")
        else r
        for r in records
    ]
