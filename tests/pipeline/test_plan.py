"""Rating params: checks naming the parameter, profile defaults and overrides, rating ids."""
from __future__ import annotations

import json

import pytest

from workbench import pipeline
from workbench.config.vocabulary import MAX_TRIAL_TASKS


@pytest.mark.parametrize("params,match", [
    ({"workload": "nosuch"}, r"workload: 'nosuch' is not one of web_server"),
    ({"memory_mb": "lots"}, r"memory_mb: expected integer, got str"),
    ({"disks": 0}, r"disks: 0 is out of range \(≥ 1"),
    ({"memory_mb": 50}, r"memory_mb"),                          # below the role's 96 MiB floor
    ({"confidence": 1.5}, r"confidence: 1.5 is out of range"),
    ({"r_sat_ms": -1}, r"r_sat_ms: -1 is out of range \(> 0"),
    ({"max_trials": 41}, r"max_trials: 41 is out of range"),
    ({"sync": "yes"}, r"sync: expected boolean"),
    ({"seed_source": "load"}, r"seed_load: required"),
    ({"bogus": 1}, r"unknown parameter\(s\): bogus"),
    ({"goals_ms": 20}, r"goals_ms: expected array, got int"),
    ({"goals_ms": [20, "x"]}, r"goals_ms\[1\]: expected number, got str"),
    ({"goals_ms": [20, 0]}, r"goals_ms\[1\]: 0 is out of range \(> 0"),
    ({"goals_ms": []}, r"goals_ms: 0 items; 1 to 7 allowed"),
    ({"goals_ms": list(range(1, 9))}, r"goals_ms: 8 items; 1 to 7 allowed"),
    ({"goals_ms": [20, 20]}, r"goals_ms: 20 ms given twice"),
    ({"goals_ms": [40]}, r"goals_ms: 40 ms given twice \(r_sat_ms is 40 ms\)"),     # the profile's R_sat
])
def test_bad_params_are_named(params, match):
    with pytest.raises(pipeline.ParamError, match=match):
        pipeline.plan_from_params(params, "r1")


def test_goals_ms_param_reaches_the_spec_and_airflow_validates_the_same_schema():
    plan = pipeline.plan_from_params({"profile": "smoke", "r_sat_ms": 30, "goals_ms": [80, 10]}, "r1")
    assert plan.rating_spec().goals == (10.0, 30.0, 80.0) and plan.rating_spec().r_sat_ms == 30
    assert pipeline.RatingPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    from airflow.sdk import Param                  # the DAG's form checks the same schema
    from airflow.sdk.exceptions import ParamValidationError
    assert Param(**pipeline.PARAMS["goals_ms"]).resolve([20, 80.5]) == [20, 80.5]
    for bad, why in (([0], "exclusiveMinimum"), (["20"], "is not of type 'number'"), (list(range(1, 9)), "too long")):
        with pytest.raises(ParamValidationError, match=why):
            Param(**pipeline.PARAMS["goals_ms"]).resolve(bad)


def test_plan_takes_profile_defaults_and_overrides():
    plan = pipeline.plan_from_params({"profile": "smoke", "memory_mb": 256, "runlength_s": 2}, "r1")
    assert plan.factors["memory_mb"] == 256 and plan.factors["fs"] == "ext4"
    assert plan.spec["runlength_s"] == 2 and plan.spec["runlength_policy"] == "fixed"
    assert plan.spec["width"] == 0.5 and plan.rating_spec().max_trials <= MAX_TRIAL_TASKS
    assert pipeline.RatingPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    assert pipeline.rating_id_for("rate_peak", "manual__2026-11-22T05:00:00+00:00") == \
        "rate_peak__manual__2026-11-22T05_00_00_00_00"
