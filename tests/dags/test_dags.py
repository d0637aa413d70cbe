"""rate_peak and nightly_regression end to end with dag.test() on real Ganesha slots and a real MinIO
(the `smoke` profile: real but short ratings), and the rate_peak DAG's params and tasks. map_surface
runs end to end on the distributed stack, two samples at once: tests/dags/test_celery.py."""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import cmdline, load_recorded_nights, renumbered_inventory

from workbench import dagrun
from workbench.findings.regression import reference_load
from workbench.config import paths
from workbench.config.vocabulary import CANNED_WORKLOADS, MAX_TRIAL_TASKS
from workbench.controller.result import goal_results
from workbench.params.plan import PARAMS, rating_id_for
from workbench.pipeline import nightly, nightly_config

REPO = Path(__file__).resolve().parents[2]


CUSTOM_WORKLOAD = "base = web_server\nname = web_custom\nmix_share = getattr:60\n"

# dag.test ratings on slot1 (auto: the first free slot, as slot2's tests name theirs); under xdist
# they run on one worker, in order
SLOT1 = pytest.mark.xdist_group("slot1")


def test_dag_params_match_the_checked_table():
    dag = _dag("rate_peak")
    assert set(dag.params.keys()) == set(PARAMS)
    assert dag.params.get_param("workload").schema["enum"] == list(CANNED_WORKLOADS)
    # a custom workload next to the canned choice: a multi-line text field, in both rating DAGs
    for d in (dag, _dag("map_surface")):
        assert d.params.get_param("workload_text").schema["format"] == "multiline"
    assert dag.params.get_param("zipf_alpha").schema["section"] == "Workload factors"
    # a Param refuses what the table refuses: a bound, an enum, a type
    for name, bad in (("runlength_s", PARAMS["runlength_s"]["minimum"] - 1), ("workload", "nosuch"),
                      ("disks", "two")):
        assert dag.params.get_param(name).resolve(bad, suppress_exception=True) is None, name
    ids = {t.task_id for t in dag.tasks}
    assert {"validate", "lease_slot", "provision", "deploy", "gx_check", "summarise", "report", "publish",
            "teardown", "verdict"} <= ids
    assert {f"trial_{k}.{t}" for k in range(MAX_TRIAL_TASKS) for t in ("decide", "run", "done")} <= ids
    assert f"trial_{MAX_TRIAL_TASKS}.done" in ids
    assert dag.get_task("teardown").trigger_rule == "all_done"
    assert dag.get_task("trial_0.run").pool == "workbench_sut"
    # the grid folds each trial into one row: a task group per trial, nothing else at the chain's level
    groups = set(dag.task_group.children) - {"validate", "lease_slot", "provision", "deploy", "gx_check",
                                             "summarise", "report", "publish", "teardown", "verdict"}
    assert groups == {f"trial_{k}" for k in range(MAX_TRIAL_TASKS + 1)}, sorted(groups)


def test_nightly_branches_a_suspect_to_its_rerun_then_decides():
    dag = _dag("nightly_regression")
    t = dag.get_task
    assert t("needs_rerun").downstream_task_ids == {"rerun", "decide"}
    assert t("rerun").downstream_task_ids == {"decide"} and t("rerun").pool == "workbench_sut"
    assert t("decide").trigger_rule == "none_failed_min_one_success"      # runs when rerun is skipped
    assert t("decide").downstream_task_ids == {"report"} and t("compare").downstream_task_ids >= {"needs_rerun"}
    assert t("needs_rerun").python_callable([{"suspect": True}]) == "rerun"
    assert t("needs_rerun").python_callable([{"suspect": False}]) == "decide"


def test_every_rating_dag_notifies_when_its_run_fails():
    from airflow.dag_processing.dagbag import DagBag

    from workbench.output.notify import RunNotifier
    bag = DagBag(str(REPO / "dags"))
    assert all(isinstance(bag.dags[d].on_failure_callback, RunNotifier)
               for d in ("rate_peak", "map_surface", "nightly_regression"))


