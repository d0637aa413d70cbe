"""Steady state inside one trial, judged on its per-interval series (fstress --interval).

1. Warm-up: MSER truncation (White 1997; White, Cobb & Spratt 2000): drop the first d interval
   means that minimise MSER(d) = Σ_{i>d} (x_i − x̄_d)² / (n − d)², d ≤ n/2 — the standard error of
   the kept mean; d > 0 means the start of the trial was still paying for something (the previous
   trial's backlog, a cold cache).
2. Trend: the Mann–Kendall test on the kept means (Mann 1945, Kendall 1975), which is Kendall's τ
   between the means and their positions; two-sided p from scipy.stats.kendalltau. A start that
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
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import stats as _st

ALPHA = 0.01            # a trend must be clear: most trials are short and noisy
MIN_INTERVALS = 5
BACKLOG_RATIO = 3.0
STALL_FACTOR = 10.0
STALL_MS = 100.0
NOT_STEADY = ("trend up", "trend down", "stall", "backlog")   # the verdicts of a trial judged not steady


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


def mann_kendall(x: Sequence[float]) -> tuple[float, float]:
    """(τ, two-sided p) of the Mann–Kendall trend test: Kendall's τ of x against its positions."""
    a = np.asarray(x, float)
    if a.size < 3 or np.all(a == a[0]):
        return 0.0, 1.0
    res = _st.kendalltau(np.arange(a.size), a)
    return float(res.statistic), float(res.pvalue)


def judge(series: Mapping[str, Any] | None, load_ops_s: float) -> dict[str, Any]:
    """The steady-state verdict of one trial from its compact series (measure.timeseries)."""
    if not series:
        return {"verdict": "no series"}
    rows = [(t, m) for t, m in zip(series.get("t_s") or [], series.get("mean_ms") or [], strict=False)
            if t is not None and t >= 0 and m is not None and math.isfinite(m)]
    means = [m for _, m in rows]
    d = mser_truncation(means)
    kept = means[d:]
    out: dict[str, Any] = {"warmup_intervals": d, "intervals": len(kept), "first_ms": means[0] if means else None}
    mean_ms = float(np.mean(kept)) if kept else math.nan
    in_flight = load_ops_s * mean_ms / 1000.0 if kept else math.nan        # Little: L = λ·R
    outstanding = series.get("outstanding_at_stop")
    ratio = outstanding / max(in_flight, 1.0) if isinstance(outstanding, (int, float)) and kept else None
    out.update(outstanding_at_stop=outstanding, backlog_ratio=ratio)
    if len(kept) < MIN_INTERVALS:
        return {**out, "verdict": "short"}
    tau, p = mann_kendall(kept)
    if d and np.mean(means[:d]) < mean_ms:
        tau_all, p_all = mann_kendall(means)
        if p_all < ALPHA and tau_all > 0:          # a rise from a low start, not a warm-up: judged whole
            tau, p = tau_all, p_all
            out.update(warmup_intervals=0, intervals=len(means), low_start=d)
    out.update(mk_tau=tau, mk_p=p)
    if p < ALPHA:
        return {**out, "verdict": "trend up" if tau > 0 else "trend down"}
    median = float(np.median(kept))
    stalled = [i + d for i, m in enumerate(kept) if m > STALL_FACTOR * median and m > median + STALL_MS]
    if stalled:
        return {**out, "verdict": "stall", "stall_intervals": stalled}
    if ratio is not None and ratio > BACKLOG_RATIO:
        return {**out, "verdict": "backlog"}
    return {**out, "verdict": "steady"}
