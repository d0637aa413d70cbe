"""What a person reads in a terminal or a task log: one line per trial and the result block.

The CLI, the DAG runner (``make run``), the DAGs and `run_rating` print through these two
functions only, so a trial and a result read the same everywhere.
"""

from __future__ import annotations

import math
import sys
import textwrap
import time
from collections.abc import Mapping
from typing import Any, TextIO

from workbench.controller.trial import record_outcome, steady_verdict
from workbench.findings.bottleneck import busiest
from workbench.findings.cost import cost_text
from workbench.findings.goals import goal_rows
from workbench.findings.latency_split import split_line
from workbench.findings.load_curve import ort_text
from workbench.findings.peak_interval import interval_text, mean_at_peak_text
from workbench.stats.steady import NOT_STEADY


def fmt_num(x: Any, fmt: str = ".1f") -> str:
    """A number, or "—" for None/NaN/±inf (results hold None for them: no λ* from a dead server)."""
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def _pair(p: Any, fmt: str = ".1f") -> str:
    return f"[{fmt_num(p[0], fmt)}, {fmt_num(p[1], fmt)}]" if p else "—"


WIDTH = 120  # a terminal line: a trial line, with its cost and wall time, fits this many columns


def _ms(x: Any) -> str:
    """A latency with three significant digits or more (0.84, 12.3, 456, 1234)."""
    if not isinstance(x, (int, float)) or not math.isfinite(x):
        return "—"
    return format(x, ".2f" if abs(x) < 10 else ".1f" if abs(x) < 100 else ".0f")


def _rate(x: Any) -> str:
    return fmt_num(
        x, ".0f" if isinstance(x, (int, float)) and math.isfinite(x) and x == int(x) else ".1f"
    )


