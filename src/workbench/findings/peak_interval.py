"""The λ* interval in one line, as the console, the report and the notifications state it (issue
30): "λ* 3906 ops/s, 90 % CI [3800, 4000] ops/s, anytime-valid"."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from workbench.controller.certify import METHOD_LABEL
from workbench.stats.intervals import accuracy


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


def mean_at_peak_text(result: Mapping[str, Any]) -> str:
    """The mean response time at the tested load nearest λ* and what its trials show of it (the
    console's and the report's row): '38.20 ms, CI [36.1, 40.3] ms, accuracy 0.945' ([CC] Eq. 1 and
    Eq. 2); where Eq. 1's lower end falls to 0 or below (two trials far apart) only its upper end
    is a statement — '38.31 ms, ≤ 80.66 ms (its CI's upper end; …)' — never an interval from 0
    or an accuracy of 0; without two trials, no CI."""
    mean, r_sat = _end(result.get("mean_ms_at_peak")), _end(result.get("r_sat_ms"))
    head = "—" if mean is None else f"{mean:.2f} ms"
    goal = f"R_sat {r_sat:g} ms" if r_sat is not None else "R_sat not recorded"
    mci = result.get("mean_ms_ci") or (None, None)
    lo, hi = (_end(mci[0]), _end(mci[1])) if len(mci) == 2 else (None, None)
    if hi is None or math.isinf(hi):
        n = result.get("n_trials_at_peak") or "fewer than 2"
        return f"{head} (no CI: {n} trial(s) there; {goal})"
    if lo is None or lo <= 0:
        return (
            f"{head}, ≤ {hi:.2f} ms (its CI's upper end; its lower end reaches 0 ms, so no "
            f"two-sided interval or accuracy is stated; {goal})"
        )
    return f"{head}, CI [{lo:.2f}, {hi:.2f}] ms ({goal}, accuracy {accuracy(lo, hi):.3f})"
