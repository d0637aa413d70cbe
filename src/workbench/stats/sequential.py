"""Bounds that stay valid however often the controller looks (issue 30), and a positive CI of a
mean.

A rating looks at a load's trials after every trial and stops when it likes; a fixed-n interval
looked at k times misses more often than its nominal error (optional stopping). Here each look k
gets its own share of the error by an alpha-spending series whose sum is the total:

    α_k = α / (k·(k + 1)),  Σ_{k≥1} α_k = α                       (telescoping: 1/k − 1/(k+1))

so by the union bound P(some look's bound misses) ≤ α, for every stopping time: the running
bounds form a confidence sequence (Howard, Ramdas, McAuliffe & Sekhon, "Time-uniform,
nonparametric, nonasymptotic confidence sequences", Ann. Statist. 49 (2021), §1: a union bound over
times is the elementary construction; their stitched boundaries are sharper for known variance,
ours has to estimate it, hence Student t per look, exact for normal trial means).

Looks are taken on a geometric grid of sample sizes (`look_sizes`: 2, 3, 4, 6, 8, 11, 16, …), so
the error is spread over O(log n) looks. One-sided tests at a look on n trials:
* `upper_mean`:  x̄_w + t_{1−α_k; n−1}·s_w/√Σw (w: runlength weights, [CC] §3.2), or Cox's lognormal
  upper end when higher (skewed trials) — the mean is below it;
* `lower_log_mean`: the same on log x, lower side: exp of it bounds the GEOMETRIC mean from below,
  and E[log X] ≤ log E[X] (Jensen), so it bounds the arithmetic mean from below as well;
* `count_deficit`: z = (Σ a_i·r_i − Σ λ·r_i)/√(Σ λ·r_i) < −z_{1−α_k}: the server completed fewer
  operations than offered, beyond Poisson noise, so the load exceeds its capacity.
`mean_exceeds` needs no looks at all: a betting e-process (a nonnegative supermartingale under the
null) may be read after every trial, by Ville's inequality.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy import stats as _st

__all__ = [
    "spend",
    "look_sizes",
    "upper_mean",
    "lower_log_mean",
    "count_deficit",
    "running",
    "mean_exceeds",
    "z_upper",
]

BETS = (0.25, 0.5, 1.0)  # the fractions of capital `mean_exceeds` bets, mixed with equal weight


def spend(alpha: float, k: int) -> float:
    """The error spent at look k ≥ 1: α_k = α/(k(k+1)) (Σ_k α_k = α)."""
    if not 0 < alpha < 1 or k < 1:
        raise ValueError(f"need 0 < alpha < 1 and k ≥ 1, got {alpha!r}, {k!r}")
    return alpha / (k * (k + 1))


def _wmean_se(x: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    m = float(np.sum(w * x) / np.sum(w))
    sd = math.sqrt(float(np.sum(w * (x - m) ** 2)) / (x.size - 1))
    return m, sd / math.sqrt(float(np.sum(w)))


@lru_cache(maxsize=65536)
def _t(p: float, df: int) -> float:
    return float(_st.t.ppf(p, df))


@lru_cache(maxsize=65536)
def z_upper(alpha: float) -> float:
    """z_{1−α}, the standard normal's upper-α point (cached: the controller asks the same few)."""
    return float(_st.norm.ppf(1.0 - alpha))


def upper_mean(x: Sequence[float], alpha: float, weights: Sequence[float] | None = None) -> float:
    """One-sided upper bound of the (weighted) mean at error α: the larger of x̄ + t_{1−α; n−1}·SE
    and, for positive samples, the upper end of Cox's lognormal interval exp(ȳ + s²/2 + t·√(s²/n +
    s⁴/(2(n−1)))) (Zhou & Gao 1997): on right-skewed trials (outliers, a growing queue) the t bound
    alone falls below the mean too often; inf for n < 2."""
    a = np.asarray(x, float)
    if a.size < 2:
        return math.inf
    w = np.ones_like(a) if weights is None else np.asarray(weights, float)
    m, se = _wmean_se(a, w)
    q = _t(1.0 - alpha, a.size - 1)
    if np.any(a <= 0):
        return m + q * se
    y = np.log(a)
    ym, yse = _wmean_se(y, w)
    s2 = yse * yse * a.size  # s² of log x (per unit weight when weighted)
    cox = ym + s2 / 2.0 + q * math.sqrt(s2 / a.size + s2 * s2 / (2.0 * (a.size - 1)))
    return max(m + q * se, math.exp(min(cox, 700.0)))


