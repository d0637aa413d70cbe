"""Steady state inside a trial (stats.steady) against hand-computed cases and scipy."""
from __future__ import annotations

import math

import pytest
from scipy import stats

import numpy as np

from workbench.stats.steady import ALPHA, judge, lag1_autocorrelation, mann_kendall, mser_truncation, trend_test


def _series(means, outstanding=0, warmup=()):
    t = [-1.0 * (len(warmup) - i) for i in range(len(warmup))] + [float(i) for i in range(len(means))]
    return {"t_s": t, "mean_ms": list(warmup) + list(means), "interval_s": 1.0, "outstanding_at_stop": outstanding}


def test_mser_drops_the_start_that_pays_for_something_else():
    # MSER(d) = Σ_{i>d}(x_i − x̄_d)²/(n−d)²: 0 once 10 and 8 are dropped, > 0 for every smaller d
    assert mser_truncation([10, 8, 1, 1, 1, 1, 1, 1]) == 2
    # alternating 1, 2: MSER(0..3) = 1.5/36, 1.2/25, 1/16, 0.667/9 — the minimum keeps everything
    assert mser_truncation([1, 2, 1, 2, 1, 2]) == 0
    assert mser_truncation([5, 1, 1]) == 0                  # too short to truncate
    assert mser_truncation([9, 9, 9, 1, 1, 1, 1, 1, 1, 1]) == 3
    # but not when dropping raises the kept mean's standard error: 120/64 at d = 0 < 48/16 at d = 4
    assert mser_truncation([9, 9, 9, 9, 9, 1, 1, 1]) == 0


def test_mann_kendall_is_kendall_s_tau_against_time():
    tau, p = mann_kendall([1, 2, 3, 4, 5])
    assert tau == pytest.approx(1.0) and p == pytest.approx(2 / math.factorial(5))   # exact: 2 of the 5! orders
    x = [3.1, 2.9, 3.4, 3.8, 3.3, 4.1, 4.0, 4.6]
    ref = stats.kendalltau(range(len(x)), x)
    assert mann_kendall(x) == pytest.approx((ref.statistic, ref.pvalue))
    assert mann_kendall([2.0] * 6) == (0.0, 1.0)


def test_the_trend_test_whitens_out_persistence_by_hand():
    # [1, 1, 3, 3]: deviations −1, −1, 1, 1; r1 = (1 − 1 + 1)/4 = 0.25 (Box, Jenkins & Reinsel §2.1.4)
    assert lag1_autocorrelation([1, 1, 3, 3]) == pytest.approx(0.25)
    assert lag1_autocorrelation([2.0] * 5) == 0.0
    # no persistence left once the Theil–Sen line is out: the plain test, and the line's rise
    x = [1.0, 3.0, 2.0, 4.0, 3.0, 5.0, 4.0, 6.0]            # slope 0.5 (median of pairwise slopes)
    t = trend_test(x)
    assert t.r1 == 0.0 and (t.tau, t.p) == pytest.approx(mann_kendall(x)) and t.change == pytest.approx(3.5)
    # persistence: r1 of the detrended series, bias-corrected (n·r + 1)/(n − 4), whitens the series
    y = [1.0, 1.2, 1.5, 1.4, 1.1, 0.9, 1.0, 1.3, 1.6, 1.5, 1.2, 1.0]
    t = trend_test(y)
    slope = stats.theilslopes(y, range(len(y))).slope
    r = lag1_autocorrelation([v - slope * i for i, v in enumerate(y)])
    assert t.r1 == pytest.approx((len(y) * r + 1) / (len(y) - 4)) and 0 < t.r1 < 0.95
    w = [b - t.r1 * a for a, b in zip(y, y[1:])]
    assert (t.tau, t.p) == pytest.approx(mann_kendall(w))


def _ar1(rng, n, phi):
    x = np.empty(n)
    x[0] = rng.standard_normal()
    for i in range(1, n):
        x[i] = phi * x[i - 1] + math.sqrt(1 - phi * phi) * rng.standard_normal()
    return x


