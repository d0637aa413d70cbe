"""stats/sequential.py: the α-spending bounds and the betting e-process (hand-computed cases and
coverage under optional stopping)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from workbench.stats.sequential import (count_deficit, look_sizes, lower_log_mean, mean_exceeds, running, spend,
                                        upper_mean)


def test_spend_sums_to_alpha():
    assert spend(0.05, 1) == pytest.approx(0.025) and spend(0.05, 4) == pytest.approx(0.0025)
    assert sum(spend(0.05, k) for k in range(1, 100000)) == pytest.approx(0.05, rel=1e-4)


def test_look_sizes():
    assert look_sizes(50) == [2, 3, 4, 6, 8, 11, 16, 23, 32, 45]
    assert look_sizes(10, 1) == [1, 2, 3, 4, 6, 8]
    assert look_sizes(1) == []


def test_upper_mean_hand_computed():
    # x = 10, 12, 14: mean 12, s = 2, se = 2/√3; t_{0.99; 2} = 6.964557 → t bound 20.0420
    t_bound = 12.0 + 6.964557 * 2.0 / math.sqrt(3.0)
    assert t_bound == pytest.approx(20.04198, rel=1e-5)
    y = np.log([10.0, 12.0, 14.0])
    s2 = y.var(ddof=1)                # Cox: exp(ȳ + s²/2 + t·√(s²/3 + s⁴/4)) = 23.906 here (2 df)
    cox = math.exp(y.mean() + s2 / 2 + 6.964557 * math.sqrt(s2 / 3 + s2 ** 2 / 4))
    assert upper_mean([10.0, 12.0, 14.0], 0.01) == pytest.approx(max(t_bound, cox), rel=1e-6)
    assert cox == pytest.approx(23.9061, rel=1e-4)
    # a non-positive value: the t bound alone
    x = [0.0, 10.5, 9.8, 10.2]
    assert upper_mean(x, 0.05) == pytest.approx(np.mean(x) + st.t.ppf(0.95, 3) * np.std(x, ddof=1) / 2.0)
    assert upper_mean([5.0], 0.01) == math.inf


def test_running_bound_hand_computed():
    # looks at n = 2 (α/2) and n = 3 (α/6): the smaller of the two upper bounds
    x, a = [10.0, 11.0, 10.5], 0.03
    b2 = upper_mean(x[:2], a / 2)
    b3 = upper_mean(x, a / 6)
    assert running(upper_mean, x, a) == (pytest.approx(min(b2, b3)), 3 if b3 < b2 else 2)


def test_lower_log_mean_bounds_the_geometric_mean():
    lb = lower_log_mean([100.0, 400.0], 0.05)
    # log x: 4.6052, 5.9915; mean 5.2983, s = 0.9803, se = 0.6931; t_{0.95;1} = 6.3138
    assert lb == pytest.approx(math.exp(5.298317 - 6.313752 * 0.693147), rel=1e-5)
    assert lower_log_mean([0.0, 3.0], 0.05) == 0.0


def test_count_deficit():
    assert count_deficit(1000.0, [990.0], [100.0]) == pytest.approx(-1000.0 / math.sqrt(100000.0))
    assert count_deficit(0.0, [0.0], [10.0]) == 0.0


@pytest.mark.parametrize("dist", ["normal", "lognormal"])
def test_coverage_under_optional_stopping(dist):
    """An adversary who looks after every trial and stops as soon as the upper bound falls below the
    true mean (the error it wants) succeeds at most α of the time: the running bound is a confidence
    sequence. A fixed-n t bound looked at after every trial fails far more often."""
    rng = np.random.default_rng(7)
    alpha, n_max, reps, mu = 0.05, 30, 1000, 10.0
    fooled = naive = 0
    for _ in range(reps):
        if dist == "normal":
            x = rng.normal(mu, 2.0, n_max)
        else:       # skewed, mean mu: the test targets the mean
            s = 0.3
            x = mu * np.exp(rng.normal(-s * s / 2, s, n_max))
        fooled += running(upper_mean, x, alpha)[0] < mu
        naive += any(x[:n].mean() + st.t.ppf(1 - alpha, n - 1) * x[:n].std(ddof=1) / math.sqrt(n) < mu
                     for n in range(2, n_max + 1))
    assert fooled / reps <= alpha + 0.01            # binomial SE at 1000 reps ≈ 0.007
    assert naive / reps > 2 * alpha                 # the uncorrected looks break the level


def test_lower_log_mean_under_optional_stopping():
    """The Jensen bound: exp of a lower bound of E log X never exceeds E X more than α of the time,
    whatever the stopping time (right-skewed trials, as at a saturated load)."""
    rng = np.random.default_rng(11)
    alpha, mu, s = 0.05, 40.0, 0.8
    fooled = sum(running(lower_log_mean, mu * np.exp(rng.normal(-s * s / 2, s, 30)), alpha, upper=False)[0] > mu
                 for _ in range(1000))
    assert fooled / 1000 <= alpha


def test_mean_exceeds_by_hand():
    """The betting wealth on a real wall's trials (4400 ops/s, R_sat 40 ms), worked out by hand:
    after 2 trials (λ = 1/4, 1/2, 1) 1.96875·5.24375, 2.9375·9.4875, 4.875·17.975 → mean 41.94;
    after 3 ×(5.7875, 10.575, 20.15) → mean 706.7: ≥ 1/α = 133.3 (α = 0.0075) first at n = 3."""
    x = [195.0, 719.0, 806.0]
    w2 = (1.96875 * 5.24375 + 2.9375 * 9.4875 + 4.875 * 17.975) / 3
    w3 = (1.96875 * 5.24375 * 5.7875 + 2.9375 * 9.4875 * 10.575 + 4.875 * 17.975 * 20.15) / 3
    assert w2 == pytest.approx(41.94, abs=0.01) and w3 == pytest.approx(706.73, abs=0.01)
    assert mean_exceeds(x, 40.0, 0.0075) == 3
    assert mean_exceeds(x, 40.0, 1 / 41.9) == 2 and mean_exceeds(x, 40.0, 1 / 42.0) == 3
    assert mean_exceeds([39.0] * 50, 40.0, 0.05) == 0           # below mu0: the wealth only falls
    with pytest.raises(ValueError):
        mean_exceeds([-1.0], 40.0, 0.05)


@pytest.mark.parametrize("draw", ["lognormal", "exponential", "two-point"])
def test_mean_exceeds_under_optional_stopping(draw):
    """At E[X] = mu0 exactly (the worst case of H0), reading the wealth after every one of 60 trials
    and stopping at the first crossing is fooled ≤ α of the time (Ville), for skewed and
    heavy-tailed trials alike."""
    rng = np.random.default_rng(5)
    alpha, mu, reps, n = 0.1, 40.0, 4000, 60
    if draw == "lognormal":
        x = mu * np.exp(rng.normal(-0.5, 1.0, (reps, n)))
    elif draw == "exponential":
        x = rng.exponential(mu, (reps, n))
    else:                                    # 0 or 10·mu: the all-in bet doubles its wealth ×10 per hit
        x = np.where(rng.random((reps, n)) < 0.1, 10 * mu, 0.0)
    fooled = sum(mean_exceeds(row, mu, alpha) > 0 for row in x)
    assert fooled / reps <= alpha + 0.01              # binomial SE at 4000 reps ≈ 0.005
