"""The goals of a several-goal rating as rows: one per R_sat, all from the rating's one trial log
(controller.result.goal_results). The result block of the terminal and the HTML report show
these."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from workbench.controller.result import goal_results
from workbench.findings.peak_interval import ci_text

GOAL_HEADERS = (
    "R_sat ms",
    "L_sat ms (p95)",
    "λ* ops/s",
    "λ* CI ops/s",
    "bracket ops/s",
    "R̄ ms at the tested load nearest λ*",
    "converged",
    "reason",
)


def _n(x: Any, fmt: str = ".4g") -> str:
    return format(x, fmt) if isinstance(x, (int, float)) and math.isfinite(x) else "—"


def _pair(p: Any, fmt: str) -> str:
    return (
        f"[{_n(p[0], fmt)}, {_n(p[1], fmt)}]"
        if isinstance(p, (list, tuple)) and len(p) == 2
        else "—"
    )


def goal_rows(result: Mapping[str, Any], fmt: str = ".4g") -> list[tuple[str, ...]]:
    """One row of GOAL_HEADERS per goal, ascending by R_sat, loads in `fmt`; none for a rating of
    one goal."""
    goals = goal_results(result)
    if len(goals) < 2:
        return []
    return [
        (
            _n(g.get("r_sat_ms"), "g"),
            _n(g.get("l_sat_ms"), "g"),
            _n(g.get("peak_rate"), fmt),
            ci_text(g.get("peak_rate_ci"), fmt),
            _pair(g.get("bracket"), fmt),
            f"{_n(g.get('mean_ms_at_peak'), '.3g')} at {_n(g.get('mean_load_ops_s'), fmt)} ops/s",
            "yes" if g.get("converged") else "NO",
            str(g.get("reason") or ""),
        )
        for g in goals
    ]
