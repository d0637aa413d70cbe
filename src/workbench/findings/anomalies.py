"""Auto-pilot's anomaly warnings (seed 001, "Detecting Anomalies"): outlier trials, drift within a
rating, a leak-like trend across nights. A warning never changes λ*; it tells the reader which
trials or nights to distrust.

* outlier — at one load, a valid trial whose mean response time lies more than Z_THRESHOLD (2,
  Auto-pilot's default) sample standard deviations from the load's mean (stats.zscores). With n
  trials no |z| can exceed (n − 1)/√n (Shiffler 1988), so a load needs ≥ MIN_Z_TRIALS (6) trials
  before 2 can be exceeded: loads with fewer are counted as unchecked, never as clean.
* drift — at one load with ≥ 3 valid trials, the least-squares slope of the trial means against
  their trial numbers (run order), t-tested at the rating's confidence (stats.slope_test): the
  server changed while it was measured (a cache warming, a backlog, a leak).
* trend — over ≥ 3 nights of a nightly baseline (history and tonight, in night order), the slope of
  λ* against the night's position: significantly negative is a leak-like decline even when no
  single night is a regression.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from workbench.stats.intervals import slope_test, zscores

Z_THRESHOLD = 2.0
MIN_Z_TRIALS = 6  # (n − 1)/√n > 2 first at n = 6 (5/√6 = 2.04)
MIN_SLOPE_POINTS = 3


def _finite(x: Any) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _by_load(trials: Sequence[Mapping[str, Any]]) -> dict[float, list[tuple[int, float]]]:
    """Valid trials' (trial number, mean ms) per load, in run order."""
    out: dict[float, list[tuple[int, float]]] = defaultdict(list)
    for i, t in enumerate(trials):
        n = int(t.get("n", i))
        if t.get("valid") and _finite(t.get("load_ops_s")) and _finite(t.get("mean_ms")):
            out[float(t["load_ops_s"])].append((n, float(t["mean_ms"])))
    return dict(sorted(out.items()))


def _outliers(load: float, points: list[tuple[int, float]]) -> list[dict[str, Any]]:
    z = zscores([m for _, m in points])
    return [
        {
            "kind": "outlier",
            "load_ops_s": load,
            "trials": [n],
            "z": round(float(zi), 3),
            "text": f"trial {n} at {load:g} ops/s: mean {m:.4g} ms is {zi:+.2f} standard "
            f"deviations from the load's mean (|z| > {Z_THRESHOLD:g})",
        }
        for (n, m), zi in zip(points, z, strict=True)
        if abs(zi) > Z_THRESHOLD
    ]


def _drift(load: float, points: list[tuple[int, float]], confidence: float) -> list[dict[str, Any]]:
    ns, means = [float(n) for n, _ in points], [m for _, m in points]
    if len(set(ns)) < 2:
        return []
    s = slope_test(means, ns, confidence)
    if not s.significant:
        return []
    word = "rose" if s.slope > 0 else "fell"
    return [
        {
            "kind": "drift",
            "load_ops_s": load,
            "trials": [int(n) for n in ns],
            "slope_ms_per_trial": s.slope,
            "p_value": s.p_value,
            "text": f"at {load:g} ops/s the mean {word} by {abs(s.slope):.3g} ms per trial over "
            f"trials {int(ns[0])}–{int(ns[-1])} (slope p = {s.p_value:.3g} < "
            f"{1 - confidence:.2g}): the server changed while it was measured",
        }
    ]


def rating_warnings(
    trials: Sequence[Mapping[str, Any]], confidence: float = 0.95
) -> dict[str, Any]:
    """{"warnings": [...], "loads_unchecked_for_outliers": [...]} for one rating's trial records
    (n, load_ops_s, mean_ms, valid)."""
    warnings: list[dict[str, Any]] = []
    unchecked = []
    for load, points in _by_load(trials).items():
        if len(points) >= MIN_Z_TRIALS:
            warnings += _outliers(load, points)
        elif len(points) >= 2:
            unchecked.append(load)
        if len(points) >= MIN_SLOPE_POINTS:
            warnings += _drift(load, points, confidence)
    return {"warnings": warnings, "loads_unchecked_for_outliers": unchecked}


def history_trend(
    peaks: Sequence[float | None], nights: Sequence[str], confidence: float = 0.95
) -> dict[str, Any] | None:
    """A leak-like warning when λ* declines significantly over the nights (oldest first; tonight
    last); None when there is no such decline or fewer than 3 nights with a λ*."""
    pts = [
        (i, float(p), night)
        for i, (p, night) in enumerate(zip(peaks, nights, strict=True))
        if _finite(p)
    ]
    if len(pts) < MIN_SLOPE_POINTS:
        return None
    s = slope_test([p for _, p, _ in pts], [float(i) for i, _, _ in pts], confidence)
    if not (s.significant and s.slope < 0):
        return None
    return {
        "kind": "trend",
        "nights": [night for *_, night in pts],
        "slope_ops_s_per_night": s.slope,
        "p_value": s.p_value,
        "text": f"λ* fell by {-s.slope:.3g} ops/s per night over {len(pts)} nights "
        f"({pts[0][2]} … {pts[-1][2]}; slope p = {s.p_value:.3g}): a leak-like decline",
    }
