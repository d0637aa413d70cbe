"""What a person reads in a terminal or a task log: one line per trial and the result block.

The CLI, the DAG runner (``make run``), the DAGs and `run_rating` print through these two
functions only, so a trial and a result read the same everywhere.
"""
from __future__ import annotations

import math
import sys
import time
from typing import Any, Mapping, TextIO

from workbench.analysis.cost import cost_text
from workbench.analysis.goals import goal_rows
from workbench.controller.trial import record_outcome


def fmt_num(x: Any, fmt: str = ".1f") -> str:
    """A number, or "—" for None/NaN/±inf (results hold None for them: no λ* from a dead server)."""
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def _pair(p: Any, fmt: str = ".1f") -> str:
    return f"[{fmt_num(p[0], fmt)}, {fmt_num(p[1], fmt)}]" if p else "—"


def trial_line(record: Mapping[str, Any]) -> str:
    """One trial of the log (a stored record: n, load_ops_s, runlength_s, mean_ms, ... decision)."""
    verdict = ("valid" if record.get("valid", True) else f"INVALID: {record.get('reason', '')}"
               if record_outcome(record) != "harness" else f"HARNESS FAILURE: {record.get('reason', '')}")
    if record.get("valid", True) and record.get("reason"):
        verdict += f" ({record['reason']})"
    return (f"  trial {record.get('n', '?'):>3}: {fmt_num(record.get('load_ops_s')):>8} ops/s × "
            f"{fmt_num(record.get('runlength_s'), 'g')} s  mean {fmt_num(record.get('mean_ms'), '.2f'):>8} ms  "
            f"p95 {fmt_num(record.get('p95_ms'), '.2f'):>8} ms  achieved {fmt_num(record.get('achieved_rate')):>8}  "
            f"{verdict}  [{record.get('decision', '')}]")


def result_block(result: Mapping[str, Any], wall_s: float | None = None) -> str:
    """λ*, convergence, bracket, CI, the mean response time at the load it comes from, trials, cost."""
    near = result.get("mean_load_ops_s")
    mci = result.get("mean_ms_ci") or (None, None)
    low = None if mci[0] is None else max(0.0, mci[0])     # a mean response time is > 0
    rows = [
        ("peak rate λ*", f"{fmt_num(result.get('peak_rate'))} ops/s"),
        ("converged", f"{result.get('converged')} ({result.get('reason')})"),
        ("bracket", f"{_pair(result.get('bracket'))} ops/s"),
        ("λ* CI", f"{_pair(result.get('peak_rate_ci'))} ops/s"),
        (f"R̄ at {fmt_num(near, 'g')} ops/s" if near is not None else "R̄ at peak",
         f"{fmt_num(result.get('mean_ms_at_peak'), '.2f')} ms, CI [{fmt_num(low, '.2f')}, {fmt_num(mci[1], '.2f')}]"
         f" (R_sat {fmt_num(result.get('r_sat_ms'), 'g')} ms, accuracy {fmt_num(result.get('accuracy'), '.3f')};"
         f" the tested load nearest λ*)"),
        *_goal_rows(result),
        ("trials", f"{result.get('n_trials')} ({result.get('n_invalid')} invalid"
                   + (f", {result['n_not_steady']} excluded as not steady" if result.get("n_not_steady") else "")
                   + (f", {result['n_harness']} harness failures" if result.get("n_harness") else "")
                   + f") at {result.get('n_loads')} loads"),
        ("cost", cost_text(result) + (f"; this command's wall time {wall_s:.0f} s" if wall_s is not None else "")),
        *[("warning", w["text"]) for w in result.get("warnings") or []],    # analysis.anomalies
    ]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{w}}  {v}" for k, v in rows)


def _goal_rows(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    """One line per R_sat goal of a several-goal rating (all from the one trial log); none for one goal."""
    return [(f"goal R_sat {g} ms", f"λ* {lam} ops/s, CI {ci}, bracket {br}, p95 ≤ {l_sat} ms: "
             + ("converged" if conv == "yes" else f"NOT converged ({why})"))
            for g, l_sat, lam, ci, br, _, conv, why in goal_rows(result, '.1f')]


class Progress:
    """Trial lines plus a bar of spent cost against the budget (the CLI's live view)."""

    def __init__(self, budget_s: float, trial_overhead_s: float, stream: TextIO = sys.stderr,
                 enabled: bool = True, compact: bool = False) -> None:
        self.budget_s, self.overhead_s = budget_s, trial_overhead_s
        self.stream, self.enabled, self.compact = stream, enabled, compact
        self.t0 = time.monotonic()
        self.cost_s = 0.0

    def trial(self, record: Mapping[str, Any]) -> None:
        self.cost_s += float(record.get("runlength_s") or 0.0) + self.overhead_s
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.t0
        if self.compact:           # one line a trial (make run): cost against the budget, wall time
            budget = f"/{self.budget_s:g}" if math.isfinite(self.budget_s) else ""
            self.stream.write(f"{trial_line(record)}  cost {self.cost_s:.0f}{budget} s, wall {elapsed:.0f} s\n")
        elif math.isfinite(self.budget_s):
            bar = "#" * int(round(min(self.cost_s / self.budget_s, 1.0) * 30))
            self.stream.write(f"{trial_line(record)}\n  [{bar:<30}] cost {self.cost_s:5.0f}/{self.budget_s:g} s, "
                              f"wall {elapsed:5.0f} s\n")
        else:
            self.stream.write(f"{trial_line(record)}\n  cost {self.cost_s:5.0f} s, wall {elapsed:5.0f} s\n")
        self.stream.flush()