def test_no_task_keeps_a_copy_of_its_dags_params():
    """The DAGs set their Params after their tasks (dags/README.md): no task carries a copy of them
    (rate_peak serializes to about 0.1 MB, not 2.3 MB), and a task still runs with all of them, the
    run's conf over the defaults (Airflow's process_params merges the DAG's Params at run time)."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk.definitions.param import process_params
    from airflow.serialization.serialized_objects import DagSerialization
    bag = DagBag(str(REPO / "dags"))
    assert set(bag.dags) == {"rate_peak", "map_surface", "nightly_regression", "compare_ratings"}
    for dag in bag.dags.values():
        assert dag.params and not [t.task_id for t in dag.tasks if t.params], dag.dag_id
    dag = bag.dags["rate_peak"]
    params = process_params(dag, dag.get_task("trial_7.run"), {"runlength_s": 5}, suppress_exception=False)
    assert set(params) == set(PARAMS) and params["runlength_s"] == 5
    assert params["workload"] == PARAMS["workload"]["default"]
    assert len(json.dumps(DagSerialization.serialize_dag(dag), default=str)) < 500_000


def test_decide_skips_the_whole_rest_of_the_chain_at_once():
    """On stop, trial_k.decide skips every later run/decide/done task in one call (one level per
    scheduler loop otherwise: ~1 s each, 3·K levels), even though Airflow passes the branch as a
    generator; on a trial it skips only trial_k.done."""
    from airflow.providers.common.compat.sdk import DownstreamTasksSkipped
    dag = _dag("rate_peak")
    decide = dag.get_task("trial_3.decide")

    class TI:
        map_index, task, pushed = -1, decide, {}

        def xcom_push(self, key, value):
            self.pushed[key] = value

    with pytest.raises(DownstreamTasksSkipped) as stop:
        decide.skip_all_except(TI(), (t for t in ["trial_3.done"]))
    skipped = {t for t, _ in stop.value.tasks}
    K = MAX_TRIAL_TASKS
    assert skipped == ({f"trial_{j}.run" for j in range(3, K)} | {f"trial_{j}.decide" for j in range(4, K)}
                       | {f"trial_{j}.done" for j in range(4, K + 1)})
    with pytest.raises(DownstreamTasksSkipped) as go:
        decide.skip_all_except(TI(), (t for t in ["trial_3.run"]))
    assert [t for t, _ in go.value.tasks] == ["trial_3.done"]


@pytest.mark.timeout(300)
def test_map_surface_grows_an_active_design_round_by_round_then_skips_the_rest(airflow_env, monkeypatch):
    """The unrolled rounds under dag.test, ratings answered by the simulated web surface (the sweep's
    own logic: tests/pipeline/test_sweep_active.py): 7 start samples, then one a round until the LOO
    MAPE target at 9 of 12; next_2 skips every later round's tasks at once; the fit reads the store."""
    from helpers import web_surface_ratings

    from workbench.pipeline import sweep
    rated = []
    monkeypatch.setattr(sweep, "run_rating", web_surface_ratings(rated))
    conf = {"profile": "smoke", "design": "active", "mape_target_pct": 15.0, "fixed": {"fs": "btrfs"},
            "factors": {"threads": [2, 4, 6, 8], "disks": [1, 2, 3]}}
    dr = _dag("map_surface").test(run_conf=conf)
    states = _states(dr)
    assert str(dr.state).endswith("success"), states
    assert len(rated) == 9 and [states[f"done_{k}"] for k in range(3)] == ["skipped", "skipped", "success"]
    assert all(states[f"rate_sample_{k}[{i}]"] == "success" for k, n in ((0, 7), (1, 1), (2, 1)) for i in range(n))
    later = [t for t in states if t.rsplit("_", 1)[-1].split("[")[0] in ("3", "4", "5")]
    assert later and all(states[t] == "skipped" for t in later), states
    model = airflow_env.get_json(f"surfaces/{rating_id_for('map_surface', dr.run_id)}/model.json")
    assert model["n_samples"] == 9 and model["stopped"].startswith("MAPE target reached"), model


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


