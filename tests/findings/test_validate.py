"""findings.validate: the great_expectations suite on real trial records (tests/data/validate_trials.json
holds 4 records of the sample web_server rating, histograms dropped)."""
from __future__ import annotations

import copy
import json
import math
import time
from pathlib import Path

import pytest

from workbench.findings.validate import TrialValidation, trials_frame, validate_trials

DATA = Path(__file__).resolve().parents[1] / "data" / "validate_trials.json"


@pytest.fixture
def records() -> list[dict]:
    return json.loads(DATA.read_text())


def _renumber(recs: list[dict]) -> list[dict]:
    return [dict(r, n=i) for i, r in enumerate(recs)]


def test_real_trials_pass(records):
    v = validate_trials(records)
    assert isinstance(v, TrialValidation)
    assert v.success, v.gx
    assert v.excluded == {}
    assert v.n_checked == len(records) == 4
    assert all(e["success"] for e in v.gx["expectations"])
    assert len(v.gx["expectations"]) >= 8


def test_frame_columns(records):
    df = trials_frame(records)
    assert list(df["n"]) == [r["n"] for r in records]
    # trial 19 of the sample: access 0.010118 vs target 0.01 etc. → worst op 0.0824 pp
    row = df[df["n"] == 19].iloc[0]
    assert row["mix_error_pp"] == pytest.approx(100 * abs(0.5491764705882353 - 0.55), rel=1e-9)
    assert row["achieved_fraction"] == pytest.approx(1.0)
    assert row["error_rate"] == 0.0


def test_low_achieved_rate_fails_the_suite_but_the_trial_is_kept_as_short(records):
    """A trial that completed fewer operations than offered measured an overloaded server: the suite
    names it, but it stays the controller's evidence of saturation (not excluded)."""
    recs = copy.deepcopy(records)
    recs[1]["achieved_rate"] = 0.91 * recs[1]["load_ops_s"]     # harness said valid; GX flags it
    v = validate_trials(recs)
    assert not v.success
    assert v.excluded == {} and v.short == {recs[1]["n"]: "gx: achieved 0.91 of offered < 0.95"}
    assert v.to_dict()["short"] == {str(recs[1]["n"]): "gx: achieved 0.91 of offered < 0.95"}


def test_threshold_is_a_parameter(records):
    recs = copy.deepcopy(records)
    recs[1]["achieved_rate"] = 0.91 * recs[1]["load_ops_s"]
    v = validate_trials(recs, min_achieved_fraction=0.90)
    assert v.excluded == {} and v.short == {} and v.success


def test_missing_and_negative_n_excluded(records):
    recs = copy.deepcopy(records)
    del recs[0]["n"]
    recs[2]["n"] = -3
    v = validate_trials(recs)
    assert not v.success
    assert v.excluded[-1] == "gx: trial id n missing or not a number (record 0 of the batch)"
    assert v.excluded[-3] == "gx: trial id n=-3 is negative (record 2 of the batch)"
    assert len(v.excluded) == 2


def test_duplicate_n_excluded(records):
    recs = copy.deepcopy(records)
    recs[3]["n"] = recs[2]["n"]
    v = validate_trials(recs)
    assert v.excluded == {recs[2]["n"]: f"gx: duplicate trial id n={recs[2]['n']}"}


def test_mix_error_excluded(records):
    recs = copy.deepcopy(records)
    mix = recs[2]["raw"]["mix_actual"]
    mix["getattr"], mix["read"] = 0.52, 0.31                  # 3 pp off on both ops
    v = validate_trials(recs)
    assert v.excluded == {recs[2]["n"]: "gx: op mix off target by 3 pp > 2 pp"}
    assert validate_trials(recs, max_mix_error_pp=3.5).success


def test_errors_excluded(records):
    recs = copy.deepcopy(records)
    recs[0]["errors"] = 5                                     # of 1000 operations
    v = validate_trials(recs)
    assert v.excluded == {recs[0]["n"]: "gx: error rate 0.005 > 0"}
    assert validate_trials(recs, max_error_rate=0.01).success


def test_harness_invalid_keeps_its_reason_and_is_not_rejudged(records):
    recs = copy.deepcopy(records)
    r = recs[3]
    r.update(valid=False, achieved_rate=0.5 * r["load_ops_s"], errors=7,
             reason="generator saturated: send lag 250 ms")
    v = validate_trials(recs)
    assert v.excluded == {r["n"]: "generator saturated: send lag 250 ms"}
    assert v.success          # GX itself found nothing: the rate/error checks skip harness-invalid rows


