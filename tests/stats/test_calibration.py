"""workbench.stats.calibration: the WLS line against scipy, the Fieller interval by hand and by
simulation."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from workbench.stats.calibration import LineFit, fieller_inverse, wls_line


def test_unweighted_line_matches_scipy_linregress():
    rng = np.random.default_rng(3)
    x = np.linspace(100, 200, 12)
    y = 1.5 + 0.02 * x + rng.normal(0, 0.1, x.size)
    fit, ref = wls_line(x, y), st.linregress(x, y)
    assert fit.b1 == pytest.approx(ref.slope, rel=1e-10)
    assert fit.b0 == pytest.approx(ref.intercept, rel=1e-10)
    assert math.sqrt(fit.cov[1][1]) == pytest.approx(ref.stderr, rel=1e-8)
    assert math.sqrt(fit.cov[0][0]) == pytest.approx(ref.intercept_stderr, rel=1e-8)
    assert fit.df == 10


def test_weights_equal_repeated_points():
    # integer weights are the same as repeating the points (same β; the scale differs by df only)
    x, y, w = [1.0, 2.0, 3.0, 4.0], [1.1, 1.9, 3.2, 3.9], [1.0, 2.0, 3.0, 1.0]
    fit = wls_line(x, y, w)
    rep = st.linregress(np.repeat(x, [1, 2, 3, 1]), np.repeat(y, [1, 2, 3, 1]))
    assert (fit.b0, fit.b1) == pytest.approx((rep.intercept, rep.slope), rel=1e-10)


def test_fieller_by_hand():
    # b0 = 1, b1 = 2, Var(b0) = 0.04, Cov = 0, Var(b1) = 0.01, y0 = 3, t = 2:
    # 3.96·x² − 8·x + 3.84 ≤ 0 → x = (8 ± √(64 − 60.8256))/7.92 = (8 ± 1.781685)/7.92
    fit = LineFit(1.0, 2.0, ((0.04, 0.0), (0.0, 0.01)), 1.0, 10, 12)
    x0, lo, hi = fieller_inverse(fit, 3.0, quantile=2.0)
    assert x0 == 1.0
    assert lo == pytest.approx((8 - math.sqrt(3.1744)) / 7.92, rel=1e-12)      # 0.780091
    assert hi == pytest.approx((8 + math.sqrt(3.1744)) / 7.92, rel=1e-12)      # 1.235061
    # the ends are where the band b0 + b1·x ± t·se meets y0
    for x in (lo, hi):
        assert abs(fit.predict(x) - 3.0) == pytest.approx(2.0 * fit.se_mean(x), rel=1e-9)


def test_fieller_unbounded_when_the_slope_is_not_significant():
    fit = LineFit(1.0, 0.1, ((0.04, 0.0), (0.0, 0.01)), 1.0, 10, 12)
    assert fieller_inverse(fit, 3.0, quantile=2.0)[1:] == (-math.inf, math.inf)


def test_fieller_covers_at_its_level():
    rng = np.random.default_rng(11)
    x = np.repeat([0.9, 0.95, 1.0, 1.05, 1.1], 3)
    w = np.repeat([1.0, 2.0, 4.0, 2.0, 1.0], 3)
    true_b0, true_b1, y0 = -4.0, 8.0, 4.0           # true x0 = 1.0
    hits, n = 0, 2000
    for _ in range(n):
        y = true_b0 + true_b1 * x + rng.normal(0, 0.3, x.size) / np.sqrt(w)
        _, lo, hi = fieller_inverse(wls_line(x, y, w), y0, 0.90)
        hits += lo <= 1.0 <= hi
    se = math.sqrt(0.9 * 0.1 / n)
    assert abs(hits / n - 0.90) < 3 * se
