"""Trials judged not steady (controller.steadiness, issue 15 item 2), with hand-built trial logs:
excluded from their load's statistics, re-run at the same load (longer after a long warm-up), at
most max_unsteady_reruns times per load; "short" and missing verdicts change nothing."""
from __future__ import annotations

import dataclasses

import pytest

from workbench.controller.decide import NextTrial, decide
from workbench.controller.policy import LinearPolicy, LocalPolicy
from workbench.controller.spec import RatingSpec
from workbench.controller.steadiness import excluding_not_steady, rerun_runlength_s
from workbench.controller.trial import TrialResult
from workbench.measure.trialjson import harness_result

LOAD = 100.0
SPEC = RatingSpec(r_sat_ms=40.0, width=0.1, confidence=0.9, accuracy=0.8, first_load=LOAD,
                  runlength_s=10.0, runlength_min_s=5.0, runlength_max_s=15.0, policy="binsearch")

STALL = {"verdict": "stall", "warmup_intervals": 0, "intervals": 10, "stall_intervals": [6, 7],
         "mk_tau": 0.1, "mk_p": 0.6}
RISE_REASON = "not steady: trend up (Mann–Kendall τ 1.00, p 5.5e-07; a rise from a low start of 3 intervals, judged whole)"
STEADY = {"verdict": "steady", "warmup_intervals": 1, "intervals": 9, "mk_tau": 0.0, "mk_p": 0.9}


def trial(mean_ms: float, steady: dict | None, load: float = LOAD, runlength_s: float = 10.0) -> TrialResult:
    raw = None if steady is None else {"steady": steady}
    return TrialResult(mean_ms=mean_ms, p95_ms=2 * mean_ms, achieved_rate=load, load_ops_s=load,
                       runlength_s=runlength_s, raw=raw)


def test_a_not_steady_trial_is_rerun_at_its_load_with_the_same_runlength():
    d = decide(SPEC, [trial(10.0, STEADY), trial(300.0, STALL)])
    assert isinstance(d, NextTrial)
    assert d.load_ops_s == LOAD and d.runlength_s == 10.0
    assert d.reason == "re-run not steady: stall (interval 6, 7)"


def test_a_long_warmup_makes_the_rerun_longer_up_to_the_max_runlength():
    late = {**STALL, "verdict": "trend down", "warmup_intervals": 3, "intervals": 7, "mk_tau": -0.9, "mk_p": 0.001}
    d = decide(SPEC, [trial(10.0, STEADY), trial(60.0, late)])
    assert isinstance(d, NextTrial) and d.load_ops_s == LOAD
    assert d.runlength_s == 15.0                               # 2 × 10 s, capped at runlength_max_s
    assert "trend down (Mann–Kendall τ -0.90, p 0.001; warm-up 3 of 10 intervals)" in d.reason
    # below WARMUP_SHARE (2 of 10 < 25 %): the same runlength; far below the cap: doubled
    assert rerun_runlength_s(SPEC, trial(60.0, {**late, "warmup_intervals": 2, "intervals": 8})) == 10.0
    assert rerun_runlength_s(SPEC, trial(60.0, late, runlength_s=5.0)) == 10.0
    # a runlength already above the cap is never shortened
    assert rerun_runlength_s(SPEC, trial(60.0, late, runlength_s=20.0)) == 20.0
    # a rise from a low start is judged whole (stats.steady): no warm-up, the same runlength
    rise = {"verdict": "trend up", "warmup_intervals": 0, "intervals": 10, "low_start": 5, "mk_tau": 1.0,
            "mk_p": 5.5e-7}
    d = decide(SPEC, [trial(10.0, STEADY), trial(35.0, {**rise, "first_ms": 6.2})])
    assert d.runlength_s == 10.0 and d.reason == ("re-run not steady: trend up (Mann–Kendall τ 1.00, p 5.5e-07; "
                                                  "a rise from a low start of 5 intervals, judged whole)"), d


