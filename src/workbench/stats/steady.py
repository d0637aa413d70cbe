"""Steady state inside one trial, judged on its per-interval series (fstress --interval).

1. Warm-up: MSER truncation (White 1997; White, Cobb & Spratt 2000): drop the first d interval
   means that minimise MSER(d) = Σ_{i>d} (x_i − x̄_d)² / (n − d)², d ≤ n/2 — the standard error of
   the kept mean; d > 0 means the start of the trial was still paying for something (the previous
   trial's backlog, a cold cache).
2. Trend: the Mann–Kendall test on the kept means (Mann 1945, Kendall 1975), which is Kendall's τ
   between the means and their positions; two-sided p from scipy.stats.kendalltau; pre-whitened
   (`trend_test`): the interval means of a queue are positively autocorrelated, and on steady AR(1)
   series with lag-1 correlation 0.6 the plain test at α 0.01 calls 9 / 17 / 17 % of them trends at
   10 / 30 / 60 intervals, the whitened one 6 / 5 / 3 % (1500 seeded series; at 0.8: 10 / 8 / 5 %
   against 17–36 %: fewer false alarms, not none; tests/stats/test_steady.py). A start that
   MSER would drop although it reads *below* the rest is no warm-up (the drain leaves an empty
   queue, a cold cache reads high): it is where a rise begins, and the trend is tested on the whole
   series — MSER's cut (d ≤ n/2) on a 10-interval rise of 6 → 730 ms kept 5 intervals, on which the
   test cannot reach α (its smallest p is 2/5! = 0.0167).
3. Stall: a kept interval whose mean exceeds both STALL_FACTOR (10) × the median interval mean and
   the median + STALL_MS (100 ms): the server stopped answering for a while (a transient that
   neither MSER nor a monotone trend test sees).
4. Backlog at the end: calls still in flight when sending stopped, against what Little's law
   expects in flight in a steady queue (L = λ·R̄): a ratio above BACKLOG_RATIO means the server was
   falling behind when the trial ended.

A trial is `steady` when it has ≥ MIN_INTERVALS kept intervals, no significant trend (α = ALPHA),
no stall and no backlog; `short` when too few intervals remain to judge.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as _st

ALPHA = 0.01  # a trend must be clear: most trials are short and noisy
MIN_INTERVALS = 5
BACKLOG_RATIO = 3.0
STALL_FACTOR = 10.0
STALL_MS = 100.0
# the verdicts of a trial judged not steady
NOT_STEADY = ("trend up", "trend down", "stall", "backlog")


def mser_truncation(x: Sequence[float]) -> int:
    """MSER's d: how many leading points to drop (0 ≤ d ≤ n/2; 0 for fewer than 4 points)."""
    a = np.asarray(x, float)
    n = a.size
    if n < 4:
        return 0
    best_d, best = 0, math.inf
    for d in range(n // 2 + 1):
        tail = a[d:]
        score = float(np.sum((tail - tail.mean()) ** 2)) / (n - d) ** 2
        if score < best - 1e-15:
            best_d, best = d, score
    return best_d


def mann_kendall(x: ArrayLike) -> tuple[float, float]:
    """(τ, two-sided p) of the Mann–Kendall trend test: Kendall's τ of x against its positions."""
    a = np.asarray(x, float)
    if a.size < 3 or np.all(a == a[0]):
        return 0.0, 1.0
    res = _st.kendalltau(np.arange(a.size), a)
    return float(res.statistic), float(res.pvalue)


def lag1_autocorrelation(x: ArrayLike) -> float:
    """r1 = Σ(x_t − x̄)(x_{t+1} − x̄) / Σ(x_t − x̄)² (Box, Jenkins & Reinsel §2.1.4); 0 if x is
    constant."""
    xa = np.asarray(x, float)
    a = xa - float(np.mean(xa))
    den = float(np.dot(a, a))
    return float(np.dot(a[:-1], a[1:])) / den if a.size >= 2 and den > 0 else 0.0


class Trend(NamedTuple):
    tau: float  # Kendall's τ of the pre-whitened series against time
    p: float  # its two-sided p
    r1: float  # the lag-1 autocorrelation whitened out (0: none)
    change: float  # Theil–Sen slope × (n − 1): the trend's rise over the series, in its units


def trend_test(x: Sequence[float]) -> Trend:
    """Mann–Kendall on the pre-whitened series y_t = x_t − r1·x_{t−1} (Kulkarni & von Storch 1995,
    Hydrologie und Wasserbewirtschaftung 39(2)); r1 the lag-1 autocorrelation of x less its
    Theil–Sen line (a trend would read as persistence and whiten itself away; Yue et al. 2002),
    corrected for its small-sample bias and kept in [0, 0.95]."""
    a = np.asarray(x, float)
    if a.size < 4:
        return Trend(*mann_kendall(a), 0.0, 0.0)
    t = np.arange(a.size, dtype=float)
    slope = float(_st.theilslopes(a, t).slope)
    resid = a - slope * t
    r1 = 0.0
    if np.ptp(resid) > 0 and a.size > 4:
        # E[r] ≈ φ − (1 + 4φ)/n (Marriott & Pope 1954, Biometrika 41): φ̂ = (n·r + 1)/(n − 4)
        r1 = min(max(0.0, (a.size * lag1_autocorrelation(resid) + 1.0) / (a.size - 4.0)), 0.95)
    tau, p = mann_kendall(a[1:] - r1 * a[:-1] if r1 > 0 else a)
    return Trend(tau, p, r1, slope * (a.size - 1))


def _backlog_ratio(outstanding: Any, load_ops_s: float, mean_ms: float) -> float | None:
    """The calls still outstanding when sending stopped over those a steady server holds in flight
    (Little: L = λ·R, at least 1); None when the series does not say."""
    if not isinstance(outstanding, (int, float)):
        return None
    in_flight = load_ops_s * mean_ms / 1000.0
    return outstanding / max(in_flight, 1.0)


def _trend(means: list[float], d: int, mean_ms: float, out: dict[str, Any]) -> Trend:
    """The trend test of the intervals after the warm-up (the first d); of all of them when the
    warm-up read lower and the whole series rises significantly (a rise from a low start, not a
    warm-up: `out` then says so)."""
    trend = trend_test(means[d:])
    if d and np.mean(means[:d]) < mean_ms:
        whole = trend_test(means)
        if whole.p < ALPHA and whole.tau > 0:
            out.update(warmup_intervals=0, intervals=len(means), low_start=d)
            return whole
    return trend


def judge(series: Mapping[str, Any] | None, load_ops_s: float) -> dict[str, Any]:
    """The steady-state verdict of one trial from its compact series (measure.timeseries)."""
    if not series:
        return {"verdict": "no series"}
    rows = [
        (t, m)
        for t, m in zip(series.get("t_s") or [], series.get("mean_ms") or [], strict=False)
        if t is not None and t >= 0 and m is not None and math.isfinite(m)
    ]
    means = [m for _, m in rows]
    d = mser_truncation(means)
    kept = means[d:]
    out: dict[str, Any] = {
        "warmup_intervals": d,
        "intervals": len(kept),
        "first_ms": means[0] if means else None,
    }
    mean_ms = float(np.mean(kept)) if kept else math.nan
    outstanding = series.get("outstanding_at_stop")
    ratio = _backlog_ratio(outstanding, load_ops_s, mean_ms) if kept else None
    out.update(outstanding_at_stop=outstanding, backlog_ratio=ratio)
    if len(kept) < MIN_INTERVALS:
        return {**out, "verdict": "short"}
    trend = _trend(means, d, mean_ms, out)
    median = float(np.median(kept))
    out.update(
        mk_tau=trend.tau,
        mk_p=trend.p,
        mk_r1=trend.r1,
        trend_change_ms=trend.change,
        median_ms=median,
    )
    stalled = [
        i + d for i, m in enumerate(kept) if m > STALL_FACTOR * median and m > median + STALL_MS
    ]
    behind = ratio is not None and ratio > BACKLOG_RATIO
    if trend.p < ALPHA:  # a trend names the verdict; a stall or backlog beside it is kept as well
        return {
            **out,
            "verdict": "trend up" if trend.tau > 0 else "trend down",
            "backlog": behind,
            **({"stall_intervals": stalled} if stalled else {}),
        }
    if stalled:
        return {**out, "verdict": "stall", "stall_intervals": stalled}
    if behind:
        return {**out, "verdict": "backlog"}
    return {**out, "verdict": "steady"}
