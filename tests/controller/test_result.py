"""PeakResult of several R_sat goals: one search until every goal is met, λ* with bracket and CI per
goal, one trial log in the stored result."""
from __future__ import annotations

import json

import pytest

from workbench.config.profiles import PROFILES
from workbench.controller.decide import Done, NextTrial, decide, find_peak
from workbench.controller.result import GOAL_FIELDS, PeakResult, goal_results
from workbench.controller.spec import RatingSpec
from workbench.controller.trial import TrialResult
from workbench.measure.simulated import SimulatedServer


def T(mean, load, r=180.0):
    return TrialResult(mean_ms=mean, p95_ms=2 * mean, achieved_rate=load).at(load, r)


# R_sat 40 is met at 800 ops/s (accurate CI inside [36, 44]); for R_sat 20 the bracket is (50, 800)
LOG = [T(5, 50), T(5.1, 50)] + [T(m, 800) for m in (39.5, 40.5, 40.0, 40.2)]
# a trial at 1600 ops/s completing half of what it was offered: the λ* interval's upper end (issue 30)
LOG.append(TrialResult(mean_ms=500.0, p95_ms=1000.0, achieved_rate=800.0).at(1600.0, 180.0))


def test_the_search_goes_on_after_the_headline_goal_until_every_goal_is_met():
    assert isinstance(decide(RatingSpec(policy="binsearch"), LOG), Done)
    d = decide(RatingSpec(policy="binsearch", goals_ms=[20]), LOG)
    assert isinstance(d, NextTrial) and d.reason.startswith("goal 20 ms: ") and 50 < d.load_ops_s < 800


def test_a_goal_the_budget_leaves_unmet_leaves_the_rating_unconverged():
    d = decide(RatingSpec(policy="binsearch", goals_ms=[20], budget_s=7 * 180), LOG)
    assert isinstance(d, Done)
    res = d.result
    assert not res.converged and res.reason.startswith("goal 20 ms: budget exhausted"), res.reason
    head, low = res.per_goal[40.0], res.per_goal[20.0]
    assert head.converged and head.peak_rate == res.peak_rate == 800 and not low.converged
    assert head.peak_rate_ci == (50.0, 1600.0) and head.peak_rate_ci_level == 0.95
    assert low.bracket == (50, 800) and low.peak_rate_ci[0] <= low.peak_rate <= low.peak_rate_ci[1]


def test_the_stored_result_has_one_trial_log_and_a_row_per_goal():
    res = find_peak(RatingSpec(goals_ms=[60, 20], policy="safeguarded"), SimulatedServer(seed=3).measure)
    d = json.loads(json.dumps(res.to_dict()))
    assert sorted(d["per_goal"]) == ["20", "40", "60"]
    assert all(set(g) == set(GOAL_FIELDS) for g in d["per_goal"].values())      # no trials, no trace
    assert len(d["trials"]) == d["n_trials"] == res.n_trials
    rows = goal_results(d)
    assert [r["r_sat_ms"] for r in rows] == [20, 40, 60]
    assert rows[1]["peak_rate"] == d["peak_rate"] and rows[1]["peak_rate_ci"] == d["peak_rate_ci"]
    assert goal_results({"r_sat_ms": 40, "peak_rate": 900.0})[0]["peak_rate"] == 900.0   # stored before goals


@pytest.mark.parametrize("seed", range(4))
def test_quick_profile_goals_are_ordered_and_cheaper_than_separate_ratings(seed):
    """The quick profile's spec (policy local, stop rule fit) on a noisy simulated server: λ* rises
    with R_sat, every goal converges, and the one log costs less than a rating per goal."""
    spec = RatingSpec(**{**PROFILES["quick"]["spec"], "goals_ms": (20.0, 80.0)})
    res = find_peak(spec, SimulatedServer(capacity_ops_s=950, seed=seed).measure)
    peaks = [res.per_goal[g].peak_rate for g in (20.0, 40.0, 80.0)]
    assert res.converged and peaks == sorted(peaks), (peaks, res.reason)
    for g, sub in res.per_goal.items():
        assert sub.converged and sub.peak_rate_ci[0] <= sub.peak_rate <= sub.peak_rate_ci[1], (g, sub.reason)
    alone = sum(find_peak(spec.for_goal(g), SimulatedServer(capacity_ops_s=950, seed=seed).measure).cost_s
                for g in spec.goals)
    assert res.cost_s < alone


def test_a_result_stored_without_policy_and_stop_rule_still_reads():
    """A result stored before PeakResult had `policy`, `stop_rule` and `per_goal` (fields as in
    tests/data/store_result.json) gives its goal's row; a PeakResult built without them names
    RatingSpec's defaults (the recommended policy, not binsearch)."""
    old = {"accuracy": 0.92, "bracket": [875.0, 900.0], "converged": True, "cost_s": 230.0,
           "mean_ms_at_peak": 40.7, "mean_ms_ci": [37.5, 43.9], "n_invalid": 0, "n_loads": 9,
           "n_trials": 23, "n_trials_at_peak": 4, "peak_rate": 898.9, "peak_rate_ci": [875.0, 1200.0],
           "r_sat_ms": 40.0, "reason": "bracket [875, 900] narrower than resolution 0.05"}
    (row,) = goal_results(json.loads(json.dumps(old)))
    assert set(row) == set(GOAL_FIELDS) and (row["peak_rate"], row["mean_load_ops_s"]) == (898.9, None)
    res = PeakResult(
        peak_rate=1.0, converged=True, reason="", bracket=(0.5, 2.0), peak_rate_ci=(0.5, 2.0),
        mean_ms_at_peak=40.0, mean_ms_ci=(39.0, 41.0), accuracy=0.95, n_loads=2, n_trials=4,
        cost_s=240.0,
    )
    default = RatingSpec()
    assert (res.policy, res.stop_rule) == (default.policy.name, default.stop_rule) == ("local", "fit")
    assert res.to_dict()["policy"] == "local"
