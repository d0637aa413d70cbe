"""Rating params: checks naming the parameter, profile defaults and overrides, rating ids."""
from __future__ import annotations

import dataclasses
import json

import pytest

from workbench.config.vocabulary import MAX_TRIAL_TASKS
from workbench.params.plan import PARAMS, ParamError, RatingPlan, plan_from_params, rating_id_for


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
    # goals a trial cannot rate against: below fstress's 1 µs, a p95 bound under the mean goal,
    # longer than smoke's 2 s trial
    ({"r_sat_ms": 1e-300}, r"r_sat_ms: 1e-300 ms is below 0.001 ms"),
    ({"goals_ms": [0.0005]}, r"goals_ms: 0.0005 ms is below 0.001 ms"),
    ({"r_sat_ms": 40, "l_sat_ms": 10}, r"l_sat_ms: the p95 bound 10 ms is below its mean goal 40 ms"),
    ({"goals_ms": [80], "goals_l_sat_ms": [50]}, r"goals_l_sat_ms: the p95 bound 50 ms is below .* 80 ms"),
    ({"profile": "smoke", "r_sat_ms": 2500, "l_sat_ms": 5000},
     r"r_sat_ms: 2500 ms is longer than a trial \(runlength_s 2 s\)"),
])
def test_bad_params_are_named(params, match):
    with pytest.raises(ParamError, match=match):
        plan_from_params(params, "r1")


def test_goals_ms_param_reaches_the_spec_and_airflow_validates_the_same_schema():
    plan = plan_from_params({"profile": "smoke", "r_sat_ms": 30, "goals_ms": [80, 10]}, "r1")
    assert plan.rating_spec().goals == (10.0, 30.0, 80.0) and plan.rating_spec().r_sat_ms == 30
    assert RatingPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    from airflow.sdk import Param                  # the DAG's form checks the same schema
    from airflow.sdk.exceptions import ParamValidationError
    assert Param(**PARAMS["goals_ms"]).resolve([20, 80.5]) == [20, 80.5]
    for bad, why in (([0], "exclusiveMinimum"), (["20"], "is not of type 'number'"), (list(range(1, 9)), "too long")):
        with pytest.raises(ParamValidationError, match=why):
            Param(**PARAMS["goals_ms"]).resolve(bad)


def test_each_goal_may_have_its_own_l_sat():
    """goals_l_sat_ms: the p95 goal of each goals_ms goal (null = l_sat_ms), through Params and the CLI."""
    plan = plan_from_params({"profile": "smoke", "goals_ms": [80, 10], "goals_l_sat_ms": [500, None],
                                      "l_sat_ms": 900}, "r1")
    spec = plan.rating_spec()
    assert [spec.l_sat_for(g) for g in spec.goals] == [900.0, 900.0, 500.0]       # goals 10, 40, 80 ms
    with pytest.raises(ParamError, match="goals_l_sat_ms: 1 L_sat for 2 goals_ms goal"):
        plan_from_params({"profile": "smoke", "goals_ms": [80, 10], "goals_l_sat_ms": [500]}, "r1")
    from airflow.sdk import Param
    assert Param(**PARAMS["goals_l_sat_ms"]).resolve([500, None]) == [500, None]
    from workbench.cli import r_sat_goals
    assert r_sat_goals("40/1000,20,80/300") == {"r_sat_ms": 40.0, "goals_ms": [20.0, 80.0], "l_sat_ms": 1000.0,
                                                "goals_l_sat_ms": [None, 300.0]}
    assert r_sat_goals("40,20") == {"r_sat_ms": 40.0, "goals_ms": [20.0]}


def test_plan_takes_profile_defaults_and_overrides():
    plan = plan_from_params({"profile": "smoke", "memory_mb": 256, "runlength_s": 2}, "r1")
    assert plan.factors["memory_mb"] == 256 and plan.factors["fs"] == "ext4"
    assert plan.spec["runlength_s"] == 2 and plan.spec["runlength_policy"] == "fixed"
    assert plan.spec["width"] == 0.5 and plan.rating_spec().max_trials <= MAX_TRIAL_TASKS
    assert RatingPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    assert rating_id_for("rate_peak", "manual__2026-11-22T05:00:00+00:00") == \
        "rate_peak__manual__2026-11-22T05_00_00_00_00"


CUSTOM = "base = web_server\nname = my_web\nfile_popularity = zipf:0.6\n"


def test_a_custom_workload_text_is_the_plan_s_workload_and_its_file(tmp_path):
    plan = plan_from_params({"workload_text": CUSTOM, "read_size_kb": 16}, "r1")
    assert plan.workload == "custom" and plan.workload_factors == {"read_size_kb": 16}
    assert plan.workload_name() == "custom (read_size_kb=16)"
    assert plan.workload_text.startswith(CUSTOM) and plan.workload_text.endswith("read_size = 16K\n")
    assert RatingPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    plan = dataclasses.replace(plan, workdir=str(tmp_path))
    path = plan.workload_file()                        # what the harness gives fstress
    assert path.startswith(str(tmp_path / "workload" / "custom-")) and path.endswith(".wl")
    assert open(path).read() == plan.workload_text == plan.workload_source()
    assert plan.workload_file() == path                # the same text, the same file


def test_a_canned_workload_keeps_its_name_and_stores_its_file():
    plan = plan_from_params({"workload": "genomics", "workload_text": " \n"}, "r1")   # an emptied field
    assert plan.workload_text == "" and plan.workload_file() == "genomics"
    assert "name = genomics" in plan.workload_source() and "SPECstorage" in plan.workload_source()


@pytest.mark.parametrize("params,match", [
    ({"workload_text": "base = ../x.wl\n"}, r"workload_text line 1: base '../x.wl' is not allowed"),
    ({"zipf_alpha": 5}, r"zipf_alpha: 5 is out of range"),
    ({"read_size_kb": 8.5}, r"read_size_kb: expected integer"),
    ({"mix_read_pct": 70, "mix_write_pct": 40}, r"mix_read_pct \+ mix_write_pct: the shares sum to 110"),
])
def test_bad_workload_params_are_named(params, match):
    with pytest.raises(ParamError, match=match):
        plan_from_params(params, "r1")


def test_workload_factors_on_a_workload_file_are_refused(tmp_path):
    wl = tmp_path / "mine.wl"
    wl.write_text("mix = read:1\n")
    plan = plan_from_params({"workload": str(wl)}, "r1", workload_files=True)
    assert plan.workload == str(wl) and plan.workload_source() == "mix = read:1\n"
    with pytest.raises(ParamError, match=r"zipf_alpha: workload factors apply to a canned workload"):
        plan_from_params({"workload": str(wl), "zipf_alpha": 1.0}, "r1", workload_files=True)


def test_a_resumed_rating_must_have_the_same_workload_text(tmp_path):
    from workbench.store.local import LocalStore
    from workbench.params.plan import resumable_plan
    store = LocalStore(tmp_path / "store")
    store.ensure_bucket()
    plan = plan_from_params({"workload_text": CUSTOM}, "r1")
    store.put_json(store.rating_key("r1", "spec.json"), plan.to_dict())
    other = plan_from_params({"workload_text": CUSTOM + "read_size = 4K\n"}, "r1")
    with pytest.raises(ParamError, match="with another workload_text"):
        resumable_plan(store, other, tmp_path / "work")

