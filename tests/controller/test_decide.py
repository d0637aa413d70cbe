"""decide (Algorithm 2 decision cases, invalid trials, stop rules) and find_peak."""
from __future__ import annotations

import dataclasses

import pytest
from helpers import mm1

from workbench.controller.decide import Done, NextTrial, decide, find_peak
from workbench.controller.spec import RatingSpec
from workbench.controller.summary import summarize
from workbench.controller.trial import TrialResult
from workbench.measure.simulated import SimulatedServer


def T(mean, load, r=180.0, valid=True, p95=None, reason=""):
    return TrialResult(mean_ms=mean, p95_ms=p95 if p95 is not None else 2 * mean,
                       achieved_rate=load, valid=valid, reason=reason).at(load, r)


SEND_LAG = "generator saturated: send-lag p99 52.7 ms > bound 10.000 ms"


def test_first_trials_two_per_load():
    spec = RatingSpec(policy="binsearch")
    d = decide(spec, [])
    assert isinstance(d, NextTrial) and d.load_ops_s == 50 and d.runlength_s == 180
    d = decide(spec, [T(5.0, 50)])
    assert d.load_ops_s == 50 and "first trials" in d.reason


def test_no_overlap_moves_to_next_load():
    d = decide(RatingSpec(policy="binsearch"), [T(5.0, 50), T(5.1, 50)])
    assert isinstance(d, NextTrial) and d.load_ops_s == 100 and "geometric" in d.reason


def test_overlap_without_accuracy_runs_more_trials_at_the_load():
    log = [T(5, 50), T(5, 50), T(30, 800), T(50, 800)]      # CI of [30, 50] overlaps [36, 44]
    d = decide(RatingSpec(policy="binsearch"), log)
    assert d.load_ops_s == 800 and "potential peak" in d.reason


@pytest.mark.parametrize("rule", ["overlap", "inside"])
def test_accuracy_reached_inside_region_stops(rule):
    log = [T(5, 50), T(5, 50)] + [T(m, 800) for m in (39.5, 40.5, 40.0, 40.2)]
    # no load above λ* measured: the interval's upper end is certified first (issue 30)
    d = decide(RatingSpec(policy="binsearch", stop_rule=rule), log)
    assert isinstance(d, NextTrial) and d.load_ops_s == 1000 and d.reason.startswith("certify upper end")
    log += [TrialResult(mean_ms=300.0, p95_ms=600.0, achieved_rate=900.0).at(1000, 180.0)]   # short of offered
    d = decide(RatingSpec(policy="binsearch", stop_rule=rule), log)
    assert isinstance(d, Done) and d.result.converged and d.result.peak_rate == 800
    assert d.result.peak_rate_ci == (50.0, 1000.0) and d.result.peak_rate_ci_level == 0.95
    assert d.result.accuracy >= 0.9 and d.result.mean_ms_ci[0] >= 36 and d.result.mean_ms_ci[1] <= 44


def test_overlap_is_not_inclusion():
    """Accurate CI overlapping the region but not inside it: the paper stops, the default does not."""
    log = [T(5, 400), T(5, 400)] + [T(m, 800) for m in (43, 45, 44, 46, 44.5, 45.5)]
    paper = decide(RatingSpec(policy="binsearch", stop_rule="overlap", first_load=400), log)
    assert isinstance(paper, Done) and paper.result.converged and paper.result.peak_rate == 800
    ours = decide(RatingSpec(policy="binsearch", first_load=400), log)
    assert isinstance(ours, NextTrial) and ours.load_ops_s != 800
    # the load is classified saturated (CI above R_sat) and the bracket is bisected
    assert ours.load_ops_s == pytest.approx(600)


def test_invalid_trial_is_rerun_and_never_counts():
    spec = RatingSpec(policy="binsearch")
    log = [T(5, 50), T(99, 50, r=180, valid=False, reason="generator_saturated")]
    d = decide(spec, log)
    assert d.load_ops_s == 50 and d.runlength_s == 180 and "re-run" in d.reason
    # with the invalid trial ignored there is still only one valid trial at 50
    d = decide(spec, log + [T(5.1, 50)])
    assert d.load_ops_s == 100
    s = summarize(spec, log + [T(5.1, 50)])
    assert s[0].n == 2 and s[0].mean == pytest.approx(5.05)


def test_repeated_invalid_trials_give_up():
    log = [T(5, 50)] + [T(5, 50, valid=False, reason="errors") for _ in range(3)]
    d = decide(RatingSpec(policy="binsearch"), log)
    assert isinstance(d, Done) and not d.result.converged and "invalid" in d.result.reason
    assert d.result.n_invalid == 3 and d.result.n_trials == 4


