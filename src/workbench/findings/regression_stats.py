"""The statistics of the nightly regression verdict (findings.regression): λ*'s standard error from
its CI, the CI of the change against the baseline, the baseline ratings and the reference load of
Welch's test, its one-sided p, and the error bound of CI separation (the module docstring of
findings.regression gives the method)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from scipy import stats as _st

from workbench.stats.intervals import welch

BASELINE_RATINGS = 5  # the baseline is the mean of the last ≤ 5 history ratings
NEAR_LOAD_FRACTION = 0.10  # Welch uses trials within 10 % of the reference load


def finite(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _z(confidence: float) -> float:
    return float(_st.norm.ppf((1.0 + confidence) / 2.0))


def peak_se(result: Mapping[str, Any], confidence: float = 0.95) -> float:
    """Standard error of λ* from its CI: se = (hi − lo)/2 / z_{(1+c)/2} (normal CI; ∞ if
    unknown)."""
    ci = result.get("peak_rate_ci") or (None, None)
    lo, hi = (finite(v) for v in ci) if len(ci) == 2 else (None, None)
    if lo is None or hi is None or hi < lo:
        return math.inf
    return (hi - lo) / 2.0 / _z(confidence)


def diff_ci(
    current_peak: float,
    current_se: float,
    history_peaks: Sequence[float],
    history_se: Sequence[float],
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """(d, lo, hi) for d = current − mean(history), see the module docstring.

    Var(d) = se_c² + Σse_i²/k² + s_b²/k (k ≥ 2); q = t_{(1+c)/2; ν}, ν Welch–Satterthwaite
    (only the s_b²/k term is estimated, with k − 1 df) — Satterthwaite 1946 / Jain 1991 §13.4.
    """
    k = len(history_peaks)
    if k == 0 or len(history_se) != k:
        raise ValueError("diff_ci needs ≥ 1 history peak and one standard error per peak")
    base = sum(history_peaks) / k
    d = current_peak - base
    var_meas = current_se**2 + sum(s**2 for s in history_se) / k**2
    var_spread = 0.0
    if k >= 2:
        s_b2 = sum((p - base) ** 2 for p in history_peaks) / (k - 1)
        var_spread = s_b2 / k
    var = var_meas + var_spread
    if not math.isfinite(var):
        return d, -math.inf, math.inf
    if var_spread > 0:
        nu = var**2 / (var_spread**2 / (k - 1))
        q = float(_st.t.ppf((1.0 + confidence) / 2.0, nu))
    else:
        q = _z(confidence)
    h = q * math.sqrt(var)
    return d, d - h, d + h


def near_means_ms(trials: Sequence[Mapping[str, Any]], load_ops_s: float) -> list[float]:
    """mean_ms of the valid trials whose offered load is within 10 % of load_ops_s."""
    out = []
    for t in trials:
        load, mean = finite(t.get("load_ops_s")), finite(t.get("mean_ms"))
        if (
            t.get("valid", True)
            and load is not None
            and mean is not None
            and abs(load - load_ops_s) <= NEAR_LOAD_FRACTION * load_ops_s
        ):
            out.append(mean)
    return out


def baseline_ratings(history: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The last ≤ BASELINE_RATINGS converged history ratings with a finite λ*."""
    usable = [
        h
        for h in history
        if finite((h.get("result") or {}).get("peak_rate")) is not None
        and (h.get("result") or {}).get("converged") is not False
    ]
    return usable[-BASELINE_RATINGS:]


def reference_load(history: Sequence[Mapping[str, Any]]) -> float | None:
    """L_ref: the baseline's measured load nearest its mean λ* (None without a baseline). The
    nightly DAG seeds tonight's rating here, so Welch's test has trials on both sides."""
    base_items = baseline_ratings(history)
    if not base_items:
        return None
    base = sum(float(h["result"]["peak_rate"]) for h in base_items) / len(base_items)
    return ref_load([t for h in base_items for t in (h.get("trials") or [])], base)


def separation_error(current_level: float, baseline_levels: Sequence[float]) -> float:
    """Bound on the error of "tonight's λ* CI is disjoint from the baseline's ⇒ ordered λ*": two
    one-sided misses, (1 − c_t)/2 + (1 − c_b)/2, with the widest baseline level c_b."""
    return (1.0 - current_level) / 2.0 + max((1.0 - c) / 2.0 for c in baseline_levels)


def ref_load(trials: Sequence[Mapping[str, Any]], peak: float) -> float:
    """The baseline's measured (valid) load nearest its λ* (λ* itself when it has none)."""
    found = [finite(t.get("load_ops_s")) for t in trials if t.get("valid", True)]
    loads = [x for x in found if x is not None and x > 0]
    return min(loads, key=lambda x: abs(x - peak)) if loads else peak


def ci_bounds(result: Mapping[str, Any], key: str = "peak_rate_ci") -> tuple[float, float]:
    """(low, high) of a rating's λ* CI (or its `bracket`); an unknown bound is −∞ / +∞ (never
    separates)."""
    ci = result.get(key) or (None, None)
    lo, hi = (finite(v) for v in ci) if len(ci) == 2 else (None, None)
    return (-math.inf if lo is None else lo, math.inf if hi is None else hi)


def welch_one_sided(
    x: Sequence[float], y: Sequence[float], confidence: float
) -> tuple[float, float, float]:
    """(t, df, p) of Welch's test, one-sided: H1 mean of x (tonight) > mean of y (the baseline)."""
    w = welch(x, y, confidence)  # Welch 1947: t = (x̄−ȳ)/√(sx²/nx + sy²/ny)
    if not math.isfinite(w.df):  # both samples constant
        return w.t, w.df, (0.0 if w.diff > 0 else 1.0)
    return w.t, w.df, float(_st.t.sf(w.t, w.df))


def rating_level(rating: Mapping[str, Any], default: float) -> float:
    """The confidence of a rating's λ* CI (`ci_level`), else `default`."""
    return float(rating.get("ci_level") or default)
