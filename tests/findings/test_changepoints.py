"""findings.changepoints: the noise scale, the t filter (hand-computed and scipy), the change points
found and not found, the confirming re-run and the canary."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from workbench.findings import changepoints as cpm


def test_noise_sd_is_the_mad_of_differences_hand_computed():
    # y = 0, 1, 0, 2, 0: differences 1, −1, 2, −2; median 0; |d| = 1, 1, 2, 2 → MAD 1.5
    assert cpm.noise_sd([0.0, 1.0, 0.0, 2.0, 0.0]) == pytest.approx(1.5 / 0.6745 / math.sqrt(2.0))
    rng = np.random.default_rng(3)
    y = rng.normal(0, 0.02, 4000)
    y[2000:] += 0.10                         # a step moves one difference only
    assert cpm.noise_sd(y) == pytest.approx(0.02, rel=0.06)


def test_t_filter_against_scipy_with_the_pooled_sd():
    a, b = np.array([0.0, 0.01, -0.01, 0.02, 0.0]), np.array([-0.05, -0.04, -0.06])
    diff, se, p = cpm._t_test(a, b, 0.015)
    assert diff == pytest.approx(b.mean() - a.mean()) and se == pytest.approx(0.015 * math.sqrt(1 / 5 + 1 / 3))
    assert p == pytest.approx(2 * stats.t.sf(abs(diff) / se, 6))


def _series(rng, n=50, at=None, step=0.0, sd=0.019):
    y = rng.normal(0, sd, n)
    if at is not None:
        y[at:] += math.log1p(step)
    return np.exp(y) * 4000.0


def test_a_step_is_found_at_its_night_with_its_size():
    cps = cpm.change_points(_series(np.random.default_rng(1), at=30, step=-0.10))
    c = cps[-1]
    assert c.index == 30 and c.drop and c.rel_ci[0] < -0.10 < c.rel_ci[1] and c.p < cpm.P_MAX
    assert c.rel_change == pytest.approx(c.after / c.before - 1.0)


def test_no_change_point_in_flat_noise_and_none_below_the_floor():
    rng = np.random.default_rng(2)
    flat = [cpm.change_points(_series(rng)) for _ in range(50)]
    assert sum(bool(c) for c in flat) <= 2
    # a clean 2.5 % step is real and above MIN_CHANGE, but below the ratings' own standard error (3 %)
    x = _series(np.random.default_rng(4), at=25, step=-0.025, sd=0.002)
    assert cpm.change_points(x, se_log=[0.001] * 50) and not cpm.change_points(x, se_log=[0.03] * 50)


def test_new_level_only_when_recent_and_confirmed_only_by_an_agreeing_rerun():
    x = _series(np.random.default_rng(5), n=40, at=37, step=-0.10)
    cp = cpm.new_level(x)
    assert cp is not None and cp.index == 37
    assert cpm.new_level(x, window=2) is None or cpm.new_level(x, window=2).index >= 38
    assert cpm.confirmed(x, cp.after, cp)                  # the re-run reads the new level
    assert not cpm.confirmed(x, cp.before, cp)             # … or the old one: not confirmed


def test_canary_moved_with_the_baseline_means_the_lab_changed():
    rng = np.random.default_rng(6)
    base = _series(rng, n=40, at=37, step=-0.08)
    cp = cpm.new_level(base)
    assert cp is not None
    assert cpm.canary_moved(_series(rng, n=40, at=37, step=-0.08), cp)
    assert not cpm.canary_moved(_series(rng, n=40), cp)
    assert not cpm.canary_moved(_series(rng, n=40, at=37, step=+0.08), cp)     # the other way
    assert cpm.canary_verdict(_series(rng, n=40), cp) == "held"


def test_sprt_bounds_and_the_clipped_likelihood_ratio_hand_computed():
    lo, hi = cpm.sprt_bounds(0.01, 0.01)
    assert (lo, hi) == pytest.approx((math.log(0.01 / 0.99), math.log(0.99 / 0.01)))      # ∓4.595
    # before mean 0 (n 4), after −0.1, −0.1 (m 2), shift −0.1, sd 0.05: each residual from the midpoint
    # −0.05 (clip ±4·0.05²/0.1 = ±0.1 not reached): −0.1·(−0.05)/(0.0025·(1/2 + 1/4)) = 0.005/0.001875
    assert cpm.canary_llr([0.0] * 4, [-0.1, -0.1], -0.1, 0.05) == pytest.approx(0.005 / 0.001875)
    # an outlying −0.6 counts as its clip −0.1: mean residual −0.075 → 0.0075/0.001875 = 4.0
    assert cpm.canary_llr([0.0] * 4, [-0.1, -0.6], -0.1, 0.05) == pytest.approx(4.0)


def test_one_wild_canary_rerun_is_unsteady_not_a_verdict():
    """The canary moved with the lab tonight (−8 %) but its re-run came back +40 %: neither moved nor
    held can be claimed (the case the replay once misreported as a regression)."""
    rng = np.random.default_rng(8)
    base = _series(rng, n=40, at=38, step=-0.08)
    cp = cpm.new_level(base)
    assert cp is not None and cp.drop
    canary = [*_series(rng, n=40, at=cp.index, step=-0.08)[:-1], 4000.0 * 0.92, 4000.0 * 1.40]
    assert cpm.canary_verdict(canary, cp) == "unsteady"
    assert cpm.canary_verdict([*canary[:-1], 4000.0 * 0.93], cp) == "moved"
