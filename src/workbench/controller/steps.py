"""The answer of one goal's decision (strategies.py, certifying.py), read by decide.py and
result.py.

A `Step` is the goal's next trial (`NextLoad`), its end (`GoalDone`), or, for a goal that converged
but whose λ* interval may still narrow, an optional trial with the end it keeps when the budget
cannot pay for it (`Tighten`).
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.controller.fit import FitPeak
from workbench.controller.state import LoadSummary


@dataclass(frozen=True)
class NextLoad:
    """The goal's next trial: at load_ops_s, for reason. fit_placed: the policy's local fit placed
    it (Policy.fit_place), so it runs the full runlength, never a probe's (decide._probe)."""

    load_ops_s: float
    reason: str
    fit_placed: bool = False


@dataclass(frozen=True)
class GoalDone:
    """The goal's end: converged or not, why, the load the stop rule accepted (None: λ* from the
    bracket or the fit), the load summaries it was judged on, and the fit that stopped it (stop
    rule "fit")."""

    converged: bool
    reason: str
    peak: LoadSummary | None
    loads: list[LoadSummary]
    fit: FitPeak | None = None


@dataclass(frozen=True)
class Tighten:
    """A converged goal whose certified λ* interval may narrow: one more trial (`next`), which
    decide drops for `done` when the budget or max_trials cannot pay for it."""

    next: NextLoad
    done: GoalDone


Step = NextLoad | GoalDone | Tighten
