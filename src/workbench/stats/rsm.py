"""Quadratic response-surface models (seed 000 §5.5 / 002 §4): fit, predict, MAPE, leave-one-out CV,
R².

Model (seed 000 §5.5), on coded factors x_1..x_k and optional 0/1 dummy columns d_1..d_q of
categorical factors:

    y = b0 + sum_i b_i x_i + sum_l g_l d_l + sum_{i<j} b_ij x_i x_j + sum_i b_ii x_i^2
           + sum_{i,l} g_il x_i d_l

Least squares via ``numpy.linalg.lstsq`` (pure numpy; statsmodels is not a dependency).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "model_matrix",
    "QuadraticModel",
    "fit_quadratic",
    "mape",
    "r2",
    "hat_diagonal",
    "loo_residuals",
    "loo_residuals_bruteforce",
    "n_terms",
]


def n_terms(k: int, q: int = 0, degree: int = 2) -> int:
    """Number of model columns for k numeric factors and q dummy columns."""
    if degree == 1:
        return 1 + k + q
    return 1 + k + q + k * (k - 1) // 2 + k + k * q


def model_matrix(
    X: np.ndarray,
    degree: int = 2,
    dummies: np.ndarray | None = None,
    names: Sequence[str] | None = None,
    dummy_names: Sequence[str] | None = None,
    squares: Sequence[bool] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Columns [1, x_i, d_l, x_i x_j (i<j), x_i^2, x_i d_l] (degree 2) or [1, x_i, d_l] (degree 1).

    squares: which x_i^2 columns to include (default all). A factor measured at only 2 levels has
    x_i^2 ≡ 1 in coded units — aliased with the intercept — so its square must be left out."""
    X = np.atleast_2d(np.asarray(X, dtype=float))
    if X.ndim != 2:
        raise ValueError("X must be 2-D (n_samples, n_factors)")
    n, k = X.shape
    D = (
        np.zeros((n, 0))
        if dummies is None
        else np.atleast_2d(np.asarray(dummies, dtype=float)).reshape(n, -1)
    )
    q = D.shape[1]
    xn = list(names) if names is not None else [f"x{i}" for i in range(k)]
    dn = list(dummy_names) if dummy_names is not None else [f"d{j}" for j in range(q)]
    cols = [np.ones(n)]
    labels = ["1"]
    for i in range(k):
        cols.append(X[:, i])
        labels.append(xn[i])
    for d in range(q):
        cols.append(D[:, d])
        labels.append(dn[d])
    if degree >= 2:
        for i, j in combinations(range(k), 2):
            cols.append(X[:, i] * X[:, j])
            labels.append(f"{xn[i]}*{xn[j]}")
        for i in range(k):
            if squares is None or squares[i]:
                cols.append(X[:, i] ** 2)
                labels.append(f"{xn[i]}^2")
        for i in range(k):
            for d in range(q):
                cols.append(X[:, i] * D[:, d])
                labels.append(f"{xn[i]}*{dn[d]}")
    elif degree != 1:
        raise ValueError(f"degree must be 1 or 2, got {degree!r}")
    return np.column_stack(cols), labels


def mape(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Mean absolute percentage error, in percent: 100/n * sum |y - yhat| / |y| (seed 000 Table
    4)."""
    y = np.asarray(y_true, dtype=float)
    p = np.asarray(y_pred, dtype=float)
    if y.shape != p.shape or y.size == 0:
        raise ValueError("y_true and y_pred must be non-empty and of equal shape")
    if np.any(y == 0):
        raise ValueError("MAPE is undefined when a true value is 0")
    return float(100.0 * np.mean(np.abs(y - p) / np.abs(y)))


def r2(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Coefficient of determination: 1 - SS_res / SS_tot."""
    y = np.asarray(y_true, dtype=float)
    p = np.asarray(y_pred, dtype=float)
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    ss_res = float(np.sum((y - p) ** 2))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else -np.inf)


def hat_diagonal(M: np.ndarray) -> np.ndarray:
    """h_ii of H = M (M'M)^+ M' computed stably from a thin QR / SVD: h_ii = ||U_i||^2."""
    U, s, _ = np.linalg.svd(np.asarray(M, dtype=float), full_matrices=False)
    tol = s.max() * max(M.shape) * np.finfo(float).eps if s.size else 0.0
    U = U[:, s > tol]
    return np.sum(U * U, axis=1)


def loo_residuals(M: np.ndarray, y: ArrayLike) -> np.ndarray:
    """Leave-one-out (PRESS) residuals by the hat-matrix shortcut: e_(i) = e_i / (1 - h_ii).

    NaN where h_ii = 1 (the point is needed to determine the fit; LOO prediction undefined).
    """
    M = np.asarray(M, dtype=float)
    y = np.asarray(y, dtype=float)
    beta, *_ = np.linalg.lstsq(M, y, rcond=None)
    e = y - M @ beta
    h = hat_diagonal(M)
    out = np.full_like(e, np.nan)
    ok = h < 1.0 - 1e-9
    out[ok] = e[ok] / (1.0 - h[ok])
    return out


