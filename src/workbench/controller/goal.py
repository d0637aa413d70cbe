"""A goal of the decision as the strategies see it, and `guard`.

`Goal` holds the spec at that goal, the load summaries, the search state, the log, the loads that
cannot be measured and the local fit, each computed once. The strategies answer a `Step`
(steps.py): the next trial (`NextLoad`) or the goal's end (`GoalDone`); `guard` is the one place a
nominated load is checked against the loads that cannot be measured and those already classified
(strategies.py, certifying.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import overload

from workbench.controller.fit import LocalFit, local_fit
from workbench.controller.spec import RatingSpec
from workbench.controller.state import LoadStatus, LoadSummary, SearchState, load_key
from workbench.controller.steps import GoalDone, NextLoad
from workbench.controller.summary import search_state, summarize
from workbench.controller.trial import TrialResult


@dataclass
class Goal:
    spec: RatingSpec  # at this goal (RatingSpec.at_goal)
    r_sat: float
    trials: Sequence[TrialResult]  # the server's trials (no harness failures)
    unmeasurable: Mapping[float, TrialResult]  # load key → the last of its invalid run

    @cached_property
    def loads(self) -> list[LoadSummary]:
        return [
            s
            for s in summarize(self.spec, self.trials, self.r_sat)
            if not (s.status == LoadStatus.OPEN and load_key(s.load) in self.unmeasurable)
        ]

    @cached_property
    def st(self) -> SearchState:
        return search_state(self.spec, self.r_sat, self.loads)

    @cached_property
    def fit(self) -> LocalFit | None:
        """The policy's local fit of this decision (Policy.uses_fit; at its stop level, the reported
        CI at its report level): one fit serves the stop test and the next load."""
        pol, c = self.spec.policy, self.spec.confidence
        if not pol.uses_fit:
            return None
        return local_fit(
            self.loads,
            self.r_sat,
            self.spec.width,
            pol.fit_confidence(c),
            report_confidence=pol.fit_ci_confidence(c),
        )


@overload
def guard(g: Goal, load: float, why: str, name: str) -> NextLoad | GoalDone: ...


@overload
def guard(g: Goal, load: float, why: str, name: None) -> NextLoad | None: ...


def guard(g: Goal, load: float, why: str, name: str | None) -> NextLoad | GoalDone | None:
    """The nominated load, checked. name None (a strategy that may yield): None when the load lies
    at or above a load that cannot be measured. Otherwise (the picker, the last resort): an invalid
    load ends the goal; one at or above the lowest unmeasurable load above the bracket's low end is
    moved halfway below it; a classified load gives way to the bracket's midpoint."""
    lo, hi = g.st.lo, g.st.hi
    above_lo = [t for t in g.unmeasurable.values() if lo is None or t.load > lo.load]
    if name is None:
        if load_key(load) in g.unmeasurable or any(t.load <= load * (1 + 1e-9) for t in above_lo):
            return None
        return NextLoad(load, why)
    if not (math.isfinite(load) and load > 0):
        return GoalDone(False, f"picker proposed an invalid load {load!r}: {why}", None, g.loads)
    if above_lo:
        cap = min(above_lo, key=lambda t: t.load)
        floor = lo.load if lo is not None else 0.0
        if load >= cap.load * (1 - 1e-9):
            if cap.load - floor <= g.spec.resolution * cap.load:
                return GoalDone(
                    False,
                    f"λ* ≥ {floor:g} ops/s: {cap.load:g} ops/s cannot be measured "
                    f"({cap.reason or 'invalid'}) and lies within the resolution of it",
                    None,
                    g.loads,
                )
            load, why = (
                (floor + cap.load) / 2.0,
                f"{cap.load:g} ops/s cannot be measured ({cap.reason or 'invalid'}) → "
                f"halfway below it",
            )
    if load_key(load) in g.unmeasurable:
        return GoalDone(
            False,
            f"{load:g} ops/s cannot be measured ({g.unmeasurable[load_key(load)].reason})",
            None,
            g.loads,
        )
    same = [s for s in g.loads if load_key(s.load) == load_key(load)]
    if same and same[0].status != LoadStatus.OPEN:
        if lo is None or hi is None:
            return GoalDone(False, f"picker repeated the classified load {load:g}", None, g.loads)
        load, why = (lo.load + hi.load) / 2.0, f"{why}: already classified → bisect"
        if any(load_key(s.load) == load_key(load) and s.status != LoadStatus.OPEN for s in g.loads):
            return GoalDone(False, "no untested load left in the bracket", None, g.loads)
    return NextLoad(load, f"{name}: {why}")
