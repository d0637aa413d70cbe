"""Harness failures (issue 13): no sample of the server, re-run at the same load and runlength,
never one of the server's invalid trials; they cost budget and trials, and a harness that keeps
failing stops the rating with a reason that says so.

The simulated server is called only for the trials the harness really ran, so the server's
samples — and hence every statistic — are those of the same rating without the failures."""
from __future__ import annotations

import dataclasses
import math

import pytest

from workbench.controller.decide import Done, NextTrial, decide, find_peak
from workbench.controller.policy import LinearPolicy, LocalPolicy
from workbench.controller.spec import RatingSpec
from workbench.controller.trial import TrialResult
from workbench.measure.simulated import SimulatedServer
from workbench.measure.trialjson import harness_result


def _failing(server: SimulatedServer, fail_at: set[int]):
    """measure() that fails as the harness on its calls number `fail_at` (0-based) without
    touching the server; every other call is the server's next trial."""
    calls = {"n": 0}

    def measure(load, runlength):
        i = calls["n"]
        calls["n"] += 1
        if i in fail_at:
            return harness_result(load, runlength, f"harness: load1: Run fstress unreachable: call {i}")
        return server.measure(load, runlength)
    return measure


def _server_trials(res):
    return [t for t in res.trials if not t.harness_failure]


SPECS = {
    "binsearch": RatingSpec(policy="binsearch", r_sat_ms=40, width=0.1, confidence=0.9, accuracy=0.8, first_load=100,
                            runlength_s=60, resolution=0.01),
    "safeguarded": RatingSpec(r_sat_ms=40, width=0.1, confidence=0.9, accuracy=0.8, first_load=100,
                              runlength_s=60, policy="safeguarded", resolution=0.01),
    "model": RatingSpec(r_sat_ms=40, width=0.1, confidence=0.9, accuracy=0.8, first_load=100,
                        runlength_s=60, policy="model", resolution=0.01),
    "adaptive": RatingSpec(policy="binsearch", r_sat_ms=40, width=0.1, confidence=0.9, accuracy=0.8, first_load=100,
                           runlength_s=60, runlength_policy="adaptive", runlength_min_s=20,
                           runlength_max_s=300, trial_overhead_s=10, resolution=0.01),
    "strawman": RatingSpec(r_sat_ms=40, policy=LinearPolicy(trials=3), first_load=150, runlength_s=30),
}