def loo_residuals_bruteforce(M: np.ndarray, y: ArrayLike) -> np.ndarray:
    """y_i - yhat_(i) from n refits without point i (reference for ``loo_residuals``)."""
    M = np.asarray(M, dtype=float)
    y = np.asarray(y, dtype=float)
    out = np.empty(len(y))
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        b, *_ = np.linalg.lstsq(M[keep], y[keep], rcond=None)
        out[i] = y[i] - M[i] @ b
    return out


@dataclass
class QuadraticModel:
    """A fitted RSM model. Build with ``fit_quadratic``."""

    coef: np.ndarray
    names: list[str]
    degree: int
    n_factors: int
    n_dummies: int
    X: np.ndarray
    y: np.ndarray
    dummies: np.ndarray | None
    rank: int
    fitted: np.ndarray = field(repr=False)
    factor_names: list[str] | None = None
    dummy_names: list[str] | None = None
    squares: list[bool] | None = None

    def matrix(self, X: np.ndarray, dummies: np.ndarray | None = None) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=float))
        if X.shape[1] != self.n_factors:
            raise ValueError(f"expected {self.n_factors} factor columns, got {X.shape[1]}")
        if self.n_dummies and dummies is None:
            raise ValueError(f"model has {self.n_dummies} dummy columns: pass dummies=")
        return model_matrix(
            X, self.degree, dummies if self.n_dummies else None, squares=self.squares
        )[0]

    def predict(self, X: np.ndarray, dummies: np.ndarray | None = None) -> np.ndarray:
        """yhat = M(X) beta."""
        return self.matrix(X, dummies) @ self.coef

    @property
    def residuals(self) -> np.ndarray:
        return self.y - self.fitted

    @property
    def n_params(self) -> int:
        return len(self.coef)

    @property
    def r2(self) -> float:
        return r2(self.y, self.fitted)

    @property
    def adj_r2(self) -> float:
        """1 - (1 - R²)(n - 1)/(n - p); NaN when n <= p."""
        n, p = len(self.y), self.rank
        return 1.0 - (1.0 - self.r2) * (n - 1) / (n - p) if n > p else float("nan")

    def hat(self) -> np.ndarray:
        return hat_diagonal(
            model_matrix(self.X, self.degree, self.dummies, squares=self.squares)[0]
        )

    def loo_residuals(self) -> np.ndarray:
        """e_i / (1 - h_ii) (PRESS residuals)."""
        return loo_residuals(
            model_matrix(self.X, self.degree, self.dummies, squares=self.squares)[0], self.y
        )

    @property
    def press(self) -> float:
        """PRESS = sum_i (e_i / (1 - h_ii))^2."""
        e = self.loo_residuals()
        return float(np.sum(e**2)) if np.all(np.isfinite(e)) else float("nan")

    @property
    def q2(self) -> float:
        """Predictive R² = 1 - PRESS / SS_tot."""
        ss_tot = float(np.sum((self.y - self.y.mean()) ** 2))
        return 1.0 - self.press / ss_tot if ss_tot > 0 else float("nan")

    def loo_mape(self) -> float:
        """MAPE (%) of the leave-one-out predictions y_i - e_(i); NaN if any LOO prediction is
        undefined."""
        e = self.loo_residuals()
        if not np.all(np.isfinite(e)):
            return float("nan")
        return mape(self.y, self.y - e)

    def to_dict(self) -> dict:
        return {
            "terms": dict(zip(self.names, map(float, self.coef))),
            "degree": self.degree,
            "r2": self.r2,
            "rank": self.rank,
            "n": int(len(self.y)),
        }


def fit_quadratic(
    X: np.ndarray,
    y: ArrayLike,
    degree: int = 2,
    dummies: np.ndarray | None = None,
    names: Sequence[str] | None = None,
    dummy_names: Sequence[str] | None = None,
    squares: Sequence[bool] | None = None,
) -> QuadraticModel:
    """Least-squares fit beta = argmin ||y - M beta||² (minimum-norm when M is rank deficient)."""
    X = np.atleast_2d(np.asarray(X, dtype=float))
    y = np.asarray(y, dtype=float)
    if len(y) != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {len(y)} values")
    D = (
        None
        if dummies is None
        else np.atleast_2d(np.asarray(dummies, dtype=float)).reshape(len(y), -1)
    )
    M, labels = model_matrix(X, degree, D, names, dummy_names, squares)
    beta, _, rank, _ = np.linalg.lstsq(M, y, rcond=None)
    return QuadraticModel(
        coef=beta,
        names=labels,
        degree=degree,
        n_factors=X.shape[1],
        n_dummies=0 if D is None else D.shape[1],
        X=X,
        y=y,
        dummies=D,
        rank=int(rank),
        fitted=M @ beta,
        factor_names=list(names) if names else None,
        dummy_names=list(dummy_names) if dummy_names else None,
        squares=list(squares) if squares is not None else None,
    )
