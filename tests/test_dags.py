"""The three DAGs end to end with dag.test() on real Ganesha slots and a real MinIO (the `smoke`
profile: real but short ratings), plus the parameter checks that run before anything is touched."""
from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from workbench import pipeline
from workbench.config import paths
from workbench.config.vocabulary import CANNED_WORKLOADS, MAX_TRIAL_TASKS
from workbench.pipeline import leases
from workbench.pipeline import nightly, sweep

REPO = Path(__file__).resolve().parent.parent


# ----------------------------------------------------------------------------- params (no Airflow run)

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
])
def test_bad_params_are_named(params, match):
    with pytest.raises(pipeline.ParamError, match=match):
        pipeline.plan_from_params(params, "r1")


def test_plan_takes_profile_defaults_and_overrides():
    plan = pipeline.plan_from_params({"profile": "smoke", "memory_mb": 256, "runlength_s": 2}, "r1")
    assert plan.factors["memory_mb"] == 256 and plan.factors["fs"] == "ext4"
    assert plan.spec["runlength_s"] == 2 and plan.spec["runlength_policy"] == "fixed"
    assert plan.spec["width"] == 0.5 and plan.rating_spec().max_trials <= MAX_TRIAL_TASKS
    assert pipeline.RatingPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    assert pipeline.rating_id_for("rate_peak", "manual__2026-11-22T05:00:00+00:00") == \
        "rate_peak__manual__2026-11-22T05_00_00_00_00"


def test_dag_params_match_the_checked_table():
    dag = _dag("rate_peak")
    assert set(dag.params.keys()) == set(pipeline.PARAMS)
    assert dag.params.get_param("workload").schema["enum"] == list(CANNED_WORKLOADS)
    ids = {t.task_id for t in dag.tasks}
    assert {"validate", "lease_slot", "provision", "deploy", "gx_check", "summarise", "report", "publish",
            "teardown", "verdict"} <= ids
    assert {f"decide_{k}" for k in range(MAX_TRIAL_TASKS)} <= ids
    assert dag.get_task("teardown").trigger_rule == "all_done"
    assert dag.get_task("trial_0").pool == "workbench_sut"


def test_sweep_plan_orders_for_seeding_and_checks_factors():
    sw = sweep.plan_sweep({"workload": "web_server", "profile": "smoke",
                           "factors": {"memory_mb": [128, 256], "read_iops": [100, 200]}}, "sw")
    samples = [it["sample"] for it in sw["samples"]]
    assert len(samples) == 4 and samples[0] == {"memory_mb": 128, "read_iops": 100}
    # nearest-neighbour chain: consecutive samples differ in one factor
    for a, b in zip(samples, samples[1:]):
        assert sum(a[k] != b[k] for k in a) == 1
    assert [it["plan"]["rating_id"] for it in sw["samples"]] == [f"sw__s{i:02d}" for i in range(4)]
    with pytest.raises(pipeline.ParamError, match="unknown factor 'colour'"):
        sweep.plan_sweep({"factors": {"colour": [1, 2]}}, "sw")
    with pytest.raises(pipeline.ParamError, match="n_samples"):
        sweep.plan_sweep({"factors": {"memory_mb": [128, 256]}, "design": "dopt"}, "sw")


def test_nightly_config_in_the_repo_is_valid(tmp_path):
    cfg = nightly.load_nightly_config("config/nightly.yml")
    assert cfg["baselines"] and 0 < cfg["tolerance"] < 1
    bad = tmp_path / "n.yml"
    bad.write_text("baselines:\n  - name: x\n    params: {disks: 0}\n")
    with pytest.raises(pipeline.ParamError, match="disks"):
        nightly.load_nightly_config(bad)
    assert cfg["seed_trials"] == 6 == nightly.NIGHTLY_SEED_TRIALS
    for v in ("1", "true", "2.5", "21"):
        bad.write_text(f"seed_trials: {v}\nbaselines:\n  - name: x\n    params: {{}}\n")
        with pytest.raises(pipeline.ParamError, match="seed_trials must be an integer in"):
            nightly.load_nightly_config(bad)


# ----------------------------------------------------------------------------- dag.test on real components

def _dag(dag_id):
    from workbench.dagrun import load_dag
    return load_dag(dag_id)


