"""Runlength policies: how long the next trial at a load should run.

fixed     every trial runs `spec.runlength_s` (the paper's 3-minute "sweet spot", [CC] §4.3).
adaptive  picks r (and the expected number of trials t) that minimise the expected cost of
          reaching the target half-width at the current load, from the variance observed so
          far, under the noise model of [CC] §3.2 / Fig. 6: the variance of one trial's mean
          response time falls as 1/r (σ(r) = κ/√r, "noise ∝ r^-1/2"), each trial also pays a
          fixed overhead o (`spec.trial_overhead_s`: setup, warm-up, teardown).

The rule (docs/controller.md, "Runlength"): with n trials already run at the load, total
runlength W = Σ r_i and per-unit variance κ̂² = Σ r_i (x_i − x̄_w)²/(n − 1), the CI half-width after
k more trials of length r is q(c, n+k)·κ̂/√(W + k·r) ([CC] Eq. 1 with runlength weights). The
target h = (1 − a)·x̄ is the half-width at which Eq. 2's accuracy reaches a. For k = 1, 2, …
the shortest r meeting the target is r_k = (q²κ̂²/h² − W)/k clipped to [r_min, r_max]; its cost
is k·(r_k + o). The policy returns the r_k of least cost (ties → fewer trials). Because q (the
Student t quantile) shrinks with n while the overhead grows with k, the optimum is interior:
that is Fig. 6's sweet spot, found from data instead of read off a plot.
Before a load has two valid trials its variance is unknown; its first trials use
`spec.runlength_s`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.stats.intervals import quantile

__all__ = ["RunlengthPlan", "plan_runlength", "unit_variance", "next_runlength"]


@dataclass(frozen=True)
class RunlengthPlan:
    runlength_s: float  # runlength for the next trial
    more_trials: int  # expected further trials (including the next one)
    expected_cost_s: float  # expected further cost, overhead included
    feasible: bool  # False when even max trials × r_max cannot meet the target


def unit_variance(means: Sequence[float], runlengths: Sequence[float]) -> float:
    """κ̂²: variance of a trial mean scaled to unit runlength (Var(x_i) = κ²/r_i)."""
    n = len(means)
    if n < 2:
        return math.nan
    w = sum(runlengths)
    m = sum(r * x for r, x in zip(runlengths, means)) / w
    return sum(r * (x - m) ** 2 for r, x in zip(runlengths, means)) / (n - 1)


def plan_runlength(
    kappa2: float,
    w_sum: float,
    n: int,
    target_half_width: float,
    confidence: float,
    overhead_s: float,
    r_min: float,
    r_max: float,
    max_more: int = 30,
) -> RunlengthPlan:
    """Minimise k·(r + o) subject to q(c, n+k)²·κ²/(W + k·r) ≤ h², r ∈ [r_min, r_max]."""
    if not math.isfinite(kappa2) or kappa2 <= 0 or target_half_width <= 0:
        return RunlengthPlan(r_min, 1, r_min + overhead_s, True)
    best: RunlengthPlan | None = None
    for k in range(1, max_more + 1):
        q = quantile(confidence, n + k)
        need_w = q * q * kappa2 / (target_half_width**2)  # total runlength needed (Eq. 1)
        r = max(r_min, (need_w - w_sum) / k)
        if r > r_max * (1 + 1e-12):
            continue
        cost = k * (r + overhead_s)
        if best is None or cost < best.expected_cost_s - 1e-9:
            best = RunlengthPlan(r, k, cost, True)
    if best is None:
        return RunlengthPlan(r_max, max_more, max_more * (r_max + overhead_s), False)
    return best


def next_runlength(spec, means: Sequence[float], runlengths: Sequence[float]) -> RunlengthPlan:
    """Runlength for the next trial at a load whose valid trials so far are (means, runlengths)."""
    if spec.runlength_policy == "fixed" or len(means) < 2 or getattr(spec, "strawman", False):
        return RunlengthPlan(spec.runlength_s, 1, spec.runlength_s + spec.trial_overhead_s, True)
    k2 = unit_variance(means, runlengths)
    w = sum(runlengths)
    m = sum(r * x for r, x in zip(runlengths, means)) / w
    h = (1.0 - spec.accuracy) * m
    return plan_runlength(
        k2,
        w,
        len(means),
        h,
        spec.confidence,
        spec.trial_overhead_s,
        spec.runlength_min_s,
        spec.runlength_max_s,
        max_more=max(1, spec.max_trials_per_load - len(means)),
    )