@pytest.mark.parametrize("n", [30, 60])
def test_persistence_alone_is_rarely_a_trend_and_a_rise_still_is(n):
    # steady AR(1) interval means (φ 0.6): plain Mann–Kendall at α 0.01 calls 17 % of them trends, the
    # whitened test 3–5 % (300 seeded series here; 1500: 16.5 / 4.7 % at 30, 16.7 / 3.1 % at 60).
    # A rise of 0.5 sd per interval on the same noise stays a trend.
    rng = np.random.default_rng(20261128 + n)
    steady = [_ar1(rng, n, 0.6) for _ in range(300)]
    plain = np.mean([mann_kendall(x)[1] < ALPHA for x in steady])
    whitened = np.mean([trend_test(x).p < ALPHA for x in steady])
    assert plain > 0.10 and whitened <= 0.07 and whitened <= plain / 2
    rising = [trend_test(x + 0.5 * np.arange(n)) for x in steady[:100]]
    assert np.mean([t.p < ALPHA and t.tau > 0 for t in rising]) >= 0.90


def test_judge_names_what_is_not_steady():
    flat = [1.00, 1.08, 0.95, 1.02, 0.97, 1.05, 0.99, 1.01]
    ok = judge(_series(flat, outstanding=1, warmup=[5.0]), load_ops_s=1000)
    # MSER may drop a few points of plain noise too (it minimises the kept mean's standard error)
    assert ok["verdict"] == "steady" and ok["intervals"] + ok["warmup_intervals"] == 8 and ok["intervals"] >= 5
    # the first two measured intervals still pay for the previous trial's backlog: dropped by MSER
    late = judge(_series([40.0, 12.0] + flat), load_ops_s=1000)
    assert late["verdict"] == "steady" and late["warmup_intervals"] >= 2
    # a trend that lasts: MSER drops up to half of it, the rest still trends (16 → ≥ 8 intervals)
    assert judge(_series([1.0 + 0.5 * i for i in range(16)]), 1000)["verdict"] == "trend up"
    # a rise from a low start (quick rating at 4000 ops/s, 400 IOPS): MSER drops its first half as
    # warm-up and 5 rising intervals cannot reach p < 0.01 (2/5! = 0.0167); the whole series does
    rise = [6.2, 85.2, 135.7, 177.7, 305.7, 405.1, 479.6, 552.9, 585.5, 730.1]
    assert mser_truncation(rise) == 5 and mann_kendall(rise[5:])[1] == pytest.approx(2 / math.factorial(5))
    up = judge(_series(rise, outstanding=3039), 4000)
    assert up["verdict"] == "trend up" and up["low_start"] == 5 and up["intervals"] == 10, up
    # 3039 in flight at the stop against L = 4000 ops/s × 0.355 s = 1420: 2.1 × L, no backlog beside the rise
    assert up["first_ms"] == 6.2 and up["backlog"] is False and "stall_intervals" not in up
    assert up["mk_p"] == pytest.approx(trend_test(rise).p) and up["mk_p"] < ALPHA
    assert up["trend_change_ms"] == pytest.approx(trend_test(rise).change) and up["trend_change_ms"] > 500
    # a high start stays a warm-up even when the whole series trends down
    assert judge(_series([40.0, 30.0, 20.0, 12.0, 5.0] + flat[:5]), 1000)["verdict"] == "steady"
    stall = judge(_series(flat[:4] + [1400.0] + flat[4:]), 1000)
    assert stall["verdict"] == "stall" and stall["stall_intervals"] == [4]
    assert stall["median_ms"] == pytest.approx(float(np.median(flat[:4] + [1400.0] + flat[4:])))
    # 300 calls in flight where Little's law expects 1000 ops/s × 1 ms = 1: the server fell behind
    backlog = judge(_series(flat, outstanding=300), 1000)
    assert backlog["verdict"] == "backlog" and backlog["backlog_ratio"] == pytest.approx(300 / 1.0, rel=0.05)
    assert judge(_series([1.0, 1.1, 0.9]), 1000)["verdict"] == "short"
    assert judge(None, 1000) == {"verdict": "no series"}
