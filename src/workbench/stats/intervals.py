"""Statistics for the workbench controller (pure functions, numpy/scipy only).

Sources, cited at each function:
- [CC]  Shivam et al., "Cutting Corners: Workbench Automation for Server Benchmarking"
        (shared/seeds/000_*, newer text 002_*): Eq. 1 (CI of the mean), Eq. 2 (accuracy),
        the peak-rate region [R_sat ± s·R_sat] (§4 / Table 2) and Appendix A (t for N ≤ 30).
- [AP]  Wright et al., "Auto-pilot" (shared/seeds/001_*): z-score outliers (default 2) and the
        least-squares slope test for leaks / gradual degradation (§ "Detecting Anomalies").
- Welch (1947) unequal-variance t test; Efron's percentile / BCa bootstrap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats as _st

__all__ = [
    "MeanCI",
    "mean_ci",
    "quantile",
    "accuracy",
    "region",
    "overlaps_region",
    "inside_region",
    "trials_within",
    "WelchResult",
    "welch",
    "bootstrap_ci",
    "zscores",
    "zscore_outliers",
    "SlopeResult",
    "slope_test",
]


def _check_confidence(confidence: float) -> None:
    if not (0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


@lru_cache(maxsize=4096)
def quantile(confidence: float, n: int) -> float:
    """Two-sided critical value for a CI of a mean of n observations at `confidence`.

    [CC] Appendix A: p = (1 + c)/2; z_p (unit normal) for N > 30, t_{p; N-1} for N <= 30.
    """
    _check_confidence(confidence)
    p = (1.0 + confidence) / 2.0
    if n <= 1:
        return math.inf
    if n <= 30:
        return float(_st.t.ppf(p, n - 1))
    return float(_st.norm.ppf(p))


@dataclass(frozen=True)
class MeanCI:
    mean: float
    low: float
    high: float
    n: int
    std: float  # sample standard deviation (per unit weight when weighted)
    half_width: float

    @property
    def accuracy(self) -> float:
        return accuracy(self.low, self.high)

    def as_tuple(self) -> tuple[float, float]:
        return (self.low, self.high)


def mean_ci(
    x: Sequence[float], confidence: float = 0.95, weights: Sequence[float] | None = None
) -> MeanCI:
    """Confidence interval of the mean response time from N independent trials.

    [CC] Eq. 1 / Appendix A: mean ± q·σ/√N with σ the (N−1) sample std and q = t_{p;N−1}
    for N ≤ 30, z_p above. With `weights` w_i (runlengths: trial variance ∝ 1/r, [CC] §3.2),
    the weighted mean Σw·x/Σw with σ_w² = Σw(x−m)²/(N−1) and SE = σ_w/√Σw; equal weights
    reduce exactly to Eq. 1. N < 2 gives an infinite interval. Cached: the controller re-reads
    every load's unchanged trials after each trial.
    """
    _check_confidence(confidence)
    return _mean_ci(
        tuple(map(float, x)),
        float(confidence),
        None if weights is None else tuple(map(float, weights)),
    )


@lru_cache(maxsize=1 << 14)
def _mean_ci(x: tuple[float, ...], confidence: float, weights: tuple[float, ...] | None) -> MeanCI:
    a = np.asarray(x, dtype=float)
    n = int(a.size)
    if n == 0:
        return MeanCI(math.nan, -math.inf, math.inf, 0, math.nan, math.inf)
    if weights is None:
        m = float(a.mean())
        if n < 2:
            return MeanCI(m, -math.inf, math.inf, n, math.nan, math.inf)
        sd = float(a.std(ddof=1))
        se = sd / math.sqrt(n)
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != a.shape or np.any(w <= 0):
            raise ValueError("weights must be positive and match x")
        m = float(np.sum(w * a) / np.sum(w))
        if n < 2:
            return MeanCI(m, -math.inf, math.inf, n, math.nan, math.inf)
        sd = math.sqrt(float(np.sum(w * (a - m) ** 2)) / (n - 1))
        se = sd / math.sqrt(float(np.sum(w)))
    h = quantile(confidence, n) * se
    return MeanCI(m, m - h, m + h, n, sd, h)


def accuracy(low: float, high: float) -> float:
    """[CC] Eq. 2: accuracy = 1 − (high − low)/(high + low) (a fraction in [0, 1]; 0 if undefined or
    when low ≤ 0: Eq. 2 is meant for a positive interval, and below zero it would go negative)."""
    if not (math.isfinite(low) and math.isfinite(high)) or low <= 0 or high < low:
        return 0.0
    return 1.0 - (high - low) / (high + low)


def region(r_sat: float, s: float) -> tuple[float, float]:
    """[CC] §4 / Table 2: the peak-rate region [R_sat − s·R_sat, R_sat + s·R_sat]."""
    return (r_sat * (1.0 - s), r_sat * (1.0 + s))


def overlaps_region(low: float, high: float, r_sat: float, s: float) -> bool:
    """[CC] Algorithm 2 step 9: does the CI [low, high] overlap [R_sat ± s·R_sat]?"""
    lo, hi = region(r_sat, s)
    return low <= hi and high >= lo


def inside_region(low: float, high: float, r_sat: float, s: float) -> bool:
    """Inclusion (stricter than [CC]'s overlap): the whole CI lies inside [R_sat ± s·R_sat]."""
    lo, hi = region(r_sat, s)
    return lo <= low and high <= hi


def trials_within(cv: float, s: float, confidence: float) -> float:
    """Trials (a real number) whose mean lies within ±s (relative) of the true mean with probability
    `confidence` when the per-trial cv is KNOWN: n = (z_{(1+c)/2}·cv/s)² (Jain, The Art of Computer
    Systems Performance Analysis, §13.9 "Determining sample size", with z: σ known, no t)."""
    _check_confidence(confidence)
    if not (cv >= 0 and s > 0):
        raise ValueError(f"need cv ≥ 0 and s > 0, got cv {cv!r}, s {s!r}")
    return (float(_st.norm.ppf((1.0 + confidence) / 2.0)) * cv / s) ** 2


@dataclass(frozen=True)
class WelchResult:
    t: float
    df: float
    p_value: float
    diff: float  # mean(x) − mean(y)
    low: float  # CI of the difference at `confidence`
    high: float


def welch(x: Sequence[float], y: Sequence[float], confidence: float = 0.95) -> WelchResult:
    """Welch two-sample t test (unequal variances) and CI of mean(x) − mean(y).

    t = (x̄−ȳ)/√(s_x²/n_x + s_y²/n_y); Welch–Satterthwaite df =
    (s_x²/n_x + s_y²/n_y)² / ((s_x²/n_x)²/(n_x−1) + (s_y²/n_y)²/(n_y−1)).
    """
    _check_confidence(confidence)
    a, b = np.asarray(x, float), np.asarray(y, float)
    if a.size < 2 or b.size < 2:
        raise ValueError("welch needs at least 2 observations per sample")
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    diff = float(a.mean() - b.mean())
    se = math.sqrt(va + vb)
    if se == 0:
        return WelchResult(
            math.copysign(math.inf, diff) if diff else math.nan,
            math.nan,
            0.0 if diff else 1.0,
            diff,
            diff,
            diff,
        )
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    t = diff / se
    p = float(2.0 * _st.t.sf(abs(t), df))
    q = float(_st.t.ppf((1.0 + confidence) / 2.0, df))
    return WelchResult(float(t), float(df), p, diff, diff - q * se, diff + q * se)


def bootstrap_ci(
    x: Sequence[float],
    statistic: Callable[[np.ndarray], float] = np.mean,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
    method: str = "percentile",
) -> tuple[float, float]:
    """Bootstrap CI of `statistic` (Efron): resample with replacement `n_resamples` times.

    method="percentile": the (1−c)/2 and (1+c)/2 quantiles of the bootstrap distribution.
    method="bca": bias-corrected and accelerated (Efron 1987), jackknife acceleration.
    Deterministic for a given `seed`.
    """
    _check_confidence(confidence)
    a = np.asarray(x, float)
    if a.size < 2:
        raise ValueError("bootstrap_ci needs at least 2 observations")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, a.size, size=(n_resamples, a.size))
    boot = (
        np.apply_along_axis(statistic, 1, a[idx])
        if statistic is not np.mean
        else a[idx].mean(axis=1)
    )
    alpha = (1.0 - confidence) / 2.0
    if method == "percentile":
        lo, hi = np.quantile(boot, [alpha, 1.0 - alpha])
        return float(lo), float(hi)
    if method != "bca":
        raise ValueError(f"method must be 'percentile' or 'bca', got {method!r}")
    theta = float(statistic(a))
    prop = np.clip(np.mean(boot < theta), 1.0 / (n_resamples + 1), 1.0 - 1.0 / (n_resamples + 1))
    z0 = float(_st.norm.ppf(prop))  # bias correction
    jack = np.array([statistic(np.delete(a, i)) for i in range(a.size)])
    d = jack.mean() - jack
    den = 6.0 * (np.sum(d**2) ** 1.5)
    acc = float(np.sum(d**3) / den) if den > 0 else 0.0  # acceleration
    z = _st.norm.ppf([alpha, 1.0 - alpha])
    adj = _st.norm.cdf(z0 + (z0 + z) / (1.0 - acc * (z0 + z)))
    lo, hi = np.quantile(boot, adj)
    return float(lo), float(hi)


