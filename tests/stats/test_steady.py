"""Steady state inside a trial (stats.steady) against hand-computed cases and scipy."""
from __future__ import annotations

import math

import pytest
from scipy import stats

from workbench.stats.steady import judge, mann_kendall, mser_truncation


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
    assert up["first_ms"] == 6.2
    assert up["mk_p"] == pytest.approx(stats.kendalltau(range(10), rise).pvalue)
    # a high start stays a warm-up even when the whole series trends down
    assert judge(_series([40.0, 30.0, 20.0, 12.0, 5.0] + flat[:5]), 1000)["verdict"] == "steady"
    stall = judge(_series(flat[:4] + [1400.0] + flat[4:]), 1000)
    assert stall["verdict"] == "stall" and stall["stall_intervals"] == [4]
    # 300 calls in flight where Little's law expects 1000 ops/s × 1 ms = 1: the server fell behind
    backlog = judge(_series(flat, outstanding=300), 1000)
    assert backlog["verdict"] == "backlog" and backlog["backlog_ratio"] == pytest.approx(300 / 1.0, rel=0.05)
    assert judge(_series([1.0, 1.1, 0.9]), 1000)["verdict"] == "short"
    assert judge(None, 1000) == {"verdict": "no series"}
