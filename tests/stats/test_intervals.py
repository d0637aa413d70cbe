"""workbench.stats.intervals against scipy and hand-computed cases."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from workbench.stats import intervals as S


@pytest.mark.parametrize("n", [2, 3, 5, 10, 30])
@pytest.mark.parametrize("c", [0.90, 0.95, 0.99])
def test_mean_ci_student_t_up_to_30(n, c):
    x = np.random.default_rng(n).normal(40, 5, n)
    ci = S.mean_ci(x, c)
    lo, hi = st.t.interval(c, n - 1, loc=x.mean(), scale=st.sem(x))
    assert ci.low == pytest.approx(lo, rel=1e-12) and ci.high == pytest.approx(hi, rel=1e-12)
    assert ci.n == n and ci.mean == pytest.approx(x.mean())


@pytest.mark.parametrize("n", [31, 50, 200])
def test_mean_ci_normal_above_30(n):
    x = np.random.default_rng(n).normal(40, 5, n)
    ci = S.mean_ci(x, 0.95)
    lo, hi = st.norm.interval(0.95, loc=x.mean(), scale=st.sem(x))
    assert (ci.low, ci.high) == pytest.approx((lo, hi), rel=1e-12)


def test_mean_ci_hand_case_and_degenerate():
    ci = S.mean_ci([38.0, 42.0], 0.95)            # mean 40, s = 2.828, se = 2, t_{.975,1} = 12.706
    assert ci.mean == 40 and ci.half_width == pytest.approx(12.7062047 * 2, rel=1e-6)
    one = S.mean_ci([5.0])
    assert one.mean == 5 and math.isinf(one.low) and math.isinf(one.high)
    same = S.mean_ci([3.0, 3.0, 3.0])
    assert same.low == same.high == 3.0


def test_weighted_mean_ci_reduces_to_eq1_and_weights_runlength():
    x = [10.0, 12.0, 11.0, 13.0]
    a, b = S.mean_ci(x), S.mean_ci(x, weights=[60, 60, 60, 60])
    assert (a.low, a.high) == pytest.approx((b.low, b.high))
    w = S.mean_ci([10.0, 20.0], weights=[300, 100])
    assert w.mean == pytest.approx(12.5)          # longer trial counts more


def test_accuracy_eq2():
    assert S.accuracy(36, 44) == pytest.approx(0.9)
    assert S.accuracy(20, 27) == pytest.approx(1 - 7 / 47)     # 000 §3.1: 85.1 %
    assert S.accuracy(21, 24) == pytest.approx(0.9333, abs=1e-4)  # 93.3 %
    assert S.accuracy(-math.inf, math.inf) == 0.0


def test_region_overlap_and_inclusion():
    assert S.region(40, 0.1) == pytest.approx((36, 44))
    assert S.overlaps_region(43, 50, 40, 0.1) and not S.inside_region(43, 50, 40, 0.1)
    assert S.inside_region(37, 43, 40, 0.1) and S.overlaps_region(37, 43, 40, 0.1)
    assert not S.overlaps_region(44.1, 50, 40, 0.1) and not S.overlaps_region(20, 35.9, 40, 0.1)
    assert S.overlaps_region(30, 36, 40, 0.1)       # touching counts as overlap


def test_welch_against_scipy():
    rng = np.random.default_rng(7)
    x, y = rng.normal(40, 3, 8), rng.normal(37, 7, 13)
    w = S.welch(x, y, 0.95)
    ref = st.ttest_ind(x, y, equal_var=False)
    assert w.t == pytest.approx(ref.statistic, rel=1e-10)
    assert w.p_value == pytest.approx(ref.pvalue, rel=1e-8)
    assert w.df == pytest.approx(ref.df, rel=1e-10)
    ci = ref.confidence_interval(0.95)
    assert (w.low, w.high) == pytest.approx((ci.low, ci.high), rel=1e-10)
    with pytest.raises(ValueError):
        S.welch([1.0], [1.0, 2.0])


def test_bootstrap_ci_close_to_scipy():
    rng = np.random.default_rng(3)
    x = rng.lognormal(3, 0.4, 40)
    for method in ("percentile", "bca"):
        mine = S.bootstrap_ci(x, np.mean, 0.95, n_resamples=20000, seed=1, method=method)
        ref = st.bootstrap((x,), np.mean, confidence_level=0.95, n_resamples=20000,
                           method=method, rng=np.random.default_rng(2)).confidence_interval
        width = ref.high - ref.low
        assert mine[0] == pytest.approx(ref.low, abs=0.05 * width)
        assert mine[1] == pytest.approx(ref.high, abs=0.05 * width)
    assert S.bootstrap_ci(x, seed=5) == S.bootstrap_ci(x, seed=5)      # deterministic
    med = S.bootstrap_ci(x, np.median, n_resamples=2000)
    assert med[0] < np.median(x) < med[1]


def test_zscore_outliers_autopilot_default_2():
    x = [10, 10.2, 9.9, 10.1, 10.0, 9.8, 10.1, 14.0]
    z = S.zscores(x)
    assert z == pytest.approx(st.zscore(x, ddof=1))
    assert S.zscore_outliers(x) == [7]
    assert S.zscore_outliers(x, threshold=3) == []
    assert S.zscore_outliers([5, 5, 5]) == []
    with pytest.raises(ValueError):
        S.zscore_outliers(x, threshold=0)


def test_slope_test_against_linregress():
    rng = np.random.default_rng(11)
    xs = np.arange(20.0)
    leak = 100 - 0.8 * xs + rng.normal(0, 1, 20)
    r = S.slope_test(leak)
    ref = st.linregress(xs, leak)
    assert r.slope == pytest.approx(ref.slope) and r.intercept == pytest.approx(ref.intercept)
    assert r.stderr == pytest.approx(ref.stderr) and r.p_value == pytest.approx(ref.pvalue, rel=1e-8)
    assert r.significant and r.high < 0
    flat = S.slope_test(50 + np.sin(np.arange(20.0)))   # no trend
    assert not flat.significant and flat.low < 0 < flat.high
    with pytest.raises(ValueError):
        S.slope_test([1.0, 2.0])


def test_bad_confidence_rejected():
    with pytest.raises(ValueError, match="confidence"):
        S.mean_ci([1.0, 2.0], 1.5)


def test_trials_within_hand_computed():
    # Jain §13.9: n = (z·cv/s)²; cv 0.22, s 0.10, c 0.90: z = 1.6449, (1.6449·2.2)² = 13.095
    assert S.trials_within(0.22, 0.10, 0.90) == pytest.approx(13.095, abs=1e-3)


@pytest.mark.parametrize("cv,s,c", [(0.05, 0.10, 0.95), (0.22, 0.10, 0.96), (0.5, 0.25, 0.80)])
def test_trials_within_gives_the_probability_asked(cv, s, c):
    n = S.trials_within(cv, s, c)
    # the mean of n trials is N(μ, (cv·μ)²/n): P(|error| ≤ s·μ) = 2Φ(s√n/cv) − 1
    assert 2.0 * st.norm.cdf(s * math.sqrt(n) / cv) - 1.0 == pytest.approx(c, abs=1e-12)


def test_trials_within_rejects_bad_input():
    with pytest.raises(ValueError):
        S.trials_within(0.2, 0.0, 0.9)
    with pytest.raises(ValueError):
        S.trials_within(0.2, 0.1, 1.0)
