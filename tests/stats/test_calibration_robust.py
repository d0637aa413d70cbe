"""workbench.stats.calibration (issue 16): WLS with several regressors against numpy/scipy, the
deleted residuals against the mean-shift dummy, the Bonferroni outlier deletion."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from workbench.stats.calibration import deleted_residuals, fieller_inverse, robust_wls, wls, wls_line


def _data(seed=5, n=20):
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 1.0, n)
    first = (np.arange(n) % 4 == 0).astype(float)
    w = rng.uniform(0.5, 2.0, n)
    y = 1.0 + 2.0 * x + 0.3 * first + rng.normal(0, 0.1, n) / np.sqrt(w)
    return np.column_stack([np.ones(n), x, first]), y, w


def test_wls_matches_lstsq_on_the_scaled_problem():
    X, y, w = _data()
    f = wls(X, y, w)
    sw = np.sqrt(w)
    beta, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    assert f.beta == pytest.approx(tuple(beta), rel=1e-10)
    resid = y - X @ beta
    s2 = float(np.sum(w * resid ** 2) / (len(y) - 3))
    cov = s2 * np.linalg.inv(X.T @ (w[:, None] * X))          # σ̂²(XᵀWX)⁻¹
    assert np.asarray(f.cov) == pytest.approx(cov, rel=1e-9)
    assert f.df == len(y) - 3 and f.sigma2 == pytest.approx(s2, rel=1e-12)


def test_wls_line_block_agrees_with_wls_line():
    X, y, w = _data()
    two = wls(X[:, :2], y, w)
    ref = wls_line(X[:, 1], y, w)
    line = two.line()
    assert (line.b0, line.b1) == pytest.approx((ref.b0, ref.b1), rel=1e-10)
    assert np.asarray(line.cov) == pytest.approx(np.asarray(ref.cov), rel=1e-8)
    assert fieller_inverse(line, 2.0, 0.9) == pytest.approx(fieller_inverse(ref, 2.0, 0.9), rel=1e-9)


def test_unweighted_two_column_wls_matches_linregress():
    rng = np.random.default_rng(1)
    x = np.linspace(10, 20, 15)
    y = 3.0 - 0.5 * x + rng.normal(0, 0.2, x.size)
    f, ref = wls(np.column_stack([np.ones_like(x), x]), y), st.linregress(x, y)
    assert f.beta == pytest.approx((ref.intercept, ref.slope), rel=1e-10)
    assert math.sqrt(f.cov[1][1]) == pytest.approx(ref.stderr, rel=1e-8)


def test_deleted_residual_is_the_t_of_a_mean_shift_dummy():
    X, y, w = _data(seed=9)
    t = deleted_residuals(X, y, w)
    for i in (0, 7, 19):
        d = np.zeros(len(y))
        d[i] = 1.0
        f = wls(np.column_stack([X, d]), y, w)
        assert t[i] == pytest.approx(f.beta[-1] / math.sqrt(f.cov[-1][-1]), rel=1e-8)


def test_robust_wls_deletes_a_planted_outlier_and_nothing_else():
    X, y, w = _data(seed=2, n=24)
    clean = robust_wls(X, y, w)
    assert all(clean.kept)                                   # no outlier: nothing deleted
    y2 = y.copy()
    y2[11] += 1.5                                            # 15 σ: an outlier trial
    f = robust_wls(X, y2, w)
    assert [i for i, k in enumerate(f.kept) if not k] == [11]
    ref = wls(np.delete(X, 11, axis=0), np.delete(y2, 11), np.delete(w, 11))
    assert f.beta == pytest.approx(ref.beta, rel=1e-12) and f.df == ref.df


def test_robust_wls_keeps_at_least_its_share_and_df():
    X, y, w = _data(seed=3, n=8)
    y2 = y.copy()
    y2[[1, 2, 5]] += 3.0
    f = robust_wls(X, y2, w, max_drop=0.25)
    assert sum(not k for k in f.kept) <= 2 and f.df >= 2
