"""A baseline's nightly verdict from its whole history (issue 31): the change-point detector's
suspect, its confirmation by tonight's re-run, the canary's say, and what changed between the two
nights.

Pure functions of plain records (history points: ``date``, ``peak_rate``, ``peak_rate_ci``,
``ci_level``; stored spec / params / sysinfo dicts); pipeline.nightly_confirm does the store's I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats as _st

from workbench.findings import changepoints as cpm

# fewer than MIN_HISTORY nights: today's test suspects, the re-run confirms
SHORT = "per-night test"
DETECTOR = "change points"


def log_se(ci: Sequence[Any] | None, level: float | None) -> float | None:
    """Standard error of log λ* from a night's two-sided CI at `level`: (log hi − log lo) /
    (2·z_{(1+c)/2}); None when an end is open or missing."""
    if (
        not isinstance(ci, (list, tuple))
        or len(ci) != 2
        or any(x is None or not float(x) > 0 for x in ci)
    ):
        return None
    lo, hi = float(ci[0]), float(ci[1])
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        return None
    return (math.log(hi) - math.log(lo)) / (
        2.0 * float(_st.norm.ppf((1.0 + float(level or 0.95)) / 2.0))
    )


def series(
    points: Sequence[Mapping[str, Any]],
) -> tuple[list[float], list[float] | None, list[str]]:
    """(λ* per night, each night's log-λ* standard error or None when no night has one, the nights),
    nights without a finite positive λ* left out."""
    keep = [
        p
        for p in points
        if isinstance(p.get("peak_rate"), (int, float))
        and math.isfinite(p["peak_rate"])
        and p["peak_rate"] > 0
    ]
    ses = [log_se(p.get("peak_rate_ci"), p.get("ci_level")) for p in keep]
    known = [s for s in ses if s is not None]
    fill = float(np.median(known)) if known else None
    return (
        [float(p["peak_rate"]) for p in keep],
        None if fill is None else [s if s is not None else fill for s in ses],
        [str(p.get("date")) for p in keep],
    )


def short_suspect(values: Sequence[float], per_night_regression: bool) -> cpm.ChangePoint | None:
    """With a history too short for change points, today's per-night test's regression as a suspect:
    tonight the first night of the new level, before = the geometric mean of the last ≤ 5 nights."""
    if not per_night_regression or len(values) < 2:
        return None
    before = float(np.exp(np.mean(np.log(values[-6:-1]))))
    rel = values[-1] / before - 1.0
    return cpm.ChangePoint(
        len(values) - 1,
        before,
        float(values[-1]),
        rel,
        (math.nan, math.nan),
        math.nan,
        cpm.MIN_CHANGE,
        max(len(values) - 6, 0),
    )


def suspect(
    values: Sequence[float], se_log: Sequence[float] | None, per_night_regression: bool
) -> tuple[str, cpm.ChangePoint | None]:
    """(the detector used, tonight's suspected new level: a drop that began within the last
    NEW_LEVEL_NIGHTS nights, or None)."""
    if len(values) < cpm.MIN_HISTORY:
        return SHORT, short_suspect(values, per_night_regression)
    cp = cpm.new_level(values, se_log)
    return DETECTOR, cp if cp is not None and cp.drop else None


def confirmed(
    detector: str,
    values: Sequence[float],
    se_log: Sequence[float] | None,
    rerun: float | None,
    cp: cpm.ChangePoint,
) -> bool:
    """The re-run confirms the suspect: changepoints.confirmed on a long history; on a short one the
    re-run lies nearer the new level than the old (the same first condition)."""
    if rerun is None or not rerun > 0:
        return False
    if detector == DETECTOR:
        return cpm.confirmed(values, rerun, cp, se_log)
    return abs(math.log(rerun / cp.after)) < abs(math.log(rerun / cp.before))


def change_summary(cp: cpm.ChangePoint, nights: Sequence[str]) -> dict[str, Any]:
    """The change point as the verdict stores it (strict JSON) with the first night of the new level
    and the last good night (the one before it)."""
    d = {
        k: (None if isinstance(x, float) and not math.isfinite(x) else x)
        for k, x in cp.to_dict().items()
    }
    d["rel_ci"] = [None if not math.isfinite(x) else x for x in cp.rel_ci]
    return {
        **d,
        "first_night": nights[cp.index],
        "last_good_night": nights[cp.index - 1] if cp.index else None,
    }


def _nan_for_none(x: float | None) -> float:
    return math.nan if x is None else x


def from_summary(d: Mapping[str, Any]) -> cpm.ChangePoint:
    """The ChangePoint back from change_summary's dict (None → NaN)."""
    ci_lo, ci_hi = (_nan_for_none(x) for x in d["rel_ci"])
    return cpm.ChangePoint(
        d["index"],
        d["before"],
        d["after"],
        d["rel_change"],
        (ci_lo, ci_hi),
        _nan_for_none(d["p"]),
        d["floor"],
        d.get("start", 0),
    )


def settings_diff(
    before: Any, after: Any, prefix: str = "", ignore: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """Every setting that differs between two nested records: {setting: dotted path, before, after};
    a key on one side only shows None on the other; keys named in `ignore` (at any depth) are
    skipped."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[dict[str, Any]] = []
        for k in sorted((set(before) | set(after)) - ignore, key=str):
            out += settings_diff(before.get(k), after.get(k), f"{prefix}{k}.", ignore)
        return out
    if before == after:
        return []
    return [{"setting": prefix.rstrip("."), "before": before, "after": after}]