@SLOT1
@pytest.mark.integration
@pytest.mark.timeout(900)
def test_rate_peak_end_to_end(airflow_env):
    _root()
    store = airflow_env
    # through the Params form: two R_sat goals (10 ms besides the profile's 40 ms; the budget leaves
    # the second goal 5 more trials than the smoke profile's 20) and a custom workload with a workload
    # factor: web_server (its own Zipf α), GETATTR raised from 55 % to 60 %
    # as the main job runs it (dagrun: dag.test() in this process, the trials through the resident
    # fstress agent the deploy task started, issue 34)
    dr = dagrun.run("rate_peak", {"profile": "smoke", "slot": "slot1", "goals_ms": [10], "budget_s": 150,
                                  "max_trials": 25, "workload_text": CUSTOM_WORKLOAD, "zipf_alpha": 0.75})
    states = _states(dr)
    assert str(dr.state).endswith("success"), states
    rid = rating_id_for("rate_peak", dr.run_id)
    res = store.get_json(store.rating_key(rid, "result.json"))
    n = res["n_trials"]
    print(f"rate_peak end to end: {n} trials, {res['reason']}; per goal "
          f"{ {g: (r['peak_rate'], r['converged']) for g, r in res['per_goal'].items()} }")
    assert res["converged"], res["reason"]
    # one search served both goals: λ* ordered with R_sat, each inside its own CI, from the one log
    low, high = goal_results(res)
    assert (low["r_sat_ms"], high["r_sat_ms"]) == (10, 40) and low["converged"] and high["converged"], res["per_goal"]
    assert low["peak_rate"] <= high["peak_rate"] == res["peak_rate"], res["per_goal"]
    for g in (low, high):
        assert g["peak_rate_ci"][0] <= g["peak_rate"] <= (g["peak_rate_ci"][1] or float("inf")), g
        assert g["mean_load_ops_s"] in {r["load_ops_s"] for r in store.trials(rid)}, g
    text = CUSTOM_WORKLOAD + "# workload factors: zipf_alpha=0.75\nfile_popularity = zipf:0.75\n"
    assert res["workload"] == "custom" and res["workload_text"] == text
    assert res["workload_factors"] == {"zipf_alpha": 0.75}
    assert store.get_bytes(store.rating_key(rid, "workload.wl")).decode() == text
    assert all(abs(r["raw"]["mix_target"]["getattr"] - 0.60) < 1e-9 for r in store.trials(rid) if r.get("raw")), \
        "fstress did not run the custom workload"
    # one task per trial; after the decision to stop every later trial is skipped
    assert all(states[f"trial_{k}.run"].endswith("success") for k in range(n)), states
    assert all(states[f"trial_{k}.run"].endswith("skipped") for k in range(n, MAX_TRIAL_TASKS)), states
    assert states[f"trial_{n}.done"].endswith("success") and states["teardown"].endswith("success")
    keys = set(store.list_keys(f"ratings/{rid}/"))
    for name in ("spec.json", "sysinfo.json", "result.json", "trials.parquet", "gx.json", "report.html",
                 "plots/latency_vs_load.png", "plots/search_trace.png", "plots/latency_cdf.png", "plots/intervals.png",
                 "plots/load_curve.png", "load_curve.csv"):
        assert f"ratings/{rid}/{name}" in keys, sorted(keys)
    assert [r["n"] for r in store.trials(rid)] == list(range(n))
    gx = store.get_json(store.rating_key(rid, "gx.json"))
    assert gx["n_checked"] == n and "gx" in gx
    html = store.get_bytes(store.rating_key(rid, "report.html")).decode()
    assert f"λ* = <b>{res['peak_rate']:.4g}</b> ops/s" in html and "data:image/png;base64," in html
    assert f"<td>{low['peak_rate']:.4g}</td>" in html.split("<h2>Goals: one search, one trial log</h2>")[1]
    assert "<pre>base = web_server\nname = web_custom\nmix_share = getattr:60\n" in html
    info = store.get_json(store.rating_key(rid, "sysinfo.json"))
    assert info["host"] == "sut1"
    plays = (paths.rating_dir(rid) / "ansible.log").read_text()
    recs = store.trials(rid)
    # run_trial.yml only where the server is checked first: after an invalid trial, and trial 0 after an
    # invalid warm-up (the warm-up itself goes without the check: deploy has just used the server)
    warm = store.get_json(store.timing_key(rid, "deploy"))["warmup_valid"]
    checked = (not warm) + sum(1 for k in range(1, n) if not recs[k - 1]["valid"])
    assert plays.count("PLAY [Run the trial on every load host") == checked, \
        "a trial ran through run_trial.yml, not the resident agent"
    pid_files = [json.loads(f.read_text())["pid_file"] for f in (paths.rating_dir(rid) / "agent").glob("*.json")]
    cmds = [cmdline(p.name) or "" for p in Path("/proc").glob("[0-9]*")]
    assert pid_files and not [c for c in cmds if any(f in c for f in pid_files)], "teardown left an agent"
    assert not (paths.LEASES / "slot1").exists()          # lease released by teardown
    # no credential in any object of the rating nor any file of its working directory (grep -r)
    secrets_ = [store.config.secret_key.encode(), store.config.access_key.encode()]
    leaked = [k for k in keys if any(x in store.get_bytes(k) for x in secrets_)]
    leaked += [str(f) for f in paths.rating_dir(rid).rglob("*")
               if f.is_file() and any(x in f.read_bytes() for x in secrets_)]
    assert not leaked, f"credentials found in {leaked}"


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_rate_peak_bad_params_fail_at_validate_before_provisioning(airflow_env, notify_receivers):
    _root()
    store = airflow_env
    dag = _dag("rate_peak")
    # memory_mb 50 passes the form's JSON schema (0..16384) but not the role's 96 MiB floor: the
    # validate task names it and nothing downstream runs
    dr = dag.test(run_conf={"memory_mb": 50, "slot": "slot1"})
    states = _states(dr)
    assert str(dr.state).endswith("failed") and states["validate"].endswith("failed"), states
    assert states["provision"].endswith("upstream_failed") and states["trial_0.run"].endswith("upstream_failed")
    assert not [k for k in store.list_keys("ratings/") if "spec.json" in k]
    rid = rating_id_for("rate_peak", dr.run_id)
    assert _assert_notified(notify_receivers, "failed", rid, None)["failed_task"] == "validate"
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
@pytest.mark.xdist_group("slot2")
@pytest.mark.timeout(900)
def test_nightly_flags_a_worse_configuration(airflow_env, tmp_path, notify_receivers, monkeypatch):
    """One real night (read_iops 50: λ* about half) against two recorded nights of read_iops 100:
    seeded at the history's reference load, suspected, re-rated (the confirming branch), flagged naming
    the night and read_iops, the run red, the report linking the night's rating report, an e-mail and a
    webhook saying so. (At 40 the seeded search needs ~2 more
    bracketing steps down from the seed.) Two seed trials (the Welch test's least) and at most 12
    trials a rating, as the lab-change test: the seed load and its down steps bracket tonight's λ*
    near half the history's in 12; more trials only narrow a bracket the verdict does not need."""
    _root()
    store = airflow_env
    load_recorded_nights(store, "2026-11-01", "2026-11-02")
    history = nightly.nightly_history(store, "web", "2026-11-03")
    cfg = tmp_path / "nightly.yml"
    monkeypatch.setenv(nightly_config.CONFIG_DIRS_ENV, str(tmp_path))     # the UI's config_path: operator-listed dirs only
    worse = {"workload": "web_server", "profile": "smoke", "read_iops": 50, "slot": "slot2", "max_trials": 12}
    cfg.write_text("tolerance: 0.25\nconfidence: 0.95\nseed_trials: 2\nbaselines:\n"
                   f"  - name: web\n    params: {json.dumps(worse)}\n")
    bad = _dag("nightly_regression").test(
        run_conf={"config_path": str(cfg)}, logical_date=dt.datetime(2026, 11, 3, 3, tzinfo=dt.timezone.utc))
    v_bad = store.get_json("nightly/2026-11-03/verdicts.json")
    assert v_bad[0]["regression"] and v_bad[0]["history_nights"] == ["2026-11-01", "2026-11-02"], v_bad
    assert str(bad.state).endswith("failed") and _states(bad)["verdict"].endswith("failed")
    # flagged once, after its confirming re-run (the branch took `rerun`), naming the night and the setting
    assert _states(bad)["rerun"].endswith("success") and v_bad[0]["confirmed"], v_bad
    assert v_bad[0]["rerun"]["rating_id"] == "nightly__2026-11-03__web__rerun0" and v_bad[0]["rerun"]["peak_rate"]
    assert v_bad[0]["change_point"]["first_night"] == "2026-11-03"
    assert {"setting": "params.read_iops", "before": 100, "after": 50} in v_bad[0]["changed"], v_bad
    rec = store.get_json("nightly/2026-11-03/web.json")
    assert rec["seed_load"] == reference_load(history), (rec["seed_load"], reference_load(history))
    page = store.get_bytes("nightly/2026-11-03/report.html").decode()
    rid = v_bad[0]["rating_id"]
    assert "REGRESSION" in page and f'href="../../ratings/{rid}/report.html"' in page
    assert store.rating_key(rid, "report.html") in store.list_keys(f"ratings/{rid}/")
    # the load curve travels with the verdict into the e-mail: its ORT and the CSV it was drawn from
    assert store.load_curve_csv_key(rid) in store.list_keys(f"ratings/{rid}/")
    assert v_bad[0]["load_curve"].startswith("ORT ") and store.url(store.load_curve_csv_key(rid)) in v_bad[0]["load_curve"]
    _assert_notified(notify_receivers, "regression", "2026-11-03", store.url("nightly/2026-11-03/report.html"))
    assert notify_receivers[1].posts[0][2]["baselines"][0]["rating_id"] == rid


