"""Quadratic RSM fit, prediction, MAPE, leave-one-out CV, R² (workbench.stats.rsm)."""
import numpy as np
import pytest

from workbench.stats.rsm import (
    fit_quadratic,
    hat_diagonal,
    loo_residuals,
    loo_residuals_bruteforce,
    mape,
    model_matrix,
    n_terms,
    r2,
)


def _true(X):
    x1, x2 = X[:, 0], X[:, 1]
    return 300 + 80 * x1 - 40 * x2 + 25 * x1 * x2 - 30 * x1 ** 2 + 12 * x2 ** 2


def test_model_matrix_columns():
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    M, names = model_matrix(X)
    assert names == ["1", "x0", "x1", "x0*x1", "x0^2", "x1^2"]
    np.testing.assert_allclose(M[1], [1, 3, 4, 12, 9, 16])
    assert M.shape[1] == n_terms(2)
    M1, n1 = model_matrix(X, degree=1)
    assert n1 == ["1", "x0", "x1"]
    Md, nd = model_matrix(X, dummies=np.array([[0.0], [1.0]]))
    assert nd == ["1", "x0", "x1", "d0", "x0*x1", "x0^2", "x1^2", "x0*d0", "x1*d0"] and Md.shape[1] == n_terms(2, 1)


def test_recovers_known_quadratic_exactly():
    g = np.array([[a, b] for a in np.linspace(-1, 1, 4) for b in np.linspace(-1, 1, 8)])
    y = _true(g)
    m = fit_quadratic(g, y)
    np.testing.assert_allclose(m.coef, [300, 80, -40, 25, -30, 12], atol=1e-9)
    assert m.r2 == pytest.approx(1.0)
    Xnew = np.array([[0.3, -0.7], [0.9, 0.9]])
    np.testing.assert_allclose(m.predict(Xnew), _true(Xnew), rtol=1e-12)
    assert m.loo_mape() == pytest.approx(0.0, abs=1e-9)
    # saturated design (6 points, 6 params) also interpolates exactly but LOO is undefined
    idx = [0, 3, 28, 31, 12, 18]
    ms = fit_quadratic(g[idx], y[idx])
    np.testing.assert_allclose(ms.predict(g), y, rtol=1e-9)
    assert np.isnan(ms.loo_mape())


def test_with_dummies_recovers_categorical_shift():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(40, 2))
    d = (np.arange(40) % 2).astype(float)[:, None]
    y = _true(X) * 1.0 + 50 * d[:, 0] + 10 * X[:, 0] * d[:, 0]
    m = fit_quadratic(X, y, dummies=d, names=["disks", "threads"], dummy_names=["fs=xfs"])
    t = m.to_dict()["terms"]
    assert t["fs=xfs"] == pytest.approx(50) and t["disks*fs=xfs"] == pytest.approx(10)
    with pytest.raises(ValueError):
        m.predict(X)


def test_loo_shortcut_equals_bruteforce():
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, size=(15, 3))
    y = 5 + X @ [1.0, -2.0, 0.5] + 0.8 * X[:, 0] * X[:, 1] + rng.normal(0, 0.3, 15)
    M, _ = model_matrix(X)
    np.testing.assert_allclose(loo_residuals(M, y), loo_residuals_bruteforce(M, y), rtol=1e-8, atol=1e-10)
    h = hat_diagonal(M)
    H = M @ np.linalg.pinv(M.T @ M) @ M.T
    np.testing.assert_allclose(h, np.diag(H), atol=1e-10)
    assert h.sum() == pytest.approx(M.shape[1])  # trace(H) = p
    m = fit_quadratic(X, y)
    assert m.press == pytest.approx(float(np.sum(loo_residuals_bruteforce(M, y) ** 2)))
    assert m.q2 < m.r2 <= 1


def test_mape_and_r2_by_hand():
    # |100-110|/100 = 10%, |200-190|/200 = 5%, |50-50|/50 = 0% -> mean 5%
    assert mape([100, 200, 50], [110, 190, 50]) == pytest.approx(5.0)
    assert mape([-100], [-90]) == pytest.approx(10.0)
    with pytest.raises(ValueError):
        mape([0, 1], [1, 1])
    # y = [1,2,3], yhat = [1,2,4]: SS_res = 1, SS_tot = 2 -> R² = 0.5
    assert r2([1, 2, 3], [1, 2, 4]) == pytest.approx(0.5)


def test_squares_mask_drops_aliased_curvature_of_two_level_factors():
    # 2 levels of x0 (x0² ≡ 1, aliased with the intercept), 3 levels of x1
    X = np.array([[a, b] for a in (-1.0, 1.0) for b in (-1.0, 0.0, 1.0)])
    y = 5 + 2 * X[:, 0] - 3 * X[:, 1] + 4 * X[:, 1] ** 2 + 0.5 * X[:, 0] * X[:, 1]
    full = fit_quadratic(X, y)
    assert full.n_params == 6 and full.rank == 5                  # rank-deficient: x0² = 1
    m = fit_quadratic(X, y, squares=[False, True], names=["x0", "x1"])
    assert m.names == ["1", "x0", "x1", "x0*x1", "x1^2"] and m.rank == 5
    assert np.allclose(m.coef, [5, 2, -3, 0.5, 4])
    assert np.allclose(m.predict(np.array([[0.5, 0.5]])), 5 + 1 - 1.5 + 1 + 0.125)