@pytest.mark.parametrize("policy", sorted(SPECS))
@pytest.mark.parametrize("seed", [1, 7])
def test_harness_failures_change_no_statistic(policy, seed):
    spec = SPECS[policy]
    base = find_peak(spec, SimulatedServer(capacity_ops_s=1000, seed=seed).measure)
    assert base.n_trials >= 6
    fail_at = {0, 3, 4, base.n_trials // 2, base.n_trials // 2 + 2}      # incl. two in a row
    res = find_peak(spec, _failing(SimulatedServer(capacity_ops_s=1000, seed=seed), fail_at))
    # the same server samples, the same result
    assert _server_trials(res) == base.trials
    assert res.peak_rate == base.peak_rate and res.converged == base.converged
    assert res.bracket == base.bracket and res.peak_rate_ci == base.peak_rate_ci
    assert res.mean_ms_ci == base.mean_ms_ci and res.n_loads == base.n_loads
    assert res.reason == base.reason
    # counted apart: not the server's invalid trials, but trials and cost
    assert res.n_harness == len(fail_at) and res.n_invalid == base.n_invalid
    assert res.n_trials == base.n_trials + len(fail_at)
    extra = sum(float(t.runlength_s) + spec.trial_overhead_s for t in res.trials if t.harness_failure)
    assert res.cost_s == pytest.approx(base.cost_s + extra)
    # each failure is re-run at the same load and runlength
    for i, t in enumerate(res.trials[:-1]):
        if t.harness_failure:
            nxt = res.trials[i + 1]
            assert (nxt.load_ops_s, nxt.runlength_s) == (t.load_ops_s, t.runlength_s)


def test_harness_failures_between_server_invalid_trials_do_not_break_the_invalid_run():
    """A load past the generator's ceiling: its invalid trials (the server's) make it unmeasurable
    after max_invalid_per_load in a row, harness failures between them or not."""
    spec = RatingSpec(policy="binsearch", r_sat_ms=40, width=0.1, confidence=0.9, accuracy=0.8, first_load=100,
                      runlength_s=60, resolution=0.01)

    def sim():
        return SimulatedServer(capacity_ops_s=2000, seed=3, generator_max_ops_s=700)
    base = find_peak(spec, sim().measure)
    assert base.n_invalid >= spec.max_invalid_per_load
    first_invalid = next(i for i, t in enumerate(base.trials) if not t.valid)
    fail_at = {first_invalid + 1, first_invalid + 3}         # calls between the invalid trials
    res = find_peak(spec, _failing(sim(), fail_at))
    assert _server_trials(res) == base.trials
    assert res.peak_rate == base.peak_rate and res.reason == base.reason
    assert res.n_invalid == base.n_invalid and res.n_harness == 2


def test_the_decision_after_a_harness_failure_is_the_one_before_it():
    spec = SPECS["adaptive"]
    log = find_peak(dataclasses.replace(spec, max_trials=7), SimulatedServer(seed=2).measure).trials
    before = decide(spec, log)
    assert isinstance(before, NextTrial)
    failed = harness_result(before.load_ops_s, before.runlength_s, "harness: sut1: gather unreachable: ssh")
    after = decide(spec, log + [failed])
    assert isinstance(after, NextTrial)
    assert (after.load_ops_s, after.runlength_s) == (before.load_ops_s, before.runlength_s)
    assert after.reason == f"re-run after a harness failure ({failed.reason}): {before.reason}"


def test_a_harness_that_keeps_failing_stops_the_rating_saying_why():
    spec = SPECS["binsearch"]
    msg = "harness: load1: Run fstress unreachable: Failed to connect to the host via ssh"
    # from the start: no λ* at all
    res = find_peak(spec, lambda load, r: harness_result(load, r, msg))
    assert not res.converged and math.isnan(res.peak_rate)
    assert res.reason == f"harness failing: 3 harness failures in a row ({msg})"
    assert res.n_trials == res.n_harness == spec.max_harness_in_row and res.n_invalid == 0
    assert res.n_loads == 0
    d = res.to_dict()
    assert [t["outcome"] for t in d["trials"]] == ["harness"] * 3 and d["n_harness"] == 3
    # mid-rating: the best λ* the server's trials give, unconverged
    server = SimulatedServer(capacity_ops_s=1000, seed=4)
    res = find_peak(spec, _failing(server, set(range(8, 100))))
    assert not res.converged and res.reason.startswith("harness failing: 3 harness failures in a row")
    assert res.n_trials == 8 + 3 and res.n_harness == 3 and res.bracket[0] > 0
    # two in a row, then a good trial: the count starts again
    spec2 = dataclasses.replace(spec, max_harness_in_row=2)
    res = find_peak(spec2, _failing(SimulatedServer(seed=5), {2, 4, 6, 8}))
    assert res.converged and res.n_harness == 4, res.reason


def test_harness_failures_cost_budget_and_trials():
    spec = dataclasses.replace(SPECS["binsearch"], budget_s=6 * 60, max_harness_in_row=10)
    base = find_peak(spec, SimulatedServer(seed=1).measure)
    assert base.reason.startswith("budget exhausted") and base.n_trials == 6
    res = find_peak(spec, _failing(SimulatedServer(seed=1), {1, 2}))
    assert res.n_trials == 6 and res.n_harness == 2 and len(_server_trials(res)) == 4
    assert res.reason.startswith("budget exhausted")
    spec = dataclasses.replace(SPECS["binsearch"], max_trials=5, max_harness_in_row=10)
    res = find_peak(spec, _failing(SimulatedServer(seed=1), {0}))
    assert res.n_trials == 5 and res.reason == "max_trials (5) exhausted"


def test_trial_result_outcome_and_old_records():
    ok = TrialResult(mean_ms=3.0, p95_ms=5.0, achieved_rate=100.0, load_ops_s=100, runlength_s=5)
    bad = dataclasses.replace(ok, valid=False, reason="3 errors, 0 timeouts")
    h = harness_result(100, 5, "harness: x")
    assert (ok.outcome, bad.outcome, h.outcome) == ("measured", "invalid", "harness")
    assert h.to_dict()["outcome"] == "harness" and h.to_dict()["harness_failure"] is True
    assert TrialResult.from_dict(h.to_dict()) == h
    old = {k: v for k, v in bad.to_dict().items() if k not in ("harness_failure", "outcome")}
    assert TrialResult.from_dict(old) == bad and TrialResult.from_dict(old).outcome == "invalid"
    with pytest.raises(ValueError, match="never valid"):
        TrialResult(mean_ms=1.0, p95_ms=1.0, achieved_rate=1.0, valid=True, harness_failure=True)
    with pytest.raises(ValueError, match="max_harness_in_row"):
        RatingSpec(policy="binsearch", max_harness_in_row=0)
    assert isinstance(decide(SPECS["binsearch"], [h] * 3), Done)