def test_an_unmeasurable_load_below_an_overloaded_one_sends_the_search_lower():
    """The CI failure of a seeded nightly: 6 trials at 900 ops/s of seconds each, then 3 invalid at
    the next step down. The search goes on below that load instead of ending unconverged."""
    spec = RatingSpec(policy="binsearch", first_load=900)
    log = [T(3000, 900), T(3100, 900)]
    step = decide(spec, log).load_ops_s
    assert step < 900
    log += [T(2700, step, valid=False, reason=SEND_LAG) for _ in range(3)]
    d = decide(spec, log)
    assert isinstance(d, NextTrial) and d.load_ops_s == pytest.approx(step / 2), d.reason
    assert f"{step:g} ops/s cannot be measured (generator saturated" in d.reason
    # measured below: the bracket is [step/2, 900], but nothing at or above `step` is offered again
    d = decide(spec, log + [T(5, step / 2), T(5.2, step / 2)])
    assert isinstance(d, NextTrial) and step / 2 < d.load_ops_s < step, d
    # the next load failing right after the first: the harness is suspect, the search ends
    d = decide(spec, log + [T(0, step / 2, valid=False, reason="3 errors, 0 timeouts") for _ in range(3)])
    assert isinstance(d, Done) and not d.result.converged
    assert d.result.reason.startswith(f"6 consecutive invalid trials, the last 3 at {step / 2:g} ops/s (3 errors")


def test_a_generator_ceiling_below_the_peak_ends_with_a_lower_bound():
    """No valid trial at ≥ 700 ops/s (the generator's ceiling); λ* of the server is 1900 ops/s."""
    ceiling = 700.0
    server = mm1(capacity=2000.0)
    offered = []

    def measure(load, r):
        offered.append(load)
        if load >= ceiling:
            return TrialResult(mean_ms=1.0, p95_ms=2.0, achieved_rate=load, valid=False, reason=SEND_LAG)
        return server(load, r)

    res = find_peak(RatingSpec(policy="binsearch"), measure)
    assert not res.converged
    assert res.reason.startswith("λ* ≥ ") and "cannot be measured (generator saturated" in res.reason
    lower = float(res.reason.split("≥ ")[1].split(" ops/s")[0])
    assert ceiling * (1 - 2 * RatingSpec(policy="binsearch").resolution) <= lower < ceiling
    failed = [x for x in offered if x >= ceiling]
    # each load at or above the ceiling was tried max_invalid_per_load times and never again
    assert sorted(set(failed), reverse=True) == list(dict.fromkeys(failed))
    assert all(failed.count(x) == RatingSpec(policy="binsearch").max_invalid_per_load for x in set(failed))
    assert all(max(offered[i:]) == x for i, x in enumerate(offered) if x >= ceiling)


def test_budget_exhausted():
    d = decide(RatingSpec(policy="binsearch", budget_s=400), [T(5, 50), T(5, 50)])
    assert isinstance(d, Done) and not d.result.converged and "budget" in d.result.reason
    assert d.result.cost_s == 360


def test_max_trials_exhausted():
    d = decide(RatingSpec(policy="binsearch", max_trials=4), [T(5, 50), T(5, 50), T(6, 100), T(6, 100)])
    assert isinstance(d, Done) and not d.result.converged and "max_trials" in d.result.reason


def test_per_load_cap_classifies_by_median_not_mean():
    # the concurrent-slot failure: one cold-start trial (316 ms) among 0.25 ms trials at 200
    # ops/s; the plain mean (79 ms) is above R_sat = 40 but the load is clearly unsaturated
    spec = RatingSpec(policy="binsearch", r_sat_ms=40, width=0.25, max_trials_per_load=4)
    cold = [T(316, 200), T(0.25, 200), T(0.25, 200), T(0.22, 200)]
    (s,) = summarize(spec, cold)
    assert s.mean > 40 and (s.status, s.side, s.confident) == ("below?", -1, False)
    d = decide(spec, cold)
    assert isinstance(d, NextTrial) and d.load_ops_s > 200
    # and symmetrically one fast trial among saturated ones does not make the load unsaturated
    hot = [T(48, 900), T(47, 900), T(1, 900), T(1, 900), T(49, 900)]
    (s,) = summarize(dataclasses.replace(spec, max_trials_per_load=5), hot)
    assert s.mean < 40 and s.status == "above?"