def test_a_trend_whose_change_is_under_the_region_s_half_width_counts_without_a_rerun():
    # a real quick rating (make run, 2026-11-28) re-ran a trial at 3600 ops/s for R_sat 40 ms: +0.63 ms
    # over 10 s (τ 0.83, p 0.00085); a change under s·R_sat = 4 ms cannot move the load across the region
    drift = {"verdict": "trend up", "warmup_intervals": 1, "intervals": 9, "mk_tau": 0.83, "mk_p": 0.00085,
             "trend_change_ms": 0.63}
    log = [trial(10.0, STEADY), trial(0.85, drift)]
    assert excluding_not_steady(SPEC, log)[1] == {}
    assert not decide(SPEC, log).reason.startswith("re-run")
    for change in (4.0, -4.0, 12.5):                  # at or past s·R_sat (either way): excluded, re-run
        log = [trial(10.0, STEADY), trial(30.0, {**drift, "trend_change_ms": change})]
        assert list(excluding_not_steady(SPEC, log)[1]) == [1], change
        d = decide(SPEC, log)
        assert d.reason.startswith("re-run not steady: trend up") and f"{change:+.3g} ms" in d.reason, d
    # a stall or a backlog beside the trend: excluded whatever the change
    for beside in ({"stall_intervals": [4]}, {"backlog": True}):
        assert list(excluding_not_steady(SPEC, [trial(0.85, {**drift, **beside})])[1]) == [0], beside
    # the lowest goal decides: 0.63 ms is material for none, 3 ms is for the 20 ms goal (2 ms)
    two = dataclasses.replace(SPEC, goals_ms=(20.0, 40.0))
    assert excluding_not_steady(two, [trial(30.0, {**drift, "trend_change_ms": 3.0})])[1] != {}
    assert excluding_not_steady(two, [trial(30.0, drift)])[1] == {}


def test_a_stall_or_backlog_whose_median_interval_is_above_every_goal_counts():
    # past the wall the whitened test may read no trend, and the spikes a stall: saturated either way
    for verdict in ("stall", "backlog"):
        above = {**STALL, "verdict": verdict, "median_ms": 85.0}
        assert excluding_not_steady(SPEC, [trial(10.0, STEADY), trial(109.0, above)])[1] == {}, verdict
        below = {**above, "median_ms": 30.0}      # the median below R_sat: the stall may be what lifts it
        assert list(excluding_not_steady(SPEC, [trial(10.0, STEADY), trial(109.0, below)])[1]) == [1], verdict
    assert list(excluding_not_steady(SPEC, [trial(300.0, STALL)])[1]) == [0]      # no median recorded


def test_a_rise_overloaded_from_its_first_interval_counts_without_a_rerun():
    # 4800 ops/s on the quick profile's server: 437 → 2854 ms; its first second already > 4·R_sat
    spec = dataclasses.replace(SPEC, policy=LocalPolicy(probe_share=None))
    rise = {"verdict": "trend up", "warmup_intervals": 0, "intervals": 10, "low_start": 5, "mk_tau": 1.0,
            "mk_p": 5.5e-7, "first_ms": 437.0}
    log = [trial(10.0, STEADY), trial(1700.0, rise, load=2 * LOAD)]
    assert excluding_not_steady(spec, log)[1] == {}
    d = decide(spec, log)
    assert isinstance(d, NextTrial) and d.load_ops_s < 2 * LOAD and not d.reason.startswith("re-run"), d


def test_a_rise_from_a_low_start_counts_once_its_mean_is_above_every_goal():
    # 4400 ops/s on the quick profile's server: 1.9 → 1092 ms in 12 s, mean 599 ms (R_sat 50 ms)
    rise = {"verdict": "trend up", "warmup_intervals": 0, "intervals": 12, "low_start": 3, "mk_tau": 1.0,
            "mk_p": 5.5e-7, "first_ms": 1.9}
    for policy in ("binsearch", LocalPolicy(probe_share=None)):        # far_factor off and on
        spec = dataclasses.replace(SPEC, policy=policy)
        log = [trial(10.0, STEADY), trial(599.0, rise, load=2 * LOAD)]
        assert excluding_not_steady(spec, log)[1] == {}, policy
        d = decide(spec, log)
        assert isinstance(d, NextTrial) and not d.reason.startswith("re-run"), d
    # above R_sat but not above every goal: for the 80 ms goal it may be a transient, re-run
    goals = dataclasses.replace(SPEC, goals_ms=(80.0,))
    assert max(goals.goals) == 80.0
    assert excluding_not_steady(goals, [trial(10.0, STEADY), trial(60.0, rise)])[1] == {1: RISE_REASON}
    # a rise that stays below R_sat is a transient until its re-runs say otherwise
    assert excluding_not_steady(SPEC, [trial(10.0, STEADY), trial(39.0, rise)])[1] == {1: RISE_REASON}
    # a mean exactly at R_sat is not above it
    assert excluding_not_steady(SPEC, [trial(10.0, STEADY), trial(40.0, rise)])[1] == {1: RISE_REASON}