def zscores(x: Sequence[float]) -> np.ndarray:
    """[AP] z-score of each point: (x − mean)/std (sample std, ddof=1)."""
    a = np.asarray(x, float)
    if a.size < 2:
        return np.zeros(a.size)
    sd = a.std(ddof=1)
    return np.zeros(a.size) if sd == 0 else (a - a.mean()) / sd


def zscore_outliers(x: Sequence[float], threshold: float = 2.0) -> list[int]:
    """[AP] Indices whose |z-score| exceeds `threshold` (Auto-pilot's default 2)."""
    if threshold <= 0:
        raise ValueError(f"threshold must be > 0, got {threshold!r}")
    return [int(i) for i in np.flatnonzero(np.abs(zscores(x)) > threshold)]


@dataclass(frozen=True)
class SlopeResult:
    slope: float
    intercept: float
    stderr: float
    p_value: float  # two-sided test of slope == 0 (t with n−2 df)
    low: float  # CI of the slope at `confidence`
    high: float
    significant: bool  # p_value < 1 − confidence


def slope_test(
    y: Sequence[float], x: Sequence[float] | None = None, confidence: float = 0.95
) -> SlopeResult:
    """[AP] Least-squares line through the values in run order; a non-zero slope warns of a
    leak or gradual degradation. OLS: b = Sxy/Sxx, SE(b) = √(SSE/(n−2)/Sxx), t = b/SE(b).
    `x` defaults to 0, 1, …, n−1 (iteration / trial order).
    """
    _check_confidence(confidence)
    yy = np.asarray(y, float)
    xx = np.arange(yy.size, dtype=float) if x is None else np.asarray(x, float)
    n = yy.size
    if n < 3 or xx.shape != yy.shape:
        raise ValueError("slope_test needs >= 3 points and x, y of equal length")
    xm, ym = xx.mean(), yy.mean()
    sxx = float(np.sum((xx - xm) ** 2))
    if sxx == 0:
        raise ValueError("slope_test needs at least two distinct x values")
    b = float(np.sum((xx - xm) * (yy - ym)) / sxx)
    a0 = float(ym - b * xm)
    sse = float(np.sum((yy - a0 - b * xx) ** 2))
    se = math.sqrt(sse / (n - 2) / sxx)
    if se == 0:  # a perfect line: significant unless flat
        p = 0.0 if b != 0 else 1.0
    else:
        p = float(2.0 * _st.t.sf(abs(b / se), n - 2))
    q = float(_st.t.ppf((1.0 + confidence) / 2.0, n - 2))
    return SlopeResult(b, a0, se, p, b - q * se, b + q * se, p < 1.0 - confidence)
