"""Weighted least-squares line and inverse regression (calibration): the x at which a fitted line
reaches a given y, with its Fieller confidence interval.

Sources: weighted least squares (e.g. Draper & Smith, Applied Regression Analysis, §9); Fieller
(1954) "Some problems in interval estimation", J. R. Stat. Soc. B 16:175–185, applied to the
ratio x0 = (y0 − b0)/b1 (the classical calibration interval, Draper & Smith §3.2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as _st

__all__ = [
    "LineFit",
    "wls_line",
    "fieller_inverse",
    "WLSFit",
    "wls",
    "deleted_residuals",
    "robust_wls",
]


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
    xm = float(np.sum(wa * xa) / np.sum(wa))  # centre x: a well-conditioned XᵀWX
    X = np.column_stack([np.ones_like(xa), xa - xm])
    xtwx = X.T @ (wa[:, None] * X)
    inv = np.linalg.inv(xtwx)
    beta = inv @ (X.T @ (wa * ya))
    resid = ya - X @ beta
    df = int(xa.size - 2)
    sigma2 = float(np.sum(wa * resid**2) / df)
    c = sigma2 * inv
    # back to the uncentred parameters: b0 = β0 − β1·xm
    b1 = float(beta[1])
    b0 = float(beta[0] - b1 * xm)
    v11 = float(c[1, 1])
    v01 = float(c[0, 1] - xm * c[1, 1])
    v00 = float(c[0, 0] - 2.0 * xm * c[0, 1] + xm * xm * c[1, 1])
    return LineFit(b0, b1, ((v00, v01), (v01, v11)), sigma2, df, int(xa.size))


def fieller_inverse(
    fit: LineFit, y0: float, confidence: float = 0.95, quantile: float | None = None
) -> tuple[float, float, float]:
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
    A = fit.b1**2 - t * t * v11
    B = fit.b1 * d - t * t * v01
    C = d * d - t * t * v00
    disc = B * B - A * C
    if A <= 0 or disc < 0:
        return x0, -math.inf, math.inf
    r = math.sqrt(disc)
    lo, hi = sorted(((-B - r) / A, (-B + r) / A))
    return x0, lo, hi


# ----------------------------------------------------------------------------------------------
# Several regressors, outlier deletion (issue 16: the local fit of the "local" policy)


@dataclass(frozen=True)
class WLSFit:
    """y = X·β fitted by weighted least squares: β, Cov(β) = σ̂²(XᵀWX)⁻¹, σ̂² = Σw·e²/(n − p),
    df = n − p, and `kept`: which of the caller's points entered the fit (robust_wls)."""

    beta: tuple[float, ...]
    cov: tuple[tuple[float, ...], ...]
    sigma2: float
    df: int
    n: int
    kept: tuple[bool, ...] = ()

    def line(self, i0: int = 0, i1: int = 1) -> LineFit:
        """The (b0, b1) = (β[i0], β[i1]) block as a LineFit (for fieller_inverse): the mean of
        y at x with every other regressor at 0 is b0 + b1·x, its variance the block's."""
        c = self.cov
        return LineFit(
            self.beta[i0],
            self.beta[i1],
            ((c[i0][i0], c[i0][i1]), (c[i1][i0], c[i1][i1])),
            self.sigma2,
            self.df,
            self.n,
        )