@pytest.mark.integration
@pytest.mark.acceptance
@pytest.mark.xdist_group("slot3")
@pytest.mark.timeout(2400)
def test_nightly_reports_a_lab_change_when_the_canary_slowed_too(airflow_env, tmp_path, notify_receivers,
                                                                monkeypatch):
    """A real night on which the whole lab got slower: the baseline `web` and the canary (the same
    server, rated every night; both with the recorded two nights at read_iops 100) run at read_iops 50.
    Each is suspected, re-rated and confirmed, and reported as a LAB CHANGE, not a regression: web
    because the canary moved at the same night, the canary because it is the canary. The run is red
    and the e-mail and the webhook say "lab_change". Slot3 (slot1 of a renumbered local inventory);
    two seed trials and at most 12 trials a rating. With two nights of history the canary's SPRT
    (findings.changepoints.canary_verdict, each night's log-likelihood ratio clipped) needs three
    nights on the new level: tonight's rating and two re-runs, so five ratings (~17 min). Not in
    `make test` (its budget): `make test-acceptance`."""
    from workbench.config import vocabulary
    _root()
    store = airflow_env
    night = "2026-11-03"
    load_recorded_nights(store, "2026-11-01", "2026-11-02")
    load_recorded_nights(store, "2026-11-01", "2026-11-02", as_name="canary")
    monkeypatch.setenv("WB_INVENTORY", str(renumbered_inventory(tmp_path / "hosts.yml", {1: 3})))
    monkeypatch.setattr(vocabulary, "SLOTS", ("slot3",))         # "auto": as with WB_SLOTS=slot3
    monkeypatch.setenv(nightly_config.CONFIG_DIRS_ENV, str(tmp_path))
    slower = {"workload": "web_server", "profile": "smoke", "read_iops": 50, "max_trials": 12}
    cfg = tmp_path / "nightly.yml"
    cfg.write_text("tolerance: 0.25\nconfidence: 0.95\nseed_trials: 2\ncanary: canary\nbaselines:\n"
                   f"  - name: web\n    params: {json.dumps(slower)}\n"
                   f"  - name: canary\n    params: {json.dumps(slower)}\n")
    dr = _dag("nightly_regression").test(
        run_conf={"config_path": str(cfg)}, logical_date=dt.datetime(2026, 11, 3, 3, tzinfo=dt.timezone.utc))
    verdicts = {v["name"]: v for v in store.get_json(f"nightly/{night}/verdicts.json")}
    print({n: (v.get("peak_rate"), (v.get("rerun") or {}).get("peak_rate"), v.get("canary"), v["reason"])
           for n, v in verdicts.items()})
    assert str(dr.state).endswith("failed") and _states(dr)["rerun"].endswith("success"), _states(dr)
    for name, said in (("web", "moved"), ("canary", "is the canary")):
        v = verdicts[name]
        assert v["confirmed"] and v["lab_change"] and not v["regression"], v
        assert v["canary"] == said and v["change_point"]["first_night"] == night, v
        assert {"setting": "params.read_iops", "before": 100, "after": 50} in v["changed"], v
    assert "the lab changed" in verdicts["web"]["reason"]
    assert store.exists(f"nightly/{night}/rerun/canary.1.json") and not store.exists(f"nightly/{night}/rerun/web.1.json")
    page = store.get_bytes(f"nightly/{night}/report.html").decode()
    assert "LAB CHANGE" in page and "REGRESSION" not in page
    payload = _assert_notified(notify_receivers, "lab_change", night, store.url(f"nightly/{night}/report.html"))
    assert {b["name"] for b in payload["baselines"]} == {"web", "canary"}, payload