def lower_log_mean(
    x: Sequence[float], alpha: float, weights: Sequence[float] | None = None
) -> float:
    """One-sided lower bound at error α of exp E[log X] ≤ E[X]: exp(mean log x − t_{1−α; n−1}·SE)
    (0 for n < 2 or a non-positive value)."""
    a = np.asarray(x, float)
    if a.size < 2 or np.any(a <= 0):
        return 0.0
    w = np.ones_like(a) if weights is None else np.asarray(weights, float)
    m, se = _wmean_se(np.log(a), w)
    return math.exp(m - _t(1.0 - alpha, a.size - 1) * se)


def count_deficit(
    offered_ops_s: float, achieved: Sequence[float], runlengths: Sequence[float]
) -> float:
    """z of the operations completed against those offered, (Σ a·r − Σ λ·r)/√(Σ λ·r): N(0, 1) for a
    server that keeps up with Poisson arrivals (its count is Poisson(λ·Σr)); 0 with nothing
    offered."""
    offered = float(offered_ops_s) * float(np.sum(runlengths))
    done = float(np.sum(np.asarray(achieved, float) * np.asarray(runlengths, float)))
    return (done - offered) / math.sqrt(offered) if offered > 0 else 0.0


def mean_exceeds(x: Sequence[float], mu0: float, alpha: float) -> int:
    """The first n at which nonnegative trials x show E[X] > mu0 at error α however often one looks,
    0 if none: the wealth of betting against H0: E[X | past] ≤ mu0,
        K_n = mean over λ ∈ BETS of Π_{i≤n} (1 + λ·(x_i/mu0 − 1)),
    a nonnegative supermartingale under H0 for each λ ∈ [0, 1] (x ≥ 0), and so is their mean, hence
    P(∃n: K_n ≥ 1/α) ≤ α (Ville 1939; Waudby-Smith & Ramdas, "Estimating means of bounded random
    variables by betting", JRSS-B 86 (2024) §3). Distribution-free: a skewed trial past a wall
    (195, 719, 806 ms over R_sat 40 ms) shows it in three trials where a t bound on log x needs
    more."""
    if not (mu0 > 0 and 0 < alpha < 1):
        raise ValueError(f"need mu0 > 0 and 0 < alpha < 1, got {mu0!r}, {alpha!r}")
    wealth = np.ones(len(BETS))
    bets = np.asarray(BETS)
    for n, v in enumerate(x, start=1):
        if v < 0:
            raise ValueError(f"mean_exceeds needs nonnegative values, got {v!r}")
        wealth *= 1.0 + bets * (float(v) / mu0 - 1.0)
        if float(wealth.mean()) >= 1.0 / alpha:
            return n
    return 0


def look_sizes(n_max: int, first: int = 2) -> list[int]:
    """The sample sizes at which a bound is taken: first·2^((k−1)/2) rounded, k = 1, 2, … (2, 3, 4,
    6, 8, 11, 16, 23, 32, … for first = 2), up to n_max. Looks on a geometric grid spend α over
    O(log n) looks instead of n (the idea of stitching, Howard et al. 2021 §3.1); between two looks
    the bound of the last one stands (it holds at every later time too)."""
    out: list[int] = []
    k = 1
    while True:
        n = int(round(first * 2 ** ((k - 1) / 2)))
        if n > n_max:
            return out
        if not out or n > out[-1]:
            out.append(n)
        k += 1


def running(
    bound,
    x: Sequence[float],
    alpha: float,
    weights: Sequence[float] | None = None,
    upper: bool = True,
) -> tuple[float, int]:
    """The tightest bound over the looks k = 1, 2, … at the sizes `look_sizes` of the trials in log
    order, look k at α_k (`spend`): (bound, n at which it was reached). upper: the smallest upper
    bound, else the largest lower bound. The looks' union bound makes it valid at every stopping
    time."""
    xs = tuple(map(float, x))
    ws = None if weights is None else tuple(map(float, weights))
    best, at = (math.inf if upper else 0.0), 0
    for k, n in enumerate(look_sizes(len(xs)), start=1):
        b = _bound_at(bound, xs[:n], spend(alpha, k), None if ws is None else ws[:n])
        if (b < best) if upper else (b > best):
            best, at = b, n
    return best, at


@lru_cache(maxsize=1 << 14)
def _bound_at(
    bound, x: tuple[float, ...], alpha: float, weights: tuple[float, ...] | None
) -> float:
    """One look's bound (cached: the controller re-reads a load's earlier looks after every
    trial)."""
    return bound(x, alpha, weights)