def wls(X: ArrayLike, y: ArrayLike, w: ArrayLike | None = None) -> WLSFit:
    """Weighted least squares (Draper & Smith §9.2): β = (XᵀWX)⁻¹XᵀWy, σ̂² = Σw·e²/(n − p),
    Cov(β) = σ̂²(XᵀWX)⁻¹. X is n × p (include the column of ones); needs n > p and X of rank p."""
    Xa, ya = np.asarray(X, float), np.asarray(y, float)
    n, p = Xa.shape
    wa = np.ones(n) if w is None else np.asarray(w, float)
    if ya.shape != (n,) or wa.shape != (n,):
        raise ValueError("X (n × p), y and w must agree in n")
    if n <= p or np.linalg.matrix_rank(Xa) < p:
        raise ValueError("wls needs n > p and X of full column rank")
    if np.any(wa <= 0) or not np.all(np.isfinite(wa)):
        raise ValueError("weights must be finite and > 0")
    sw = np.sqrt(wa)
    q, r = np.linalg.qr(Xa * sw[:, None])  # QR of W^½X: well-conditioned β
    beta = np.linalg.solve(r, q.T @ (ya * sw))
    rinv = np.linalg.inv(r)
    resid = ya - Xa @ beta
    df = n - p
    sigma2 = float(np.sum(wa * resid**2) / df)
    cov = sigma2 * (rinv @ rinv.T)  # (XᵀWX)⁻¹ = R⁻¹R⁻ᵀ
    return WLSFit(
        tuple(float(b) for b in beta),
        tuple(tuple(float(v) for v in row) for row in cov),
        sigma2,
        int(df),
        int(n),
        (True,) * n,
    )


def deleted_residuals(X: ArrayLike, y: ArrayLike, w: ArrayLike | None = None) -> np.ndarray:
    """Externally studentized (deleted) residuals of a WLS fit (Cook & Weisberg 1982, Residuals and
    Influence in Regression §2.2.2): t_i = e_i·√w_i / (s_(i)·√(1 − h_ii)) with the leverage h_ii of
    W^½X and s_(i)² = ((n − p)·s² − w_i·e_i²/(1 − h_ii))/(n − p − 1); t_i ~ t_{n−p−1} under the
    model. Equals the t statistic of a dummy regressor that is 1 at point i only."""
    Xa, ya = np.asarray(X, float), np.asarray(y, float)
    n, p = Xa.shape
    wa = np.ones(n) if w is None else np.asarray(w, float)
    f = wls(Xa, ya, wa)
    sw = np.sqrt(wa)
    Z = Xa * sw[:, None]
    h = np.einsum("ij,ji->i", Z, np.linalg.pinv(Z.T @ Z) @ Z.T)
    e = (ya - Xa @ np.asarray(f.beta)) * sw
    one_minus_h = np.clip(1.0 - h, 1e-12, None)
    s2_del = ((n - p) * f.sigma2 - e**2 / one_minus_h) / (n - p - 1)
    return e / np.sqrt(np.clip(s2_del, 1e-300, None) * one_minus_h)


def robust_wls(
    X: ArrayLike,
    y: ArrayLike,
    w: ArrayLike | None = None,
    alpha: float = 0.05,
    max_drop: float = 0.25,
    min_df: int = 2,
) -> WLSFit:
    """WLS after deleting outliers one at a time by the Bonferroni outlier test (Weisberg, Applied
    Linear Regression, 4th ed., §9.4.3): drop the point with the largest |t_i| (deleted residual)
    while n·2·P(t_{n−p−1} > |t_i|) < alpha, at most max_drop of the points and keeping df ≥ min_df.
    The returned fit is the WLS of the kept points (`kept` marks them); its σ̂² and df are theirs.
    The test is exact for one outlier under normal errors and conservative otherwise."""
    Xa, ya = np.asarray(X, float), np.asarray(y, float)
    n, p = Xa.shape
    wa = np.ones(n) if w is None else np.asarray(w, float)
    keep = np.ones(n, bool)
    while True:
        idx = np.flatnonzero(keep)
        m = idx.size
        if (n - m + 1) > max_drop * n or m - 1 - p < min_df:
            break
        sub_keep = idx
        t = deleted_residuals(Xa[sub_keep], ya[sub_keep], wa[sub_keep])
        j = int(np.argmax(np.abs(t)))
        pval = min(1.0, m * 2.0 * float(_st.t.sf(abs(t[j]), m - p - 1)))
        if not pval < alpha:
            break
        trial = keep.copy()
        trial[sub_keep[j]] = False
        if np.linalg.matrix_rank(Xa[trial]) < p:
            break
        keep = trial
    f = wls(Xa[keep], ya[keep], wa[keep])
    return WLSFit(f.beta, f.cov, f.sigma2, f.df, f.n, tuple(bool(k) for k in keep))
