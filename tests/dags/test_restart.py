"""Crash the scheduler in the middle of a rating: the rating still completes, with no lost and no
repeated trial record.

A real Airflow (LocalExecutor, SQLite), real MinIO and a real Ganesha slot: rate_peak runs the
`smoke` profile on slot5 (slot2 of a renumbered copy of the local inventory, so this module runs
beside the tests of slot1 and slot2); once ≥ 2 trial objects are in the store and a trial_k is running, the
scheduler is SIGKILLed together with its LocalExecutor workers and their task processes (the
trial's fstress included), like a crashed host.  A new scheduler then finds the dead task instance
(its heartbeat stops; LiveAirflow sets a 15 s timeout), retries it (trial_k has retries, and
re-running trial_k writes the same key, once), and the run finishes.

The same Airflow first runs a 60 s trial with a lease stale time of 5 s: another rating asking
for the slot meanwhile is refused (the heartbeat). Then trial_0 is marked failed from the API in the
middle of its measurement, as a user would from the UI; its supervisor SIGTERMs it, and within
seconds no fstress runs, the slot is torn down and its lease released (pipeline.stop), with no
trial recorded.

The finished rating's "Why λ*" page (plugins/workbench_ui.py) is then read through the api-server.

    .venv/bin/python -m pytest -q tests/dags/test_restart.py      (root: the slot needs netns/cgroups)
"""
from __future__ import annotations

import dataclasses
import html
import os
import re
import time
import urllib.parse
import uuid

import pytest
from airflow_live import REPO, LiveAirflow
from helpers import load_host_fstress, renumbered_inventory, slot_leftovers

pytestmark = [
    pytest.mark.integration,
    pytest.mark.xdist_group("slot5"),       # this module's slot: its tests run on one xdist worker, in order
    pytest.mark.skipif(os.geteuid() != 0, reason="a workbench slot needs root (netns, cgroups, loop devices)"),
]

DAG_ID = "rate_peak"
# max_trials 6: the crash comes after 2 stored trials; 6 leave 3 to run after the restart
CONF = {"profile": "smoke", "slot": "slot5", "workload": "web_server", "max_trials": 6}
STALE_S = 5            # the lease's stale time in this module's Airflow: a trial outlasts it many times
TRIAL_KEY = re.compile(r"/trials/(\d{5})\.json$")


def _trial_numbers(store, rating_id: str) -> list[int]:
    keys = store.list_keys(f"ratings/{rating_id}/trials/")
    return sorted(int(m.group(1)) for k in keys if (m := TRIAL_KEY.search(k)))


def _wait_slot_free(slot: str, timeout_s: float = 900) -> None:
    """Wait while a live holder leases the slot (another test on this machine: a dag.test rating, a
    nightly). A lease whose holder has ended (a suite killed before this one) is not waited for: the
    rating takes it over and tears the slot down first, as any rating would (lease.try_lease)."""
    from workbench.lease import leases
    deadline = time.monotonic() + timeout_s
    while (lease := leases.read_lease(slot)) is not None and not leases.holder_gone(lease):
        if time.monotonic() > deadline:
            held = {k: lease.get(k) for k in ("rating_id", "token", "holder", "dirty")}
            raise AssertionError(f"{slot} still held after {timeout_s:.0f} s by a live holder: {held}, "
                                 f"heartbeat {time.time() - lease['heartbeat_unix']:.0f} s ago")
        time.sleep(5)


def _measuring(states: dict[str, str | None], recorded: list[int]) -> str | None:
    """The trial_k.run that is running and has not recorded trial k yet (mid-measurement)."""
    k = len(recorded)
    return f"trial_{k}.run" if states.get(f"trial_{k}.run") == "running" else None


@pytest.fixture(scope="module")
def live(minio_server, tmp_path_factory):
    """One real Airflow (and a bucket) for this module's tests: (LiveAirflow, ResultsStore)."""
    from workbench.store.s3 import ResultsStore

    cfg = dataclasses.replace(minio_server, bucket=f"restart-{uuid.uuid4().hex[:10]}")
    store = ResultsStore(cfg)
    store.ensure_bucket()
    env = {"WB_S3_ENDPOINT": cfg.endpoint, "WB_S3_ACCESS_KEY": cfg.access_key,
           "WB_S3_SECRET_KEY": cfg.secret_key, "WB_S3_BUCKET": cfg.bucket, "WB_S3_SECURE": "false",
           "WB_LEASE_STALE_S": str(STALE_S), "WB_SLOTS": CONF["slot"],
           "WB_INVENTORY": str(renumbered_inventory(tmp_path_factory.mktemp("inventory") / "hosts.yml", {2: 5}))}
    t_start = time.monotonic()
    with LiveAirflow(tmp_path_factory.mktemp("airflow"), REPO / "dags", env) as af:
        af.wait_ready(DAG_ID)
        print(f"airflow up in {time.monotonic() - t_start:.1f} s {af.timings_s}")
        yield af, store, env["WB_INVENTORY"]