def _states(dr) -> dict[str, str]:
    return {ti.task_id + (f"[{ti.map_index}]" if ti.map_index >= 0 else ""): str(ti.state)
            for ti in dr.get_task_instances()}


@pytest.fixture(scope="session")
def airflow_db():
    """`airflow db migrate` once for the session's AIRFLOW_HOME (set in conftest.py)."""
    import subprocess
    import sys
    out = subprocess.run([str(Path(sys.executable).parent / "airflow"), "db", "migrate"], env=dict(os.environ),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return os.environ["AIRFLOW_HOME"]


@pytest.fixture
def airflow_env(airflow_db, store, monkeypatch):
    """The migrated Airflow home and this test's store (fresh bucket) in the tasks' environment."""
    cfg = store.config
    for k, v in {"WB_S3_ENDPOINT": cfg.endpoint, "WB_S3_ACCESS_KEY": cfg.access_key,
                 "WB_S3_SECRET_KEY": cfg.secret_key, "WB_S3_BUCKET": cfg.bucket, "WB_S3_SECURE": "false"}.items():
        monkeypatch.setenv(k, v)
    return store


def _root():
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, loop devices, cgroups)")


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_rate_peak_end_to_end(airflow_env):
    _root()
    store = airflow_env
    dr = _dag("rate_peak").test(run_conf={"profile": "smoke", "slot": "slot1"})
    states = _states(dr)
    assert str(dr.state).endswith("success"), states
    rid = pipeline.rating_id_for("rate_peak", dr.run_id)
    res = store.get_json(store.rating_key(rid, "result.json"))
    n = res["n_trials"]
    assert res["converged"], res["reason"]
    # one task per trial; after the decision to stop every later trial is skipped
    assert all(states[f"trial_{k}"].endswith("success") for k in range(n)), states
    assert all(states[f"trial_{k}"].endswith("skipped") for k in range(n, MAX_TRIAL_TASKS)), states
    assert states[f"done_{n}"].endswith("success") and states["teardown"].endswith("success")
    keys = set(store.list_keys(f"ratings/{rid}/"))
    for name in ("spec.json", "sysinfo.json", "result.json", "trials.parquet", "gx.json", "report.html",
                 "plots/latency_vs_load.png", "plots/search_trace.png", "plots/latency_cdf.png"):
        assert f"ratings/{rid}/{name}" in keys, sorted(keys)
    assert [r["n"] for r in store.trials(rid)] == list(range(n))
    gx = store.get_json(store.rating_key(rid, "gx.json"))
    assert gx["n_checked"] == n and "gx" in gx
    html = store.get_bytes(store.rating_key(rid, "report.html")).decode()
    assert f"λ* = <b>{res['peak_rate']:.4g}</b> ops/s" in html and "data:image/png;base64," in html
    info = store.get_json(store.rating_key(rid, "sysinfo.json"))
    assert info["host"] == "sut1"
    assert not (paths.LEASES / "slot1").exists()          # lease released by teardown


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_rate_peak_bad_params_fail_at_validate_before_provisioning(airflow_env):
    _root()
    store = airflow_env
    dag = _dag("rate_peak")
    # memory_mb 50 passes the form's JSON schema (0..16384) but not the role's 96 MiB floor: the
    # validate task names it and nothing downstream runs
    dr = dag.test(run_conf={"memory_mb": 50, "slot": "slot1"})
    states = _states(dr)
    assert str(dr.state).endswith("failed") and states["validate"].endswith("failed"), states
    assert states["provision"].endswith("upstream_failed") and states["trial_0"].endswith("upstream_failed")
    assert not [k for k in store.list_keys("ratings/") if "spec.json" in k]
    # wrong type / unknown workload: Airflow's own Param schema check refuses the run, naming the field
    for conf, field in (({"workload": "nosuch"}, "workload"), ({"disks": "two"}, "disks")):
        try:
            dr = dag.test(run_conf=conf)
        except ValueError as e:                 # ParamValidationError, before any task runs
            assert field in str(e)
        else:
            assert _states(dr)["validate"].endswith("failed")
    assert not [k for k in store.list_keys("ratings/") if "spec.json" in k]


