"""controller/certify.py: the certified λ* interval (issue 30) — its ends, their tests and levels,
and the result fields that carry it."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats as st

from workbench.controller.certify import LOW_SHIFT, SHARES, load_bounds
from workbench.controller.decide import find_peak
from workbench.controller.spec import RatingSpec
from workbench.controller.trial import TrialResult
from workbench.measure.families import family_servers
from workbench.stats.sequential import upper_mean


def T(mean, load, achieved=None, r=60.0, p95=None):
    return TrialResult(mean_ms=mean, p95_ms=p95 if p95 is not None else 2 * mean,
                       achieved_rate=load if achieved is None else achieved).at(load, r)


def test_lower_end_needs_the_spent_upper_bound_below_r_sat():
    # two trials at 800 ops/s, 30 and 34 ms: mean 32, se 2; look 1 at α = 0.3·0.05/2 (mean and p95
    # share α_L) / 2 (spend k = 1) = 0.00375: t_{1 − 0.00375; 1} = 84.9 → 32 + 170 > 40: not shown
    alpha = SHARES[0] * 0.05 / 2 / 2
    assert 32 + st.t.ppf(1 - alpha, 1) * 2.0 > 40
    assert load_bounds(40.0, 2000.0, 0.95, [T(30, 800), T(34, 800)]).low == 0.0
    # far below R_sat, two trials suffice: 5 and 5.2 ms
    b = load_bounds(40.0, 2000.0, 0.95, [T(5, 400), T(5.2, 400), T(30, 800), T(34, 800)])
    assert b.low == 400 and b.high == math.inf and not b.finite


def test_sub_millisecond_noise_does_not_hide_a_lower_end():
    # a real smoke rating's 100 ops/s (tenant test, R_sat 40 ms): 0.24, 1.35, 3.45 ms. Cox's bound at
    # look 2 (n = 3, α = 0.3·0.2/2/6 = 0.005; s² of log x = 1.83, t_{0.995;2} = 9.92) ≈ 3.9e5 ms
    means, alpha = [0.24, 1.35, 3.45], SHARES[0] * 0.2 / 2 / 6
    assert upper_mean(means, alpha) > 1e5
    # on x + 4 ms (LOW_SHIFT·R_sat), less 4: Cox by hand, exp(ȳ + s²/2 + t·√(s²/n + s⁴/(2(n − 1)))) − 4
    y = np.log(np.array(means) + LOW_SHIFT * 40.0)
    s2, q = y.var(ddof=1), st.t.ppf(1 - alpha, 2)
    cox = math.exp(y.mean() + s2 / 2 + q * math.sqrt(s2 / 3 + s2 * s2 / 4)) - 4.0
    assert cox == pytest.approx(upper_mean(list(np.array(means) + 4.0), alpha) - 4.0) and cox < 40
    b = load_bounds(40.0, 2000.0, 0.8, [T(m, 100) for m in means])
    assert b.low == 100 and f"upper bound {cox:.4g} ms on 3 trials" in b.low_by, b
    # two of them are not enough (t_{1 − α/2; 1} = 127), and a large reading still counts in full
    assert load_bounds(40.0, 2000.0, 0.8, [T(m, 100) for m in means[:2]]).low == 0.0
    assert load_bounds(40.0, 2000.0, 0.8, [T(m, 100) for m in (0.24, 1.35, 300.0)]).low == 0.0


def test_upper_end_by_counts_on_one_trial_and_by_the_log_mean():
    # 1600 ops/s for 60 s completing 1200/s: z = (1200 − 1600)·60/√(1600·60) = −77.5
    b = load_bounds(40.0, 2000.0, 0.95, [T(5, 400), T(5.2, 400), T(500, 1600, achieved=1200)])
    assert (b.low, b.high) == (400, 1600) and b.finite and "completions short" in b.high_by
    # a shortfall within Poisson noise is no evidence: 1600 offered, 1595 completed (z −1.0)
    assert load_bounds(40.0, 2000.0, 0.95, [T(500, 1600, achieved=1595)]).high == math.inf
    # the log-mean test: three trials near 300 ms
    b = load_bounds(40.0, 2000.0, 0.95, [T(m, 1600) for m in (290.0, 310.0, 300.0)])
    assert b.high == 1600 and "mean > 40" in b.high_by


def test_repeated_readings_and_broken_latency_rule_are_no_lower_end():
    clamped = [T(10.0, 900), T(12.0, 900), T(12.0, 900), T(12.0, 900)]   # a clamped reading repeats
    assert load_bounds(40.0, 2000.0, 0.95, clamped).low == 0.0
    assert load_bounds(40.0, 2000.0, 0.95, clamped, distrust_repeats=False).low == 900
    far = [T(5, 400), T(5.2, 400)]
    assert load_bounds(40.0, 2000.0, 0.95, far, latency_broken=frozenset({400.0})).low == 0.0


def test_a_lower_end_above_the_upper_one_is_dropped():
    trials = [T(5, 400), T(5.2, 400), T(500, 800, achieved=600), T(5, 1200), T(5.1, 1200)]
    b = load_bounds(40.0, 2000.0, 0.95, trials)
    assert (b.low, b.high) == (400, 800)


@pytest.mark.parametrize("family", ["mm", "wall"])
def test_results_carry_a_finite_positive_interval_its_method_and_level(family):
    spec = RatingSpec(runlength_s=60.0)
    for srv in family_servers(family, 6):
        res = find_peak(spec, srv.measure)
        lo, hi = res.peak_rate_ci
        assert res.converged and 0 < lo <= res.peak_rate <= hi < math.inf
        assert res.peak_rate_ci_level == 0.95 and res.peak_rate_ci_method.startswith("load bounds")
        assert 0.0 <= res.accuracy <= 1.0
        assert all(not (x < 0) for x in res.mean_ms_ci)
        d = res.to_dict()
        assert d["peak_rate_ci_level"] == 0.95 and d["per_goal"]["40"]["peak_rate_ci_method"]


def test_capacity_cut_tries_the_completion_rate_after_an_overloaded_gallop_load():
    from workbench.controller.decide import NextTrial, decide
    from workbench.controller.policy import LocalPolicy
    log = [T(m, x) for x in (50.0, 200.0) for m in (5.0, 5.2)] + [T(500.0, 3200.0, achieved=900.0)]
    d = decide(RatingSpec(runlength_s=60.0, policy=LocalPolicy(capacity_cut=0.05)), log)
    assert isinstance(d, NextTrial) and d.load_ops_s == pytest.approx(945.0) and "capacity cut" in d.reason
    d = decide(RatingSpec(runlength_s=60.0), log)               # the default: off, the gallop fills 2 × 200
    assert d.load_ops_s == pytest.approx(400.0)


def test_reason_lines_print_no_latency_bound_below_zero():
    from workbench.controller.decide import NextTrial, decide
    log = [T(5.0, 50.0), T(5.1, 50.0), T(10.0, 100.0), T(70.0, 100.0)]   # t interval [−341, 421] ms
    d = decide(RatingSpec(policy="binsearch"), log)
    assert isinstance(d, NextTrial) and d.load_ops_s == 100.0 and "CI [0, " in d.reason
    lo, hi = (float(v) for v in d.reason.split("CI [")[1].split("]")[0].split(","))
    assert lo == 0 and hi == pytest.approx(40.0 + st.t.ppf(0.975, 1) * 30.0, abs=0.05)   # x̄ + t·s/√2, s = 42.4
    assert "accuracy 0.000" in d.reason and "accuracy -" not in d.reason


def test_certification_steps_out_past_loads_near_the_peak():
    """A seeded search tested only loads near λ*: showing one of them saturated (or not) costs many
    trials, so certification tries a load ×1.25 above the highest, then ÷1.25 below the lowest."""
    from workbench.controller.decide import NextTrial, decide
    spec = RatingSpec(policy="binsearch", stop_rule="overlap")
    log = [T(m, 800) for m in (39.5, 40.5, 40.0, 40.2)] + [T(m, 760) for m in (30.0, 31.0)]
    d = decide(spec, log)
    assert isinstance(d, NextTrial) and d.load_ops_s == 1000 and d.reason.startswith("certify upper end")
    log += [T(400.0, 1000, achieved=880)]                   # short of offered: the upper end shown
    d = decide(spec, log)
    assert isinstance(d, NextTrial) and d.load_ops_s == 608 and d.reason.startswith("certify lower end")
    log += [T(m, 608) for m in (5.0, 5.2)]
    d = decide(spec, log)
    assert d.result.converged and d.result.peak_rate_ci == (608.0, 1000.0)


def test_a_wide_interval_is_narrowed_at_a_new_load_when_affordable():
    """interval_halfwidth 0.10 (the quick profile's): [608, 1000] is 608 ± 196, no tested load between
    can narrow it, so a new load halves the wider gap next to an end (800 → 1000: 900); a trial the
    goal may do without, so with none left the rating ends converged on [608, 1000]."""
    from workbench.controller.decide import NextTrial, decide
    spec = RatingSpec(policy="binsearch", stop_rule="overlap", interval_halfwidth=0.10)
    log = ([T(m, 800) for m in (39.5, 40.5, 40.0, 40.2)] + [T(m, 760) for m in (30.0, 31.0)]
           + [T(400.0, 1000, achieved=880)] + [T(m, 608) for m in (5.0, 5.2)])
    d = decide(spec, log)
    assert isinstance(d, NextTrial) and d.load_ops_s == 900 and "tighten the upper end 1000" in d.reason
    d = decide(dataclasses.replace(spec, max_trials=len(log)), log)
    assert d.result.converged and d.result.peak_rate_ci == (608.0, 1000.0)
    log += [T(m, 900) for m in (300.0, 420.0, 380.0, 380.0)]   # 900 shown saturated: [608, 900], 146 > 10 % of 608
    d = decide(spec, log)                                  # ... and the wider gap is now 608 → 760
    assert isinstance(d, NextTrial) and d.load_ops_s == 684 and "tighten the lower end 608" in d.reason


def test_an_upper_end_that_cannot_be_shown_leaves_the_rating_not_converged():
    """The step-out load cannot be measured (three invalid trials in a row, e.g. the generator at
    its ceiling): the interval stays open above, and the rating says so instead of converging."""
    from workbench.controller.decide import Done, decide
    spec = RatingSpec(policy="binsearch", stop_rule="overlap")
    bad = TrialResult(mean_ms=1.0, p95_ms=2.0, achieved_rate=1000.0, valid=False, reason="generator saturated")
    log = [T(m, 800) for m in (39.5, 40.5, 40.0, 40.2)] + [T(m, 760) for m in (30.0, 31.0)]
    log += [bad.at(1000, 180.0)] * spec.max_invalid_per_load
    d = decide(spec, log)
    assert isinstance(d, Done) and not d.result.converged
    assert "the λ* interval stays open (no load shown saturated; 1000 ops/s cannot be measured)" in d.result.reason
    assert d.result.peak_rate_ci[1] == math.inf


def test_a_wide_interval_is_tightened_where_one_more_trial_shows_an_end():
    """The real rating of issue 30 ([800, 12800] after its bracket [3800, 4000] resolved): the ends
    are shown but 16× apart, and 4000 ops/s read 244 ms once: one more trial like it would show it
    saturated, so it is taken; a load whose typical trial would not show it is not."""
    from workbench.controller.decide import Done, NextTrial, decide
    from workbench.config.profiles import PROFILES
    spec = RatingSpec(**PROFILES["quick"]["spec"])
    log = [T(m, x, r=10.0) for x, m in ((200, 0.18), (200, 0.16), (800, 0.1), (800, 0.11), (3200, 0.09),
                                        (3200, 0.12))]
    log += [T(6805.3, 12800, achieved=3894, r=10.0), T(3930.3, 6400, r=10.0), T(1478.3, 4800, r=10.0),
            T(244.3, 4000, r=10.0), T(0.08, 3600, r=10.0), T(0.72, 3600, r=10.0)]
    # the real 3800 ops/s read 0.18 and 0.48 ms: on x + LOW_SHIFT·R_sat they show the lower end at
    # once, and one more trial at 4000 ends the rating certified [3800, 4000]
    real = log + [T(0.18, 3800, r=10.0), T(0.48, 3800, r=10.0)]
    d = decide(spec, real + [T(251.0, 4000, r=10.0)])
    assert isinstance(d, Done) and d.result.converged and d.result.peak_rate_ci == (3800, 4000), d
    log += [T(10.0, 3800, r=10.0), T(14.0, 3800, r=10.0)]      # 10 and 14 ms do not, on two trials
    d = decide(spec, log)
    assert isinstance(d, NextTrial) and d.load_ops_s == 4000 and "tighten the upper end" in d.reason, d
    d = decide(spec, log + [T(251.0, 4000, r=10.0)])
    assert isinstance(d, NextTrial) and "tighten the lower end" in d.reason, d


def test_certification_goes_where_an_end_shows_soonest():
    """A real smoke rating (slot1, faults test, 2026-11-26): bracket [1000, 1100] resolved on 14 trials,
    no load yet shown saturated. 1187.6 ops/s (37 and 524 ms) is the lowest load read clearly
    saturated, but two more trials like its median would not show it; 1600 ops/s (1969 ms) would on
    one more: certification goes there (before: to 1187.6, 1200 and 1600 in turn, max_trials spent)."""
    from workbench.config.profiles import PROFILES
    from workbench.controller.decide import NextTrial, decide
    spec = RatingSpec(**PROFILES["smoke"]["spec"])
    rows = [(400, .12, .16), (400, .11, .16), (1600, 1969, 2660), (800, 1.85, .64), (800, .12, .18),
            (1200, 63.2, 280), (1200, 137, 334), (1000, 2.31, 17.8), (1000, 5.66, 52.9), (1187.6, 37.4, 218),
            (1187.6, 524, 703), (1100, 41.6, 170), (1100, 12.4, 92.5), (1100, 158, 346)]
    log = [T(m, x, r=2.0, p95=p) for x, m, p in rows]
    d = decide(spec, log)
    assert isinstance(d, NextTrial) and d.load_ops_s == 1600 and "certify upper end" in d.reason, d


def test_a_wall_past_its_edge_is_shown_saturated_by_betting():
    """A real quick rating's 4200 ops/s (282, 386, 148, 445 ms; R_sat 40, c 0.90): the log-t bound on 3
    df at its share of α_H does not clear 40 ms, the betting e-process (mean over bets ¼, ½, 1 of
    Π(1 + λ(x/40 − 1)): 105 after three trials, 1052 after four ≥ 1/(0.1·0.3·0.1) = 333) does: H = 4200,
    not the 4800 above it."""
    trials = [T(m, 4200) for m in (282.38, 386.07, 147.88, 445.06)] + [T(m, 4800) for m in (1263.0, 1770.6, 1457.8)]
    trials += [T(m, 4000) for m in (101.2, 75.2, 12.4, 6.6)] + [T(m, 3200) for m in (0.09, 0.11)]
    b = load_bounds(40.0, math.inf, 0.90, trials)
    assert (b.low, b.high) == (3200.0, 4200.0) and "betting e-process" in b.high_by and "4 trials" in b.high_by
    assert load_bounds(40.0, math.inf, 0.90, trials[:3] + trials[4:]).high == 4800.0    # three: not yet