def test_harness_failure_without_raw(records):
    recs = copy.deepcopy(records)
    recs.append({"n": 99, "decision": "x", "mean_ms": 0.0, "p95_ms": 0.0, "achieved_rate": 0.0,
                 "valid": False, "reason": "harness: run fstress: host unreachable",
                 "load_ops_s": 900.0, "runlength_s": 5.0, "errors": 0, "ops_total": None, "raw": None})
    v = validate_trials(recs)
    assert v.excluded == {99: "harness: run fstress: host unreachable"}


def test_overloaded_timeouts_are_not_errors(records):
    """The harness accepts RPC timeouts of an overloaded server (above λ*); GX must agree."""
    recs = copy.deepcopy(records)
    r = recs[3]
    r["raw"]["timeouts"], r["errors"] = 4, 4
    r["reason"] = "overloaded: 4 timeouts, mean 120 ms >= 44 ms"
    assert validate_trials(recs).excluded == {}


def test_several_failures_on_one_trial_are_all_named(records):
    recs = copy.deepcopy(records)
    recs[0]["achieved_rate"] = 150.0
    recs[0]["errors"] = 10
    reason = validate_trials(recs).excluded[recs[0]["n"]]
    assert reason == "gx: achieved 0.75 of offered < 0.95; gx: error rate 0.01 > 0"


def test_gx_summary_is_json(records):
    recs = copy.deepcopy(records)
    recs[1]["achieved_rate"] = 1.0
    recs[2]["n"] = None
    d = validate_trials(recs).to_dict()
    back = json.loads(json.dumps(d, allow_nan=False))
    assert back["success"] is False
    assert set(back["excluded"]) == {"-3"} and set(back["short"]) == {str(recs[1]["n"])}
    types = {e["type"] for e in back["gx"]["expectations"]}
    assert {"expect_column_values_to_not_be_null", "expect_column_values_to_be_unique",
            "expect_column_values_to_be_between"} <= types
    failed = [e for e in back["gx"]["expectations"] if not e["success"]]
    assert {(e["kwargs"]["column"], tuple(e["unexpected_n"])) for e in failed} == {
        ("achieved_fraction", (recs[1]["n"],)), ("n", (-3,))}
    ach = next(e for e in back["gx"]["expectations"]
               if e["kwargs"]["column"] == "achieved_fraction" and "min_value" in e["kwargs"])
    assert ach["kwargs"]["min_value"] == 0.95 and ach["kwargs"]["row_condition"] == "harness_valid == True"
    assert "condition_parser" not in ach["kwargs"]


def test_empty_batch():
    v = validate_trials([])
    assert v.success and v.excluded == {} and v.n_checked == 0


def test_forty_trials_are_fast(records):
    recs = _renumber([copy.deepcopy(records[i % 4]) for i in range(40)])
    validate_trials(recs)                        # pays GX's import and first-use cost
    t0 = time.perf_counter()
    v = validate_trials(recs)
    elapsed_s = time.perf_counter() - t0
    assert v.success and v.n_checked == 40
    assert elapsed_s < 2.0, f"validating 40 trials took {elapsed_s:.2f} s"
    assert math.isfinite(v.elapsed_s)


def test_harness_failures_are_not_judged_nor_counted_as_server_trials(records):
    """A harness failure (no sample of the server) is listed apart, never excluded as the server's
    trial; an old record without the field is judged as before."""
    recs = _renumber(records + [dict(records[0], valid=False, harness_failure=True, outcome="harness",
                                     reason="harness: load1: Run fstress unreachable: ssh",
                                     mean_ms=0.0, p95_ms=0.0, achieved_rate=0.0, raw=None)])
    v = validate_trials(recs)
    assert v.success and v.excluded == {}
    assert v.harness == {4: "harness: load1: Run fstress unreachable: ssh"}
    assert v.n_checked == 4 and v.gx["n_trials"] == 5 and v.gx["n_harness"] == 1
    assert v.to_dict()["harness"] == {"4": "harness: load1: Run fstress unreachable: ssh"}
    old = _renumber(records + [dict(records[0], valid=False, reason="harness: x", raw=None)])
    v = validate_trials(old)
    assert v.excluded == {4: "harness: x"} and v.harness == {} and v.n_checked == 5