def test_overhead_counts_in_cost_and_budget():
    spec = RatingSpec(policy="binsearch", trial_overhead_s=60, budget_s=500)
    d = decide(spec, [T(5, 50), T(5, 50)])          # 2 × 240 = 480, next needs 240
    assert isinstance(d, Done) and d.result.cost_s == 480


def test_decide_is_pure_and_deterministic():
    spec = RatingSpec(policy="binsearch")
    log = [T(5, 50), T(5, 50), T(7, 100), T(7.1, 100)]
    copy = list(log)
    assert decide(spec, log) == decide(spec, log)
    assert log == copy


def test_trials_must_be_tagged():
    with pytest.raises(ValueError, match="load_ops_s"):
        decide(RatingSpec(policy="binsearch"), [TrialResult(mean_ms=1, p95_ms=2, achieved_rate=3)])


def test_find_peak_contract_fields():
    r = find_peak(RatingSpec(policy="binsearch"), mm1())
    assert r.converged and r.peak_rate == pytest.approx(950)
    lo, hi = r.bracket
    assert lo < 950 < hi and r.peak_rate_ci[0] <= 950 <= r.peak_rate_ci[1]
    assert r.n_trials == len(r.trials) and r.cost_s == 180 * r.n_trials
    assert all(t.load_ops_s is not None and t.runlength_s == 180 for t in r.trials)
    assert r.trace[-1][0] == r.cost_s and r.trace[-1][1] == pytest.approx(r.trials[-1].load_ops_s / 950)
    assert any(y == pytest.approx(1.0) for _, y in r.trace)          # the trials at λ* itself
    assert r.mean_ms_at_peak == pytest.approx(40) and r.accuracy == pytest.approx(1.0)
    # the mean at λ* is the mean of the valid trials at one named tested load
    at = [t.mean_ms for t in r.trials if t.valid and t.load_ops_s == r.mean_load_ops_s]
    assert len(at) == r.n_trials_at_peak > 0 and r.mean_ms_at_peak == pytest.approx(sum(at) / len(at))
    assert abs(r.mean_load_ops_s - r.peak_rate) <= min(abs(t.load_ops_s - r.peak_rate) for t in r.trials)
    assert r.per_goal[40.0].peak_rate == r.peak_rate
    d = r.to_dict()
    assert d["peak_rate"] == r.peak_rate and len(d["trials"]) == r.n_trials
    assert d["mean_load_ops_s"] == r.mean_load_ops_s


