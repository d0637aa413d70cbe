"""policy "local" (issue 16): the robust local fit of log R(λ) with a first-trial term, its Fieller
interval, its placement of loads and its stop."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats as st

from workbench.config.profiles import PROFILES, with_policy
from workbench.controller.policy import LocalPolicy
from workbench.controller.decide import decide, find_peak
from workbench.controller.fit import FIT_STOP_MIN_TRIALS, local_fit, on_curve
from workbench.controller.certify import load_bounds
from workbench.controller.spec import RatingSpec
from workbench.controller.state import LoadStatus
from workbench.controller.summary import summarize
from workbench.controller.trial import TrialResult
from workbench.measure.families import true_region
from workbench.measure.simulated import SimulatedServer
from workbench.stats.calibration import fieller_inverse, wls_line

NO_PROBES = LocalPolicy(probe_share=None)
# the local fit and placement alone: none of the recommended policy's extra rules, its levels at c
BARE_LOCAL = LocalPolicy(far_factor=None, throughput_rule=False, probe_share=None, fit_stop_share=1.0,
                         fit_ci_share=1.0)

B0, B1 = math.log(40.0) - 0.004 * 1000, 0.004      # log R = B0 + B1·λ: R(1000) = 40 ms


def _t(x, logr, r_s=60.0):
    return TrialResult(mean_ms=math.exp(logr), p95_ms=1.0, achieved_rate=x).at(x, r_s)


def _ends(lo=500.0, hi=2000.0, r_s=60.0):
    """Trials that certify both ends of the λ* interval (issue 30): two far below R_sat at lo, one at
    hi completing half of what it was offered."""
    return [TrialResult(mean_ms=m, p95_ms=m, achieved_rate=lo).at(lo, r_s) for m in (5.0, 5.2)] + \
        [TrialResult(mean_ms=900.0, p95_ms=900.0, achieved_rate=hi / 2).at(hi, r_s)]


def test_one_trial_per_load_is_the_plain_wls_fieller():
    rng = np.random.default_rng(4)
    loads = np.linspace(960, 1040, 9)
    e = rng.normal(0, 0.03, loads.size)
    trials = [_t(x, B0 + B1 * x + d) for x, d in zip(loads, e)]
    spec = RatingSpec(policy=BARE_LOCAL)
    fit = local_fit(summarize(spec, trials), 40.0, 0.1, 0.95, robust=False)
    ref = wls_line(loads, B0 + B1 * loads + e)
    x0, lo, hi = fieller_inverse(ref, math.log(40.0), 0.95)
    assert math.isnan(fit.first_effect)                     # every trial is a first one: no term
    assert fit.peak_rate == pytest.approx(x0, rel=1e-9)
    assert fit.ci == pytest.approx((lo, hi), rel=1e-9)
    # the CI of the mean at x0 (Draper & Smith §1.4): exp(±t·se) around R_sat
    h = st.t.ppf(0.975, ref.df) * ref.se_mean(x0)
    assert fit.level_ci == pytest.approx((40 * math.exp(-h), 40 * math.exp(h)), rel=1e-9)


def test_first_trial_term_removes_the_cold_start_bias():
    rng = np.random.default_rng(8)
    trials = []
    for x in (970.0, 990.0, 1010.0, 1030.0):
        for k in range(4):
            trials.append(_t(x, B0 + B1 * x + (math.log(1.4) if k == 0 else 0.0) + rng.normal(0, 0.01)))
    spec = RatingSpec(policy=BARE_LOCAL)
    loads = summarize(spec, trials)
    with_term = local_fit(loads, 40.0, 0.1, 0.95)
    without = local_fit(loads, 40.0, 0.1, 0.95, first_effect=False)
    assert with_term.first_effect == pytest.approx(math.log(1.4), abs=0.02)
    assert with_term.peak_rate == pytest.approx(1000.0, abs=2.0)
    assert with_term.ci[0] <= 1000.0 <= with_term.ci[1]
    assert without.peak_rate < 990.0                          # the inflated first trials pull λ̂* down


def test_an_outlier_trial_is_deleted():
    rng = np.random.default_rng(2)
    trials = [_t(x, B0 + B1 * x + rng.normal(0, 0.02)) for x in (980.0, 1000.0, 1020.0) for _ in range(5)]
    trials[7] = _t(1000.0, B0 + B1 * 1000.0 + math.log(3.0))   # × 3: an outlier trial
    fit = local_fit(summarize(RatingSpec(policy=BARE_LOCAL), trials), 40.0, 0.1, 0.95)
    assert fit.n_dropped == 1 and fit.n_trials == 14
    assert fit.peak_rate == pytest.approx(1000.0, abs=3.0)


def test_local_policy_finds_lambda_in_the_region():
    spec = RatingSpec(r_sat_ms=40, width=0.1, confidence=0.95, accuracy=0.9, runlength_s=60,
                      )          # the recommended policy: RatingSpec's default
    hits = 0
    for seed in range(10):
        srv = SimulatedServer(capacity_ops_s=1000.0, base_ms=1.0, service_ms=5.0, servers=1, seed=seed,
                              noise=0.03)
        res = find_peak(spec, srv.measure)
        lo, hi = true_region(srv, 40.0, 0.1)
        hits += lo <= res.peak_rate <= hi
        assert res.converged and res.policy == "local" and res.stop_rule == "fit"
        assert res.peak_rate_ci[0] <= res.peak_rate <= res.peak_rate_ci[1]
    assert hits >= 9


def test_decide_is_a_pure_function_of_the_log():
    spec = RatingSpec(runlength_s=60.0)
    srv = SimulatedServer(capacity_ops_s=800.0, seed=3)
    log = []
    for _ in range(25):
        d = decide(spec, log)
        assert decide(spec, list(log)) == d
        if not hasattr(d, "load_ops_s"):
            break
        log.append(srv.measure(d.load_ops_s, d.runlength_s).at(d.load_ops_s, d.runlength_s))
    assert any(t.runlength_s == 30.0 for t in log)              # probes: runlength_s/2 away from R_sat


def test_far_factor_saturates_by_one_trial_above_only():
    spec = RatingSpec(policy=NO_PROBES)
    above = summarize(spec, [_t(100.0, math.log(200.0))])[0]
    below = summarize(spec, [_t(100.0, math.log(2.0))])[0]
    assert above.status == LoadStatus.ABOVE_BY_MEAN and above.side == 1 and not above.confident
    assert below.status == LoadStatus.OPEN


def test_throughput_rule_saturates_a_load_that_falls_behind():
    spec = RatingSpec(policy=NO_PROBES)
    # 1000 ops/s for 60 s offered, 60000·(1 − 0.03) done: z = −1800/√60000 = −7.3 < −5
    slow = TrialResult(mean_ms=10.0, p95_ms=20.0, achieved_rate=970.0).at(1000.0, 60.0)
    ok = TrialResult(mean_ms=10.0, p95_ms=20.0, achieved_rate=995.0).at(1000.0, 60.0)   # z = −1.3
    assert summarize(spec, [slow, slow])[0].status == LoadStatus.ABOVE
    assert summarize(spec, [ok, ok])[0].status != LoadStatus.ABOVE


def test_identical_means_are_no_evidence_under_local():
    spec = RatingSpec(policy=NO_PROBES)
    same = [_t(500.0, math.log(39.0)), _t(500.0, math.log(39.0))]
    assert summarize(spec, same)[0].status == LoadStatus.OPEN
    assert summarize(RatingSpec(policy="binsearch"), same)[0].status == LoadStatus.PEAK   # other policies unchanged
    # one repeat among three (a knee server past capacity: two trials clamped at 0.05·R) is no
    # evidence either; three distinct means there give the CI [21.0, 36.7] ms, below R_sat
    clamped = [_t(1168.75, math.log(m)) for m in (25.22, 30.69, 30.69)]
    assert summarize(spec, clamped)[0].status == LoadStatus.OPEN
    assert summarize(spec, clamped[:2] + [_t(1168.75, math.log(30.68))])[0].side == -1


def test_a_load_near_r_sat_is_classified_on_three_trials_under_local():
    spec = RatingSpec(policy=NO_PROBES)
    # two trials: 33.15 ± t(0.975; 1)·0.0707/√2 = ± 12.706·0.05 → [32.5, 33.8] ms, below [36, 44]
    two = [_t(500.0, math.log(m)) for m in (33.1, 33.2)]
    assert summarize(RatingSpec(policy="binsearch"), two)[0].side == -1           # Algorithm 2 alone: below on two trials
    assert summarize(spec, two)[0].status == LoadStatus.OPEN     # local: within R_sat/2 … 2·R_sat, open
    # three: 33.1 ± t(0.975; 2)·0.1/√3 = ± 4.303·0.0577 → [32.85, 33.35] ms: below
    assert summarize(spec, two + [_t(500.0, math.log(33.0))])[0].side == -1
    far = [_t(100.0, math.log(m)) for m in (5.0, 5.1)]          # outside the window: two trials decide
    assert summarize(spec, far)[0].side == -1


def test_far_above_by_the_median_saturates_an_undecided_load():
    # past capacity trial means swing by orders of magnitude: 16 ms and 570 ms at one load. Its
    # median (293 ms) is above far_factor·R_sat = 160 ms: saturated, by its median (not confident)
    spec = RatingSpec(policy=NO_PROBES)
    s = summarize(spec, [_t(2125.0, math.log(16.2)), _t(2125.0, math.log(570.0))])[0]
    assert (s.status, s.side, s.confident) == (LoadStatus.ABOVE_BY_MEAN, 1, False)
    # a load in the region with one 5× outlier: median 120 ms < 160 ms, still undecided
    s = summarize(spec, [_t(900.0, math.log(40.0)), _t(900.0, math.log(200.0))])[0]
    assert s.status == LoadStatus.OPEN
    assert summarize(RatingSpec(policy="binsearch"), [_t(2125.0, math.log(16.2)), _t(2125.0, math.log(570.0))])[0].side == 0


def test_monotone_check_reads_medians_not_means():
    # one 3× outlier at 50 ops/s (mean 12.2 ms, median 7.7 ms) must not keep 200 ops/s (7.3 ms,
    # tight CI far below R_sat) open: with means it did, and a knee server ran 397 trials there
    spec = RatingSpec(policy=NO_PROBES)
    trials = [_t(50.0, math.log(m)) for m in (7.73, 21.8, 6.97)]
    trials += [_t(200.0, math.log(m)) for m in (6.67, 7.67, 6.69, 7.2)]
    at = {s.load: s for s in summarize(spec, trials)}
    assert at[200.0].status == LoadStatus.BELOW
    # a load reading far below a lower load's median still stays open (past capacity)
    trials += [_t(400.0, math.log(m)) for m in (3.1, 3.3, 3.2, 3.0)]
    assert {s.load: s for s in summarize(spec, trials)}[400.0].status == LoadStatus.OPEN


def test_monotone_check_resamples_the_lower_load_when_it_has_fewer_trials():
    # a smoke rating on Ganesha at 40 read IOPS (2 s trials, CI two-slots test): 250 ops/s read
    # 19.8 and 1.6 ms, 275 ops/s 6.1 and 5.5 ms; the check held 275 open, and 12 more trials there
    # (median 1.6 ms) could never lift 250's 2-trial median of 10.7 ms: max_trials exhausted
    spec = RatingSpec(**PROFILES["smoke"]["spec"])
    log = [(400, 272.4), (200, 0.7), (200, 0.3), (300, 161.2), (250, 19.8), (250, 1.6), (275, 6.1), (275, 5.5)]
    trials = [TrialResult(mean_ms=m, p95_ms=m, achieved_rate=x).at(x, 2.0) for x, m in log]
    assert {s.load: s for s in summarize(spec, trials)}[275.0].held_by == 250.0
    d = decide(spec, trials)
    assert d.load_ops_s == 250.0 and d.reason.startswith("monotone check: 250 ops/s"), d
    # its third trial settles the median (1.6 ms): 275 is below and the bracket [275, 300] resolved
    done = decide(spec, [*trials, TrialResult(mean_ms=0.9, p95_ms=0.9, achieved_rate=250.0).at(250.0, 2.0)])
    # no load above shown saturated yet: the lowest read clearly saturated (300 ops/s, 161.2 ms) again
    assert done.reason.startswith("certify upper end") and done.load_ops_s == 300.0, done
    done = decide(spec, [*trials, TrialResult(mean_ms=0.9, p95_ms=0.9, achieved_rate=250.0).at(250.0, 2.0),
                         TrialResult(mean_ms=170.0, p95_ms=170.0, achieved_rate=300.0).at(300.0, 2.0)])
    assert done.result.converged and done.result.bracket == (275.0, 300.0), done
    assert done.result.peak_rate_ci[1] == 300.0
    # with more trials than the load it holds open, the lower load keeps its median: the upper is sampled
    more = [*trials, *(TrialResult(mean_ms=m, p95_ms=m, achieved_rate=250.0).at(250.0, 2.0) for m in (15.0, 12.0))]
    assert decide(spec, more).load_ops_s == 275.0


def test_monotone_check_ignores_the_flat_part_of_the_curve():
    # a quick rating (R_sat 40 ms): 200 ops/s read 0.21 ms, 800 and 3200 ops/s 0.1 ms. Below
    # 0.1·R_sat that is noise, not a queue: both are below, and nothing is resampled
    spec = RatingSpec(**PROFILES["quick"]["spec"])
    log = [(200, 0.21), (200, 0.20), (800, 0.11), (800, 0.10), (3200, 0.09), (3200, 0.095)]
    trials = [TrialResult(mean_ms=m, p95_ms=m, achieved_rate=x).at(x, 10.0) for x, m in log]
    assert all(s.status == LoadStatus.BELOW and s.held_by is None for s in summarize(spec, trials))
    assert decide(spec, trials).load_ops_s > 3200


def test_fit_ignores_loads_reading_below_a_saturated_load_beneath_them():
    # the line crosses R_sat at 1000; 1030 is saturated (one trial at 500 ms > 4·R_sat); 1050 is
    # past capacity and its trials read ~45 ms, below 1030's: not on the curve, not in the fit
    rng = np.random.default_rng(5)
    spec = RatingSpec(policy=NO_PROBES)
    trials = [_t(x, B0 + B1 * x + rng.normal(0, 0.03)) for x in (980.0, 1000.0, 1020.0) for _ in range(4)]
    trials += [_t(1030.0, math.log(500.0))] + [_t(1050.0, math.log(m)) for m in (44.0, 47.0, 45.5)]
    loads = summarize(spec, trials)
    assert [s.side for s in loads if s.load == 1030.0] == [1]
    fit = local_fit(loads, 40.0, 0.1, 0.95)
    assert fit.loads == (980.0, 1000.0, 1020.0)
    assert fit.peak_rate == pytest.approx(1000.0, abs=5.0)
    # a load above a saturated one that reads higher is on the curve: it stays
    trials[-3:] = [_t(1050.0, math.log(m)) for m in (700.0, 650.0, 720.0)]
    assert on_curve(summarize(spec, trials))[-1].load == 1050.0


def test_fit_does_not_stop_a_rating_on_few_trials():
    # 2 trials ±6 % at each of 5 loads (every load's own CI is wide): the fit of 10 trials is
    # inside at once, but it may stop the rating only from FIT_STOP_MIN_TRIALS = 12 trials on
    def at(xs):
        return [_t(x, B0 + B1 * x + d * (-1) ** i) for i, x in enumerate(xs) for d in (0.06, -0.06)]
    base = dict(policy=BARE_LOCAL, max_trials_per_load=1000)
    trials = at(np.linspace(972.0, 1028.0, 5))
    fit = local_fit(summarize(RatingSpec(**base), trials), 40.0, 0.1, 0.95)
    assert fit.level_inside and fit.n_trials == 10 < FIT_STOP_MIN_TRIALS
    assert not hasattr(decide(RatingSpec(**base), trials + _ends()), "result")
    assert decide(RatingSpec(**base), at(np.linspace(972.0, 1028.0, 6)) + _ends()).result.reason.startswith("fit:")


def test_latency_bound_needs_confidence():
    # a load whose p95 breaks L_sat but not at confidence c, with a mean CI below R_sat, is no upper
    # bound of λ* (it used to be when its smallest mean exceeded 4·R_sat(1 + s))
    spec = RatingSpec(policy="binsearch", l_sat_ms=100.0)
    trials = [TrialResult(mean_ms=m, p95_ms=p, achieved_rate=900.0).at(900.0, 60.0)
              for m, p in ((30.0, 60.0), (31.0, 200.0), (30.5, 70.0))]
    trials += [TrialResult(mean_ms=m, p95_ms=2 * m, achieved_rate=500.0).at(500.0, 60.0) for m in (10.0, 10.5)]
    loads = summarize(spec, trials)
    assert [s.latency_saturated for s in loads] == [True, False]
    assert load_bounds(40.0, spec.l_sat_ms, spec.confidence, trials).high == math.inf


@pytest.mark.parametrize("field,value", [("far_factor", 1.0), ("far_factor", -2), ("probe_share", 0),
                                         ("fit_stop_share", 0.0), ("fit_ci_share", 1.5),
                                         ("throughput_rule", 1)])
def test_local_policy_rejects_bad_knobs(field, value):
    with pytest.raises(ValueError, match=f"LocalPolicy.{field}"):
        RatingSpec(policy={"name": "local", field: value})


def test_the_recommended_policy_is_the_default_of_a_spec_and_of_every_profile():
    spec = RatingSpec(r_sat_ms=40.0, width=0.1, confidence=0.95, accuracy=0.9, runlength_s=60.0)
    assert spec.policy == LocalPolicy() and spec.stop_rule == "fit"
    assert spec.policy.probe_runlength_s(spec) == 30.0                       # runlength_s/2
    assert (spec.policy.fit_confidence(0.95), spec.policy.fit_ci_confidence(0.95)) == (0.96, 0.99)
    assert (spec.policy.fit_confidence(0.90), spec.policy.fit_ci_confidence(0.90)) == (0.92, 0.98)
    for name, prof in PROFILES.items():
        spec = RatingSpec(**prof["spec"])
        assert (spec.policy.name, spec.stop_rule) == ("local", "fit"), name


def test_another_policy_on_a_profile_rates_as_before():
    spec = RatingSpec(**with_policy(PROFILES["standard"]["spec"], "binsearch"))
    assert (spec.policy.name, spec.stop_rule, spec.policy.far_factor, spec.policy.throughput_rule) == (
        "binsearch", "inside", None, False)
    quick = RatingSpec(**with_policy(PROFILES["quick"]["spec"], "local"))      # the profile's own knobs stay
    assert quick.policy == LocalPolicy(throughput_rule=False, probe_share=None)


def test_a_spec_stored_with_flat_policy_knobs_reads_back():
    old = dict(policy="local", stop_rule="fit", far_factor=4.0, throughput_rule=True, probe_runlength_s=30.0,
               runlength_s=60.0, confidence=0.95, fit_confidence=0.96, fit_ci_confidence=0.99)
    assert RatingSpec.from_dict(old) == RatingSpec(runlength_s=60.0)
    lin = RatingSpec.from_dict(dict(policy="linear", linear_trials=None, linear_step_ops_s=50.0))
    assert lin.policy.trials is None and lin.policy.step_ops_s == 50.0
    assert RatingSpec.from_dict(RatingSpec(runlength_s=60.0).to_dict()) == RatingSpec(runlength_s=60.0)


def test_local_fit_fieller_with_first_trial_term_covers_at_its_level():
    # 4 loads × 3 trials, the first trial at each × 1.3, normal noise: the Fieller interval of the
    # 3-parameter fit (λ* read off the warm line) covers the true λ* at its level
    rng = np.random.default_rng(21)
    spec = RatingSpec(policy=BARE_LOCAL)
    hits, n = 0, 1000
    for _ in range(n):
        trials = [_t(x, B0 + B1 * x + (math.log(1.3) if k == 0 else 0.0) + rng.normal(0, 0.05))
                  for x in (960.0, 987.0, 1013.0, 1040.0) for k in range(3)]
        fit = local_fit(summarize(spec, trials), 40.0, 0.1, 0.90, robust=False)
        hits += fit.ci[0] <= 1000.0 <= fit.ci[1]
    assert abs(hits / n - 0.90) < 3 * math.sqrt(0.9 * 0.1 / n)


def test_fit_stop_honours_an_accuracy_above_one_minus_s():
    # 2 trials at each of 12 loads, ±6 % apart: every load's own CI (t on 1 df) is wide, the pooled
    # fit's (21 df) is not; the sign alternates between loads, so the first-trial term is 0
    trials = [_t(x, B0 + B1 * x + d * (-1) ** i) for i, x in enumerate(np.linspace(972.0, 1028.0, 12))
              for d in (0.06, -0.06)] + _ends()
    base = dict(policy=BARE_LOCAL, width=0.10, max_trials_per_load=1000)
    d = decide(RatingSpec(**base, accuracy=0.90), trials)
    assert hasattr(d, "result") and d.result.reason.startswith("fit:")
    lo, hi = local_fit(summarize(RatingSpec(**base), trials), 40.0, 0.1, 0.95).level_ci
    assert 1 - (hi - lo) / (hi + lo) < 0.99                 # Eq. 2 of the fitted mean's CI
    assert not hasattr(decide(RatingSpec(**base, accuracy=0.99), trials), "result")


def test_seed_sample_is_completed_before_the_fit_places_loads():
    # a nightly-style rating: seed_trials valid trials at the seed load before anything else
    spec = RatingSpec(seed_load=950.0, seed_trials=6)
    srv = SimulatedServer(capacity_ops_s=1000.0, base_ms=1.0, service_ms=5.0, servers=1, seed=2, noise=0.03)
    res = find_peak(spec, srv.measure)
    first = [t.load_ops_s for t in res.trials[:6]]
    assert first == [950.0] * 6


# rate_peak end to end in the suite (2026-11-27, 20:35 UTC): the smoke profile with goals 10 and 40 ms
# on Ganesha at 100 read IOPS, 2 s trials: (load, mean ms, p95 ms, valid)
WALL_EDGE_LOG = [(400, 0.76, 3.44, 1), (400, 0.86, 3.45, 1), (1600, 1646, 2078, 1), (800, 2.36, 7.50, 1),
                 (800, 0.76, 3.61, 1), (1200, 284, 501, 1), (1000, 20.0, 95.7, 1), (1000, 1.20, 4.61, 1),
                 (1000, 1.75, 5.03, 1), (1012.12, 0.74, 3.15, 1), (1012.12, 0.69, 2.00, 1), (1012.12, 0.85, 3.29, 1),
                 (1000, 0.54, 2.74, 1), (800, 0.55, 2.96, 1), (1012.12, 32.0, 117, 1), (1000, 0.83, 3.68, 1),
                 (1012.12, 0.76, 2.94, 1), (1000, 2.44, 10.7, 1), (1012.12, 2.39, 8.80, 1), (1000, 1.36, 5.91, 1),
                 (1012.12, 1.95, 6.69, 0), (1012.12, 170, 287, 1), (1000, 4.96, 33.9, 1), (1012.12, 3.63, 24.8, 1)]


def test_the_monotone_check_judges_a_hold_its_trials_cannot_settle_by_the_mean():
    """At a wall's edge a load's trial means are bimodal (1012 ops/s: 0.7 ms mostly, 32 and 170 ms now
    and then), so its median may stay below a lower load's for ever. The check alternated 1000 and 1012
    ops/s for 12 trials, and the rating spent its 25 without showing the upper end. Once the held load
    and its holder have HOLD_MAX_TRIALS trials each, the held load is judged by its mean (not
    confidently) and the search moves on."""
    from workbench.controller.summary import HOLD_MAX_TRIALS
    spec = RatingSpec(**{**PROFILES["smoke"]["spec"], "goals_ms": (10.0, 40.0), "budget_s": 150.0, "max_trials": 25})
    trials = [TrialResult(mean_ms=m, p95_ms=p, achieved_rate=x, valid=bool(v),
                          reason="" if v else "generator saturated").at(x, 2.0) for x, m, p, v in WALL_EDGE_LOG]

    def at(k, goal=10.0):
        return {s.load: s for s in summarize(spec.at_goal(goal), [t for t in trials[:k] if t.valid], r_sat_ms=goal)}

    # three trials each: still held open, and the holder is resampled
    assert at(12)[1012.12].status == LoadStatus.OPEN and at(12)[1012.12].held_by == 1000.0
    assert decide(spec, trials[:12]).reason.startswith("goal 10 ms: monotone check: 1000 ops/s")
    # four each: judged by the mean, 8.6 ms (trial 14 read 32 ms), below the 10 ms goal; the search moves on
    s = at(15)[1012.12]
    assert (s.n, at(15)[1000.0].n) == (HOLD_MAX_TRIALS, HOLD_MAX_TRIALS)
    assert s.status == LoadStatus.BELOW_BY_MEAN and s.mean == pytest.approx(8.57, abs=0.01)
    assert not s.confident and s.held_by == 1000.0
    assert decide(spec, trials[:15]).load_ops_s not in (1000.0, 1012.12)
    # after its 170 ms trial the mean is 29.6 ms: above, the bracket [1000, 1012.12] is resolved, and the
    # next trial goes to certify the upper end where it is cheapest (1200 ops/s read 284 ms)
    assert at(22)[1012.12].status == LoadStatus.ABOVE_BY_MEAN
    d = decide(spec, trials[:22])
    assert d.load_ops_s == 1200.0 and "certify upper end" in d.reason, d


# The smoke fault test's valid trials up to its first model step (accf970's suite): (load, mean ms, p95 ms)
LAST_BISECTION_LOG = [(400, 0.65, 2.10), (400, 0.75, 1.90), (1600, 1433, 2230), (800, 2.30, 10.0), (800, 0.43, 1.53),
                      (1200, 277, 498), (1000, 1.46, 5.97), (1000, 74.8, 240), (1000, 0.66, 3.63)]


def test_no_model_step_when_the_next_bisection_ends_the_search_either_way():
    """Bracket [1000, 1200] at smoke's 15 % resolution: a trial at 1100 leaves [1000, 1100] or
    [1100, 1200], both within it. The picker's model step went to 1004.1 ops/s, then 1011.2 (a
    crawl along the edge that spent the rating's trials); now Binsearch's load is taken."""
    spec = RatingSpec(**PROFILES["smoke"]["spec"])
    trials = [TrialResult(mean_ms=m, p95_ms=p, achieved_rate=x).at(x, 2.0) for x, m, p in LAST_BISECTION_LOG]
    d = decide(spec, trials)
    assert d.load_ops_s == pytest.approx(1100.0) and "within the resolution: no model step" in d.reason, d
    fine = decide(dataclasses.replace(spec, resolution=0.05), trials)   # 1100 could leave a 9 % bracket
    assert fine.reason.startswith("local: model step 1: mm1 fit") and fine.load_ops_s == pytest.approx(1004.04, abs=0.01)