def short(text: str, width: int) -> str:
    """`text` in at most `width` columns: its parenthesised asides dropped first, then the clauses
    after its last colons ("not steady: backlog …" → "not steady"), else cut with "…"."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    bare, depth = [], 0
    for ch in text:  # "midpoint of [a, b] (no load on the curve …)" → "midpoint of [a, b]"
        depth += ch == "("
        if depth == 0:
            bare.append(ch)
        depth -= ch == ")" and depth > 0
    text = " ".join("".join(bare).split())
    parts = text.split(": ")
    for k in range(len(parts) - 1, 0, -1):
        gist = ": ".join(parts[:k])
        if len(text) > width and len(gist) <= width:
            return gist
    return text if len(text) <= width else text[: max(width - 1, 0)].rstrip() + "…"


def trial_line(record: Mapping[str, Any], width: int | None = WIDTH) -> str:
    """One trial of the log (a stored record: n, load_ops_s, runlength_s, mean_ms, ... decision) in
    at most `width` columns. The achieved rate shows when it fell short of the offered load by over
    1 %. Then the verdict's reason, or for a valid trial without one the controller's decision (why
    this load), shortened to fit; width None keeps both whole (the record and the report hold them
    too)."""
    load, got = record.get("load_ops_s"), record.get("achieved_rate")
    short_by = (
        isinstance(load, (int, float))
        and isinstance(got, (int, float))
        and load > 0
        and got < 0.99 * load
    )
    outcome = (
        "valid"
        if record.get("valid", True)
        else "INVALID"
        if record_outcome(record) != "harness"
        else "HARNESS FAILURE"
    )
    steady = steady_verdict(record)
    # the controller re-runs it (controller.steadiness)
    if outcome == "valid" and steady in NOT_STEADY:
        outcome = f"NOT STEADY ({steady})"
    head = (
        f"  trial {record.get('n', '?'):>3}: {_rate(load):>6} ops/s × "
        f"{fmt_num(record.get('runlength_s'), 'g')} s  mean {_ms(record.get('mean_ms')):>5} ms  "
        f"p95 {_ms(record.get('p95_ms')):>5} ms"
        + (f"  achieved {fmt_num(got, '.0f')}" if short_by or width is None else "")
        + f"  {outcome}"
    )
    reason, decision = str(record.get("reason") or ""), str(record.get("decision") or "")
    reason = reason.removeprefix("harness: ") if outcome == "HARNESS FAILURE" and width else reason
    decision = (
        decision.split(": ", 1)[1] if decision.startswith(("local: ", "model: ")) else decision
    )
    if width is None:
        return head + (f": {reason}" if reason else "") + (f"  [{decision}]" if decision else "")
    room = width - len(head)
    text = f": {short(reason, room - 2)}" if reason else ""
    if decision and room - len(text) - 3 >= 16:  # room for the decision's gist
        text += f"  [{short(decision, room - len(text) - 4)}]"
    return head + text


def result_sentence(result: Mapping[str, Any]) -> str:
    """The result in words a person can quote: λ*, what it means, its CI, how it was found."""
    who = " ".join(
        x
        for x in (
            f"{result['workload']}" if result.get("workload") else "",
            f"on {result['slot']}" if result.get("slot") else "",
        )
        if x
    )
    sat = f"mean response time ≤ {fmt_num(result.get('r_sat_ms'), 'g')} ms"
    if result.get("l_sat_ms") is not None:
        sat += f" and p95 ≤ {fmt_num(result.get('l_sat_ms'), 'g')} ms"
    how = (
        f"converged after {result.get('n_trials')} trials at {result.get('n_loads')} loads"
        if result.get("converged")
        else f"NOT converged after {result.get('n_trials')} trials ({result.get('reason')})"
    )
    text = (
        f"{who + ': ' if who else ''}peak rate λ* = {fmt_num(result.get('peak_rate'))} ops/s, the "
        f"highest offered load with {sat}; {interval_text(result)}; {how}."
    )
    return textwrap.fill(text, WIDTH - 2, initial_indent="  ", subsequent_indent="  ")


def result_block(result: Mapping[str, Any], wall_s: float | None = None) -> str:
    """The result sentence, then its figures: convergence, bracket, CI, the mean response time at
    the load it comes from, goals, trials, cost, warnings; each row wrapped to the terminal's
    width."""
    near = result.get("mean_load_ops_s")
    rows = [
        ("peak rate λ*", f"{fmt_num(result.get('peak_rate'))} ops/s"),
        ("converged", f"{result.get('converged')} ({result.get('reason')})"),
        ("bracket", f"{_pair(result.get('bracket'))} ops/s"),
        ("λ* interval", interval_text(result)),
        *([("bottleneck", result["bottleneck"]["line"])] if result.get("bottleneck") else []),
        *(
            [("latency split", split_line(result["latency_split"]))]
            if "latency_split" in result
            else []
        ),
        *(
            [("overall response time", ort_text(result, []))]
            if "overall_response_time_ms" in result
            else []
        ),
        (
            f"R̄ at {fmt_num(near, 'g')} ops/s" if near is not None else "R̄ at peak",
            f"{mean_at_peak_text(result)}; the tested load nearest λ*",
        ),
        *_goal_rows(result),
        ("trials", _trials_text(result)),
        (
            "cost",
            cost_text(result)
            + (f"; this command's wall time {wall_s:.0f} s" if wall_s is not None else ""),
        ),
        *[("warning", w["text"]) for w in result.get("warnings") or []],  # findings.anomalies
    ]
    w = max(len(k) for k, _ in rows)
    lines = [
        textwrap.fill(
            v,
            WIDTH,
            initial_indent=f"  {k:<{w}}  ",
            subsequent_indent=" " * (w + 4),
            break_on_hyphens=False,
        )
        for k, v in rows
    ]
    return "\n".join([result_sentence(result), "", *lines])


def _trials_text(result: Mapping[str, Any]) -> str:
    """The trials: how many, invalid, excluded as not steady, counted though not steady, harness
    failures, at how many loads."""
    return (
        f"{result.get('n_trials')} ({result.get('n_invalid')} invalid"
        + (
            f", {result['n_not_steady']} excluded as not steady"
            if result.get("n_not_steady")
            else ""
        )
        + (f", {n} not steady but counted" if (n := _counted_not_steady(result)) else "")
        + (f", {result['n_harness']} harness failures" if result.get("n_harness") else "")
        + f") at {result.get('n_loads')} loads"
    )


def _counted_not_steady(result: Mapping[str, Any]) -> int:
    """Valid trials judged not steady that the controller counted (controller.steadiness: overloaded
    from their start, or their load's re-runs spent), so the console's NOT STEADY lines add up."""
    excluded = result.get("not_steady") or {}
    return sum(
        1
        for t in result.get("trials") or []
        if isinstance(t, Mapping)
        and t.get("valid")
        and str(t.get("n")) not in excluded
        and steady_verdict(t) in NOT_STEADY
    )


def _goal_rows(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    """One line per R_sat goal of a several-goal rating (all from the one trial log); none for one
    goal."""
    return [
        (
            f"goal R_sat {g} ms",
            f"λ* {lam} ops/s, CI {ci}, bracket {br}, p95 ≤ {l_sat} ms: "
            + ("converged" if conv == "yes" else f"NOT converged ({why})"),
        )
        for g, l_sat, lam, ci, br, _, conv, why in goal_rows(result, ".1f")
    ]


def _busiest(record: Mapping[str, Any]) -> str:
    """The progress line's bottleneck candidate: the trial's most utilized resource
    (findings.bottleneck)."""
    top = busiest(record)
    return f", busiest: {top}" if top else ""


class Progress:
    """Trial lines plus a bar of spent cost against the budget (the CLI's live view)."""

    def __init__(
        self,
        budget_s: float,
        trial_overhead_s: float,
        stream: TextIO = sys.stderr,
        enabled: bool = True,
        compact: bool = False,
        verbose: bool = False,
    ) -> None:
        self.budget_s, self.overhead_s = budget_s, trial_overhead_s
        self.stream, self.enabled, self.compact = stream, enabled, compact
        self.width = None if verbose else WIDTH  # verbose: the trial's reason and decision whole
        self.t0 = time.monotonic()
        self.cost_s = 0.0

    def trial(self, record: Mapping[str, Any]) -> None:
        self.cost_s += float(record.get("runlength_s") or 0.0) + self.overhead_s
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.t0
        if self.compact:  # one line a trial (make run): cost against the budget, wall time
            budget = f"/{self.budget_s:g}" if math.isfinite(self.budget_s) else ""
            tail = f"  cost {self.cost_s:.0f}{budget} s  wall {elapsed:.0f} s"
            line = trial_line(record, None if self.width is None else self.width - len(tail))
            self.stream.write(f"{line}{tail}\n")
        elif math.isfinite(self.budget_s):
            bar = "#" * int(round(min(self.cost_s / self.budget_s, 1.0) * 30))
            self.stream.write(
                f"{trial_line(record, self.width)}\n  [{bar:<30}] cost "
                f"{self.cost_s:5.0f}/{self.budget_s:g} s, wall {elapsed:5.0f} s{_busiest(record)}\n"
            )
        else:
            self.stream.write(
                f"{trial_line(record, self.width)}\n  cost {self.cost_s:5.0f} s, wall "
                f"{elapsed:5.0f} s{_busiest(record)}\n"
            )
        self.stream.flush()