@pytest.mark.integration
@pytest.mark.timeout(1500)
def test_map_surface_2x2_with_seeding(airflow_env):
    _root()
    store = airflow_env
    dr = _dag("map_surface").test(run_conf={"profile": "smoke", "workload": "web_server",
                                            "factors": {"memory_mb": [128, 256], "read_iops": [50, 100]}})
    assert str(dr.state).endswith("success"), _states(dr)
    sid = pipeline.rating_id_for("map_surface", dr.run_id)
    rows = [store.get_json(k) for k in store.list_keys(f"surfaces/{sid}/samples/")]
    assert len(rows) == 4 and all(r["peak_rate"] > 0 for r in rows)
    # the first sample to run has nothing to seed from; every later one is seeded from a finished one
    assert sum(r["seed_load"] is None for r in rows) == 1, rows
    assert {r["seed_load"] for r in rows if r["seed_load"]} <= {r["peak_rate"] for r in rows}, rows
    model = store.get_json(f"surfaces/{sid}/model.json")
    assert model["n_samples"] == 4 and model["coefficients"]
    keys = store.list_keys(f"surfaces/{sid}/")
    assert f"surfaces/{sid}/plots/surface_memory_mb_read_iops.png" in keys
    assert f"surfaces/{sid}/report.html" in keys
    page = store.get_bytes(f"surfaces/{sid}/report.html").decode()
    for r in rows:      # each sample links its rating's report (relative), and that report exists
        assert f'href="../../ratings/{r["rating_id"]}/report.html"' in page
        assert store.rating_key(r["rating_id"], "report.html") in store.list_keys(f"ratings/{r['rating_id']}/")


@pytest.mark.integration
@pytest.mark.timeout(1500)
def test_nightly_flags_a_worse_configuration_but_not_the_same(airflow_env, tmp_path):
    _root()
    store = airflow_env
    good = {"workload": "web_server", "profile": "smoke", "read_iops": 100}
    worse = {**good, "read_iops": 40}
    cfg = tmp_path / "nightly.yml"

    def night(day, params):
        cfg.write_text("tolerance: 0.25\nconfidence: 0.95\nbaselines:\n"
                       f"  - name: web\n    params: {json.dumps(params)}\n")
        return _dag("nightly_regression").test(
            run_conf={"config_path": str(cfg)},
            logical_date=dt.datetime(2026, 11, day, 3, tzinfo=dt.timezone.utc))

    first = night(1, good)                      # the recorded baseline (no history yet)
    assert str(first.state).endswith("success"), _states(first)
    same = night(2, good)
    v_same = store.get_json("nightly/2026-11-02/verdicts.json")
    assert str(same.state).endswith("success") and not v_same[0]["regression"], v_same
    bad = night(3, worse)
    v_bad = store.get_json("nightly/2026-11-03/verdicts.json")
    assert v_bad[0]["regression"], v_bad
    assert str(bad.state).endswith("failed") and _states(bad)["verdict"].endswith("failed")
    page = store.get_bytes("nightly/2026-11-03/report.html").decode()
    rid = v_bad[0]["rating_id"]
    assert "REGRESSION" in page and f'href="../../ratings/{rid}/report.html"' in page
    assert store.rating_key(rid, "report.html") in store.list_keys(f"ratings/{rid}/")


def test_slot_leases_are_exclusive_idempotent_and_expire(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "LEASES", tmp_path / "leases")
    monkeypatch.setattr(paths, "WORKDIR", tmp_path)
    a = pipeline.plan_from_params({"profile": "smoke"}, "rating-a")
    b = pipeline.plan_from_params({"profile": "smoke"}, "rating-b")
    c = pipeline.plan_from_params({"profile": "smoke"}, "rating-c")
    assert pipeline.lease_slot(a) == "slot1" and pipeline.lease_slot(a) == "slot1"   # a retry gets it again
    assert pipeline.lease_slot(b) == "slot2"
    with pytest.raises(RuntimeError, match="slot1 is held by rating rating-a"):
        pipeline.lease_slot(c)
    # rating-a's run died before teardown: after LEASE_STALE_S without activity its lease is taken over
    old = os.path.getmtime(tmp_path / "leases" / "slot1") - leases.LEASE_STALE_S - 5
    os.utime(tmp_path / "leases" / "slot1", (old, old))
    assert pipeline.lease_slot(c) == "slot1"
    assert not pipeline.release_slot(a.with_slot("slot1")) and pipeline.release_slot(c.with_slot("slot1"))
    assert pipeline.teardown(b.with_slot("slot1")) .startswith("slot slot1 not held")