def _assert_notified(receivers, event: str, subject_id: str, report: str) -> dict:
    """One e-mail and one webhook POST for the run, naming the event, the id and the report."""
    smtp, hook = receivers
    assert len(smtp.messages) == 1 and len(hook.posts) == 1, (smtp.messages, hook.posts)
    payload = hook.posts[0][2]
    assert (payload["event"], payload["subject_id"], payload["report"]) == (event, subject_id, report), payload
    body = smtp.messages[0].get_payload()[0].get_payload(decode=True).decode()
    assert subject_id in smtp.messages[0]["Subject"] and (report or "(not written)") in body, body
    return payload


EXTERNAL_INVENTORY = REPO / "inventory" / "external" / "hosts.yml"
FILER = {"server_address": "10.251.11.1", "server_export": "/export",
         "server_description": "operator's Ganesha (scripts/ganesha-slot.sh)"}


def _filer_up() -> None:
    """An NFS server started the way an operator would, outside Workbench's provisioning."""
    from conftest import start_slot, stop_slot
    stop_slot("filer")
    start_slot("filer")


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_an_external_filer_is_rated_from_a_load_host_only(airflow_env, tmp_path, monkeypatch, capsys,
                                                         notify_receivers):
    """The filer's ports are not given (its portmapper is asked); its slot has a load host only; the
    CLI and rate_peak rate it, and result, sysinfo and report say "external server"; a server factor
    on it fails before anything runs. The 24 s budget (4 smoke trials) cannot bracket λ*: the run
    turns red at `verdict` after the slot is torn down, and an e-mail and a webhook say so."""
    from conftest import stop_slot
    from workbench import cli
    from workbench.config import vocabulary
    from workbench.lease.leases import read_lease
    _root()
    monkeypatch.setattr(vocabulary, "SLOTS", ("filer1",))   # rate_peak's slot "auto": as with WB_SLOTS=filer1
    store = airflow_env
    _filer_up()
    try:
        argv = ["rate", "--inventory", str(EXTERNAL_INVENTORY), "--slot", "filer1", "--profile", "smoke",
                "--fileset-rate", "2000", "--budget-s", "24", "--quiet",
                *[f"--{k.replace('_', '-')}={v}" for k, v in FILER.items()]]
        token = (read_lease("filer1") or {}).get("token")      # a dead holder's lease may be there already
        assert cli.main(argv + ["--fs", "xfs", "--results", str(tmp_path / "xfs")]) == 2
        assert "fs=xfs cannot apply to an external server" in capsys.readouterr().err
        assert not (tmp_path / "xfs").exists() and (read_lease("filer1") or {}).get("token") == token
        cli.main(argv + ["--results", str(tmp_path / "cli")])
        rating = tmp_path / "cli" / "ratings" / "cli"
        info = json.loads((rating / "sysinfo.json").read_text())
        assert info["mode"] == "external" and info["server"]["description"] == FILER["server_description"]
        probe = info["probe"]
        assert (probe["nfs_port_from"], probe["mount_port_from"]) == ("portmapper", "portmapper")
        assert (probe["nfs_port"], probe["mount_port"]) == (2049, 20048)      # ganesha-slot.sh's ports
        assert {p["name"] for p in probe["rpc_programs"]} >= {"nfs", "mountd", "portmapper"}
        assert probe["fsinfo"]["rtmax"] > 0 and probe["fsstat"]["tbytes"] > 0 and probe["pathconf"]["name_max"] > 0
        trials = [json.loads(f.read_text()) for f in sorted((rating / "trials").glob("*.json"))]
        assert trials and any(t["valid"] and t["raw"]["ops_total"] > 0 for t in trials), trials
        result = json.loads((rating / "result.json").read_text())
        assert result["factors"] == {} and result["external"]["address"] == FILER["server_address"]
        assert "external server 10.251.11.1:/export" in (rating / "report.html").read_text()

        monkeypatch.setenv("WB_INVENTORY", str(EXTERNAL_INVENTORY))
        dr = _dag("rate_peak").test(run_conf={"profile": "smoke", "slot": "auto", "budget_s": 24, **FILER})
        states = _states(dr)
        rid = rating_id_for("rate_peak", dr.run_id)
        result = store.get_json(store.rating_key(rid, "result.json"))
        assert not result["converged"], result["reason"]
        assert str(dr.state).endswith("failed") and states["verdict"].endswith("failed"), states
        assert states["publish"].endswith("success") and states["teardown"].endswith("success"), states
        report = store.url(store.rating_key(rid, "report.html"))
        payload = _assert_notified(notify_receivers, "unconverged", rid, report)
        assert payload["peak_rate"] == result["peak_rate"] and payload["failed_task"] == "verdict"
        assert store.get_json(store.rating_key(rid, "sysinfo.json"))["mode"] == "external"
        assert result["external"]["export"] == "/export"
        html = store.get_bytes(store.rating_key(rid, "report.html")).decode()
        assert "external server 10.251.11.1:/export" in html and "FSINFO of the export" in html
        assert not (paths.LEASES / "filer1").exists()
        ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
        assert "wb-filer" in ns and "wb-xload1" not in ns     # teardown took the load host, not the filer
    finally:
        stop_slot("filer")


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_compare_ratings_dag_stores_the_verdict_and_page(airflow_env):
    store = airflow_env
    load_recorded_nights(store, "2026-11-01", "2026-11-03")
    a, b = "nightly__2026-11-01__web", "nightly__2026-11-03__web"
    dr = _dag("compare_ratings").test(run_conf={"a": a, "b": b})
    assert str(dr.state).endswith("success"), _states(dr)
    assert store.get_json(f"comparisons/{a}__vs__{b}/verdict.json")["word"] == "REGRESSION"
    assert "Comparison: B against A" in store.get_bytes(f"comparisons/{a}__vs__{b}/report.html").decode()
    bad = _dag("compare_ratings").test(run_conf={"a": "nosuch", "b": b})      # named, not retried
    assert _states(bad)["compare_ab"].endswith("failed")