def test_a_not_steady_trial_is_not_counted_in_the_mean():
    log = [trial(10.0, STEADY), trial(500.0, STALL), trial(11.0, STEADY)]
    # load 100 below R_sat on its two steady trials: the search moves on (with the stall: an open load)
    d = decide(SPEC, log)
    assert isinstance(d, NextTrial) and d.load_ops_s != LOAD
    res = decide(dataclasses.replace(SPEC, max_trials=3), log).result
    assert res.mean_ms_at_peak == pytest.approx(10.5) and res.n_trials_at_peak == 2
    assert res.n_not_steady == 1 and res.n_invalid == 0
    assert res.not_steady == {1: "not steady: stall (interval 6, 7)"}
    assert res.to_dict()["not_steady"] == {"1": "not steady: stall (interval 6, 7)"}
    assert [t.valid for t in res.trials] == [True, False, True]          # as decide read the log


def test_at_most_max_unsteady_reruns_per_load_then_the_load_is_judged_on_all_its_trials():
    backlog = {"verdict": "backlog", "warmup_intervals": 0, "intervals": 10, "outstanding_at_stop": 900,
               "backlog_ratio": 8.0}
    log = [trial(90.0, backlog), trial(10.0, STEADY), trial(95.0, backlog)]
    d = decide(SPEC, log)                  # 2 not steady (= the bound, steady trials between): re-run
    assert isinstance(d, NextTrial) and d.load_ops_s == LOAD
    assert d.reason == "re-run not steady: backlog (900 calls outstanding at the stop, 8.0× Little's L)"
    log.append(trial(100.0, backlog))      # the third: no more re-runs; all four trials count
    _, excluded = excluding_not_steady(SPEC, log)
    assert excluded == {}
    res = decide(dataclasses.replace(SPEC, max_trials=4), log).result
    assert res.n_not_steady == 0 and res.n_trials_at_peak == 4
    assert res.mean_ms_at_peak == pytest.approx((90 + 10 + 95 + 100) / 4)
    # the bound is per load: a not-steady trial at another load is re-run again
    d = decide(SPEC, [*log, trial(50.0, STALL, load=60.0)])
    assert isinstance(d, NextTrial) and d.load_ops_s == 60.0 and d.reason.startswith("re-run not steady")


def test_short_and_missing_verdicts_and_a_zero_bound_change_nothing():
    base = [trial(10.0, STEADY), trial(11.0, STEADY)]
    want = decide(SPEC, base)
    for other in ({"verdict": "short", "warmup_intervals": 2, "intervals": 3}, None, {"verdict": "no series"}):
        log = [trial(10.0, STEADY), trial(11.0, other)]
        assert decide(SPEC, log) == want
    stalled = [trial(10.0, STEADY), trial(11.0, STALL)]
    assert decide(dataclasses.replace(SPEC, max_unsteady_reruns=0), stalled) == want


def test_an_invalid_trial_is_not_also_counted_as_not_steady():
    bad = dataclasses.replace(trial(10.0, STALL), valid=False, reason="2 errors, 0 timeouts")
    d = decide(SPEC, [bad])
    assert d.reason == "re-run invalid trial (2 errors, 0 timeouts)"
    assert excluding_not_steady(SPEC, [bad])[1] == {}


def test_a_harness_failure_after_a_not_steady_trial_reruns_it_as_before():
    late = {**STALL, "warmup_intervals": 4, "intervals": 6}
    d = decide(SPEC, [trial(300.0, late), harness_result(LOAD, 20.0, "load1 unreachable")])
    assert isinstance(d, NextTrial) and (d.load_ops_s, d.runlength_s) == (LOAD, 15.0)
    assert d.reason.startswith("re-run after a harness failure (load1 unreachable): re-run not steady: stall")


def test_excluded_trials_count_toward_the_invalid_streak():
    """max_invalid_per_load in a row at one load (not steady or invalid) make it unmeasurable; the
    bound on re-runs is kept below it so that not-steady trials alone never do."""
    bad = dataclasses.replace(trial(10.0, None), valid=False, reason="2 errors, 0 timeouts")
    log = [trial(20.0, STEADY, load=50.0), trial(20.0, STEADY, load=50.0),
           bad, trial(300.0, STALL), trial(300.0, STALL)]
    d = decide(SPEC, log)
    assert isinstance(d, NextTrial) and 50.0 < d.load_ops_s < LOAD, d     # below the unmeasurable load
    assert decide(SPEC, log[:-1]).reason.startswith("re-run not steady")
    with pytest.raises(ValueError, match="max_unsteady_reruns"):
        RatingSpec(policy="binsearch", max_invalid_per_load=2, max_unsteady_reruns=2)