def _plan(conf: dict, rating_id: str, inventory: str):
    """The plan of `conf` on this module's slot (not a slot of this process's WB_SLOTS)."""
    from workbench.params.plan import plan_from_params
    plan = plan_from_params({**conf, "slot": "auto"}, rating_id).with_slot(conf["slot"])
    return dataclasses.replace(plan, inventory=inventory)


@pytest.mark.timeout(600)
def test_a_long_trial_keeps_its_slot_and_a_killed_one_stops_its_generator_and_frees_it(live, monkeypatch):
    from workbench.config import paths
    from workbench.lease import leases
    from workbench.params.plan import rating_id_for

    af, store, inventory = live
    slot = CONF["slot"]
    _wait_slot_free(slot)
    run_id = af.trigger(DAG_ID, {**CONF, "runlength_s": 60, "max_trials": 2})
    rid = rating_id_for(DAG_ID, run_id)
    try:
        deadline = time.monotonic() + 300      # trial_0 running and its generator measuring
        while not (af.task_states(DAG_ID, run_id).get("trial_0.run") == "running"
                   and any("--duration 60" in p for p in load_host_fstress(slot))):
            assert time.monotonic() < deadline, f"trial_0 never measured: {af.task_states(DAG_ID, run_id)}"
            assert af.run_state(DAG_ID, run_id) not in ("success", "failed")
            time.sleep(0.5)
        # 1. Another rating asks for the slot for 3 stale times of the 60 s trial: the heartbeat keeps
        #    the lease (its holder is an Airflow run, which a process outside Airflow cannot ask about)
        monkeypatch.setattr(leases, "LEASE_STALE_S", STALE_S)
        second = _plan({**CONF, "max_trials": 2}, "second-rating", inventory)
        t_ask = time.monotonic()
        while time.monotonic() - t_ask < 3 * STALE_S:
            with pytest.raises(leases.SlotBusy, match=f"held by rating {rid}"):
                leases.lease_slot(second)
            time.sleep(1)
        assert any("--duration 60" in p for p in load_host_fstress(slot)), "the trial ended too early"
        # 2. Kill trial_0 as a user would from the UI
        t_kill = time.monotonic()
        ti_path = f"/dags/{DAG_ID}/dagRuns/{urllib.parse.quote(run_id, safe='')}/taskInstances"
        af.api("PATCH", f"{ti_path}/trial_0.run", {"new_state": "failed"})
        # the generator stops within seconds, long before its 60 s would end
        while load_host_fstress(slot):
            assert time.monotonic() - t_kill < 30, f"fstress still running 30 s after the kill: {load_host_fstress(slot)}"
            time.sleep(0.5)
        t_stopped = time.monotonic() - t_kill
        while (paths.LEASES / slot).exists():  # a teardown (the killed task's or the run's) releases it
            assert time.monotonic() - t_kill < 90, "lease not released 90 s after the kill"
            time.sleep(0.5)
        states = af.task_states(DAG_ID, run_id)
        print(f"killed trial_0: generator gone {t_stopped:.1f} s after the kill, slot torn down and "
              f"released {time.monotonic() - t_kill:.1f} s after")
    finally:                                   # not waiting for the rest of the run to fail
        if af.run_state(DAG_ID, run_id) not in ("success", "failed"):
            af.set_run_state(DAG_ID, run_id, "failed")
    assert states["trial_0.run"] == "failed", states
    log = paths.rating_dir(rid) / "teardown-after-kill.log"
    text = log.read_text() if log.is_file() else ""
    assert "teardown after a kill" in text, "no teardown started by the killed task"
    # its detached teardown and the run's teardown task (all_done) take turns: whichever comes first
    # tears the slot down, the other finds the lease released (stop.py)
    assert "torn down" in text or "nothing to tear down" in text, text
    # nothing left of the slot (issue 53): namespaces, server, mounts, loops, agents, the lease
    assert slot_leftovers(slot) == [], "the slot was not torn down"
    assert not store.list_keys(f"ratings/{rid}/trials/"), "the killed trial was recorded"


