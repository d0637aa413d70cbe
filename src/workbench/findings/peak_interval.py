"""The λ* interval in one line, as the console, the report and the notifications state it (issue
30): "λ* 3906 ops/s, 90 % CI [3800, 4000] ops/s, anytime-valid"."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from workbench.controller.certify import METHOD_LABEL


def _end(x: Any) -> float | None:
    return (
        float(x)
        if isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x)
        else None
    )


def ci_text(ci: Any, fmt: str = ".6g") -> str:
    """'[3800, 4000]', '[3800, ∞)' for an end not shown above (stored as null or inf), '—' for
    none."""
    lo, hi = (
        (_end(ci[0]), _end(ci[1]))
        if isinstance(ci, (list, tuple)) and len(ci) == 2
        else (None, None)
    )
    if lo is None and hi is None:
        return "—"
    hi_s = "∞)" if hi is None or math.isinf(hi) else f"{format(hi, fmt)}]"
    return f"[{format(max(lo or 0.0, 0.0), fmt)}, {hi_s}"


def interval_text(result: Mapping[str, Any]) -> str:
    """'90 % CI [3800, 4000] ops/s, anytime-valid'. An end not shown reads '∞' above (the interval
    is half-open, and says so) or 0 below; no interval at all (no trial) reads 'no λ* interval'. A
    result stored before issue 30 has no level: its CI is printed as stored, marked 'method not
        recorded'."""
    ci = ci_text(result.get("peak_rate_ci"))
    if ci == "—":
        return "no λ* interval"
    level = _end(result.get("peak_rate_ci_level"))
    if level is None:
        return f"CI {ci} ops/s (method not recorded)"
    return f"{100 * level:g} % CI {ci} ops/s, {METHOD_LABEL}"


def peak_statement(result: Mapping[str, Any]) -> str:
    """'λ* 3906 ops/s, 90 % CI [3800, 4000] ops/s, anytime-valid' (the quotable line)."""
    peak = _end(result.get("peak_rate"))
    return f"λ* {'—' if peak is None else f'{peak:.6g}'} ops/s, {interval_text(result)}"