def test_find_peak_resumes_from_a_partial_log():
    spec = RatingSpec(policy="safeguarded")
    full = find_peak(spec, SimulatedServer(seed=4).measure)
    half = full.trials[: len(full.trials) // 2]
    srv = SimulatedServer(seed=4)
    for t in half:                                   # replay the same draws
        srv.measure(t.load_ops_s, t.runlength_s)
    resumed = find_peak(spec, srv.measure, trials=half)
    assert resumed.peak_rate == full.peak_rate and resumed.trials == full.trials


def test_find_peak_tags_untagged_results():
    seen = []
    r = find_peak(RatingSpec(policy="binsearch"), mm1(), on_trial=seen.append)
    assert seen == r.trials and seen[0].load_ops_s == 50


def test_latency_rule_binds_before_the_mean():
    srv = SimulatedServer(capacity_ops_s=800, base_ms=1, service_ms=20, noise=0.0)
    spec = RatingSpec(policy="binsearch", r_sat_ms=200, l_sat_ms=150)       # p95 crosses 150 ms well before R̄ = 200
    true = srv.true_peak_rate(200, 150)
    assert true < srv.true_peak_rate(200)
    r = find_peak(spec, srv.measure)
    assert r.converged and "latency" in r.reason
    assert r.bracket[0] <= true <= r.bracket[1]
    assert r.peak_rate == pytest.approx(true, rel=2e-3)


def test_p_sat_fraction_form_uses_the_reported_fraction():
    def measure(load, r):
        m = 2 / (1 - load / 1000) if load < 999 else 1e4
        frac = 1.0 if load < 700 else 0.5
        return TrialResult(mean_ms=m, p95_ms=1.0, achieved_rate=load, raw={"frac_within_l_sat": frac})
    r = find_peak(RatingSpec(policy="binsearch", p_sat=0.9, l_sat_ms=100), measure)
    assert r.converged and 690 <= r.peak_rate <= 700


def test_multi_goal_one_peak_per_goal_trials_reused():
    spec = RatingSpec(goals_ms=[20, 60], policy="safeguarded")
    r = find_peak(spec, mm1())
    assert set(r.per_goal) == {20.0, 40.0, 60.0} and r.converged
    for g, sub in r.per_goal.items():
        true = 1000 * (1 - 2 / g)
        assert sub.converged and sub.bracket[0] <= true <= sub.bracket[1]
        m = 2 / (1 - sub.peak_rate / 1000)
        assert g * 0.9 <= m <= g * 1.1
    alone = sum(find_peak(spec.for_goal(g), mm1()).n_trials for g in spec.goals)
    assert r.n_trials < alone                     # the opening loads are shared


def test_a_goal_with_its_own_l_sat_is_judged_by_its_percentile_rule():
    """Goal 80 ms with L_sat 60 ms (p95 = 3·R̄ in mm1): its p95 binds first, at R̄ = 20 ms, so its λ*
    is 1000·(1 − 2/20) = 900, below the 40 ms goal's 950 (L_sat 2000 ms: the mean binds)."""
    spec = RatingSpec(goals_ms=[80], goals_l_sat_ms=[60], policy="safeguarded")
    assert (spec.l_sat_for(40), spec.l_sat_for(80), spec.at_goal(40) is spec) == (2000.0, 60.0, True)
    r = find_peak(spec, mm1())
    low, main = r.per_goal[80.0], r.per_goal[40.0]
    assert r.converged and (low.l_sat_ms, main.l_sat_ms) == (60.0, 2000.0)
    assert low.bracket[0] <= 900 <= low.bracket[1] and main.bracket[0] <= 950 <= main.bracket[1], (low, main)
    assert low.peak_rate < main.peak_rate == r.peak_rate
    assert r.to_dict()["per_goal"]["80"]["l_sat_ms"] == 60.0
    with pytest.raises(ValueError, match="goals_l_sat_ms must be one L_sat per goals_ms goal"):
        RatingSpec(policy="binsearch", goals_ms=[80, 20], goals_l_sat_ms=[60])


def test_seed_trials_fix_the_sample_at_the_seed_load_only():
    # the nightly comparison sample: 6 valid trials at the seed load although a load is otherwise
    # classified after at most 2 (max_trials_per_load); other loads keep the cap
    srv = SimulatedServer(capacity_ops_s=1000, seed=7)
    spec = RatingSpec(policy="binsearch", r_sat_ms=40, width=0.5, confidence=0.8, accuracy=0.6, runlength_s=2.0,
                      max_trials_per_load=2, resolution=0.15, seed_load=900.0, seed_trials=6)
    r = find_peak(spec, srv.measure)
    loads = [t.load_ops_s for t in r.trials]
    assert loads[:6] == [900.0] * 6 and loads.count(900.0) == 6
    nxt = decide(spec, r.trials[:3])               # the pure decision after 3 seed trials
    assert isinstance(nxt, NextTrial) and nxt.load_ops_s == 900.0
    assert nxt.reason == "seed sample: trial 4 of 6 at the seed load"
    # (certifying the λ* interval may take a load to 3 trials: certifying.CERTIFY_MIN_TRIALS)
    assert all(loads.count(x) <= 3 for x in set(loads) - {900.0})
    base = find_peak(dataclasses.replace(spec, seed_trials=None), SimulatedServer(capacity_ops_s=1000, seed=7).measure)
    assert [t.load_ops_s for t in base.trials].count(900.0) <= 3
    with pytest.raises(ValueError, match="seed_trials"):
        RatingSpec(policy="binsearch", seed_trials=4)                       # no seed load
    with pytest.raises(ValueError, match="seed_trials"):
        RatingSpec(policy="binsearch", seed_load=900.0, seed_trials=1)


@pytest.mark.parametrize("throughput_rule", [False, True])
def test_a_seed_sample_of_min_trials_is_kept_at_a_seed_load_far_past_capacity(throughput_rule):
    # seed_trials 2 = min_trials: the seed load twice before it is classified, although one trial there
    # reads 60× R_sat (the far rule) and falls short of its offered rate (the throughput rule)
    policy = dict(name="local", throughput_rule=throughput_rule, probe_share=None)
    spec = RatingSpec(policy=policy, r_sat_ms=40, width=0.5, confidence=0.8, accuracy=0.6, runlength_s=2.0,
                      max_trials_per_load=2, resolution=0.15, seed_load=900.0, seed_trials=2, max_trials=20)
    r = find_peak(spec, SimulatedServer(capacity_ops_s=450, seed=7).measure)
    assert r.trials[0].mean_ms > 60 * 40
    assert [t.load_ops_s for t in r.trials[:3]] == [900.0, 900.0, pytest.approx(900.0 / 1.1)]