@pytest.mark.timeout(1800)
def test_scheduler_crash_mid_rating_loses_and_repeats_no_trial(live):
    from workbench import pipeline
    from workbench.findings.peak_interval import peak_statement
    from workbench.config import paths
    from workbench.config.vocabulary import MAX_TRIAL_TASKS
    from workbench.params.plan import rating_id_for

    af, store, inventory = live
    t_start = time.monotonic()
    _wait_slot_free(CONF["slot"])
    run_id = af.trigger(DAG_ID, CONF)
    rid = rating_id_for(DAG_ID, run_id)
    plan = _plan(CONF, rid, inventory)
    try:
        # 1. Wait for ≥ 2 recorded trials and the next trial task in the middle of measuring.
        deadline = time.monotonic() + 600
        while True:
            states = af.task_states(DAG_ID, run_id)
            recorded = _trial_numbers(store, rid)
            victim = _measuring(states, recorded)
            if len(recorded) >= 2 and victim:
                time.sleep(1.0)               # well inside the trial (≈ 10 s: setup + 3 s run)
                if _trial_numbers(store, rid) == recorded:
                    break
                continue
            run_state = af.run_state(DAG_ID, run_id)
            assert run_state not in ("success", "failed"), \
                f"run ended ({run_state}) before the crash could be staged: {states}"
            assert time.monotonic() < deadline, f"no 2 trials + a running trial in 600 s: {states}"
            time.sleep(0.5)
        before = _trial_numbers(store, rid)
        tries_before = {ti["task_id"]: ti["try_number"] for ti in af.task_instances(DAG_ID, run_id)}

        # 2. Crash: scheduler, executor workers, task processes — all SIGKILLed at once.
        t_kill = time.monotonic()
        killed = af.kill_scheduler()
        print(f"killed scheduler tree ({len(killed)} processes) while {victim} ran; "
              f"trials recorded: {before}")
        time.sleep(2)
        orphans = load_host_fstress(CONF["slot"])
        assert not orphans, f"fstress of the killed trial survived the crash: {orphans}"
        time.sleep(3)
        af.start_scheduler()

        # 3. The restarted scheduler notices the dead task, retries it and finishes the rating.
        while af.task_states(DAG_ID, run_id).get(victim) == "running":
            assert time.monotonic() - t_kill < 180, f"{victim} still 'running' 180 s after the crash"
            time.sleep(1)
        t_detect = time.monotonic() - t_kill
        state = af.wait_run(DAG_ID, run_id, timeout_s=900)
        t_done = time.monotonic() - t_kill
        tis = {ti["task_id"]: ti for ti in af.task_instances(DAG_ID, run_id)}
        states = {t: ti["state"] for t, ti in tis.items()}
        print(f"dead {victim} detected {t_detect:.1f} s after the kill; run {state} "
              f"{t_done:.1f} s after the kill; total {time.monotonic() - t_start:.1f} s")
        # max_trials 6 usually leaves the smoke rating unconverged: then only `verdict` is red
        assert set(t for t, s in states.items() if s not in ("success", "skipped")) <= {"verdict"}, (state, states)
    finally:
        if af.run_state(DAG_ID, run_id) not in ("success", "failed"):
            af.set_run_state(DAG_ID, run_id, "failed")
        print("cleanup:", pipeline.teardown(plan))

    # 4. The store: result, trials 0..n−1 once each, parquet without duplicates.
    result = store.get_json(store.rating_key(rid, "result.json"))
    n = result["n_trials"]
    print(f"rating {rid}: {n} trials, λ* = {result['peak_rate']:.1f} ops/s ({result['reason']})")
    numbers = _trial_numbers(store, rid)
    assert numbers == list(range(n)), f"trial objects {numbers}, result says n_trials={n}"
    assert set(before) <= set(numbers)
    records = store.trials(rid)
    assert [r["n"] for r in records] == list(range(n))
    df = store.trials_df(rid)
    pq = store.get_bytes(store.rating_key(rid, "trials.parquet"))
    import io

    import pyarrow.parquet as pq_mod
    table = pq_mod.read_table(io.BytesIO(pq)).to_pandas()
    assert len(table) == n and table["n"].is_unique and sorted(table["n"]) == list(range(n))
    assert len(df) == n

    # 5. The tasks: trial_0..n−1 succeeded (the victim on a retry), every later trial skipped.
    for k in range(MAX_TRIAL_TASKS):
        want = "success" if k < n else "skipped"
        assert states[f"trial_{k}.run"] == want, f"trial_{k}.run is {states[f'trial_{k}.run']}, expected {want}"
    assert states[f"trial_{n}.done"] == "success", states
    green = result["converged"]               # an unconverged rating turns the run red at verdict
    assert states["teardown"] == "success" and states["verdict"] == ("success" if green else "failed"), states
    assert slot_leftovers(CONF["slot"]) == []          # issue 53: nothing left after the crash and retries
    assert state == ("success" if green else "failed"), (state, result["reason"])
    assert tis[victim]["try_number"] > tries_before[victim], \
        f"{victim} was not retried after the crash (try {tis[victim]['try_number']})"
    # Trials that had finished before the crash were not run again.
    for k in set(before) - {int(victim.split(".")[0].split("_")[1])}:
        assert tis[f"trial_{k}.run"]["try_number"] == tries_before[f"trial_{k}.run"], f"trial_{k} re-ran"
    assert not (paths.LEASES / CONF["slot"]).exists(), f"{CONF['slot']} lease not released"

    # 6. The run's "Why λ*" tab (plugins/workbench_ui.py) through the live api-server: the verdict
    # of the finished rating, to a reader of the DAG's runs only.
    why = f"/workbench/runs/{DAG_ID}/{urllib.parse.quote(run_id, safe='')}"
    status, page = af.get_page(why, user="viewer")
    assert status == 200, (status, page[:500])
    assert html.escape(peak_statement(result)) in page and html.escape(result["bottleneck"]["line"]) in page, page
    assert af.get_page(why, user=None)[0] == 401
