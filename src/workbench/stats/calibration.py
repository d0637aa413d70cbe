"""Weighted least-squares line and inverse regression (calibration): the x at which a fitted line
reaches a given y, with its Fieller confidence interval.

Sources: weighted least squares (e.g. Draper & Smith, Applied Regression Analysis, §9); Fieller
(1954) "Some problems in interval estimation", J. R. Stat. Soc. B 16:175–185, applied to the
ratio x0 = (y0 − b0)/b1 (the classical calibration interval, Draper & Smith §3.2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as _st

__all__ = ["LineFit", "wls_line", "fieller_inverse"]


@dataclass(frozen=True)
class LineFit:
    """y = b0 + b1·x fitted by weighted least squares; `cov` is the 2×2 covariance of (b0, b1)
    scaled by the residual variance `sigma2` (so relative weights suffice); df = n − 2."""

    b0: float
    b1: float
    cov: tuple[tuple[float, float], tuple[float, float]]
    sigma2: float
    df: int
    n: int

    def predict(self, x: float) -> float:
        return self.b0 + self.b1 * x

    def se_mean(self, x: float) -> float:
        """Standard error of the fitted mean b0 + b1·x."""
        (v00, v01), (_, v11) = self.cov
        return math.sqrt(max(v00 + 2.0 * x * v01 + x * x * v11, 0.0))


def wls_line(x: Sequence[float], y: Sequence[float], w: Sequence[float] | None = None) -> LineFit:
    """Weighted least squares for y = b0 + b1·x: β = (XᵀWX)⁻¹XᵀWy, σ̂² = Σw·e²/(n − 2),
    Cov(β) = σ̂²(XᵀWX)⁻¹. Needs ≥ 3 points and ≥ 2 distinct x."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    wa = np.ones_like(xa) if w is None else np.asarray(w, float)
    if xa.shape != ya.shape or wa.shape != xa.shape or xa.ndim != 1:
        raise ValueError("x, y and w must be 1-d and of equal length")
    if xa.size < 3 or np.unique(xa).size < 2:
        raise ValueError("wls_line needs >= 3 points and >= 2 distinct x")
    if np.any(wa <= 0) or not np.all(np.isfinite(wa)):
        raise ValueError("weights must be finite and > 0")
    xm = float(np.sum(wa * xa) / np.sum(wa))          # centre x: a well-conditioned XᵀWX
    X = np.column_stack([np.ones_like(xa), xa - xm])
    xtwx = X.T @ (wa[:, None] * X)
    inv = np.linalg.inv(xtwx)
    beta = inv @ (X.T @ (wa * ya))
    resid = ya - X @ beta
    df = int(xa.size - 2)
    sigma2 = float(np.sum(wa * resid ** 2) / df)
    c = sigma2 * inv
    # back to the uncentred parameters: b0 = β0 − β1·xm
    b1 = float(beta[1])
    b0 = float(beta[0] - b1 * xm)
    v11 = float(c[1, 1])
    v01 = float(c[0, 1] - xm * c[1, 1])
    v00 = float(c[0, 0] - 2.0 * xm * c[0, 1] + xm * xm * c[1, 1])
    return LineFit(b0, b1, ((v00, v01), (v01, v11)), sigma2, df, int(xa.size))


def fieller_inverse(fit: LineFit, y0: float, confidence: float = 0.95,
                    quantile: float | None = None) -> tuple[float, float, float]:
    """(x̂0, low, high): x̂0 = (y0 − b0)/b1 and its Fieller interval at `confidence`.

    The set {x : (b0 + b1·x − y0)² ≤ t²·(v00 + 2x·v01 + x²·v11)}, t = t_{(1+c)/2; df}
    (`quantile` overrides t), i.e. the roots of A·x² + 2B·x + C = 0 with A = b1² − t²v11,
    B = b1(b0 − y0) − t²v01, C = (b0 − y0)² − t²v00. Bounded only when A > 0 (the slope is
    significant at that level); otherwise (−inf, inf) is returned."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    t = float(_st.t.ppf((1.0 + confidence) / 2.0, fit.df)) if quantile is None else float(quantile)
    (v00, v01), (_, v11) = fit.cov
    d = fit.b0 - y0
    x0 = -d / fit.b1 if fit.b1 != 0 else math.nan
    A = fit.b1 ** 2 - t * t * v11
    B = fit.b1 * d - t * t * v01
    C = d * d - t * t * v00
    disc = B * B - A * C
    if A <= 0 or disc < 0:
        return x0, -math.inf, math.inf
    r = math.sqrt(disc)
    lo, hi = sorted(((-B - r) / A, (-B + r) / A))
    return x0, lo, hi
