"""The distributed stack (scripts/celery-stack.sh): Postgres, Redis, Airflow with the CeleryExecutor
and two Celery workers (one task at a time each), real MinIO, real Ganesha slots.

map_surface samples spread over the workers: two samples run at the same time, one on each worker.
Then one worker is SIGKILLed in the middle of its sample (with its task processes, like a crashed
host): the stack's supervisor restarts that worker, and the sample's next try runs on a live worker
(the restarted one: the other is busy) within 60 s of the kill, with the stack's own heartbeat
timeout (30 s), and resumes from the trial log in S3, with every trial in it exactly once (one
map_surface run shows both).  The sweep is an active 2-factor design
whose budget pays for 2 of its 4 start samples and whose deadline passes during them: it reports
that end and skips its later rounds.  Then the stack stops cleanly: no process left, its ports closed.

The module's slots are slot6 and slot7 (slot1/slot2 of a renumbered local inventory), so it runs
beside the tests of slot1, slot2 and slot5.

    .venv/bin/python -m pytest -q tests/dags/test_celery.py      (root: slots need netns/cgroups)
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import os
import re
import socket
import time
import urllib.request
import uuid
from unittest import mock

import psutil
import pyarrow.parquet as pq
import pytest
from airflow_live import CeleryStack
from helpers import renumbered_inventory

pytestmark = [
    pytest.mark.integration,
    pytest.mark.xdist_group("celery"),
    pytest.mark.skipif(os.geteuid() != 0, reason="a workbench slot needs root (netns, cgroups, loop devices)"),
]

DAG_ID = "map_surface"
SLOTS = ("slot6", "slot7")
# an active planar design over a workload factor and a server factor, a 3 × 2 grid (4 start
# samples): web_server's file popularity from seed 003's lowest Zipf α for web servers (0.6) to its
# own (0.75), I/O-bound at the smoke profile's 100 read IOPS (at 0.9 the cache serves most reads and
# the smoke rating's latency is bimodal), and 8 or 16 server threads. smoke's ratings cap at 120 s,
# so the sweep budget pays for 2 of the start samples: opposite corners.
CONF = {"profile": "smoke", "workload": "web_server", "design": "active", "degree": 1, "sweep_budget_s": 240,
        "factors": {"zipf_alpha": [0.6, 0.675, 0.75], "threads": [8, 16]}}
DEADLINE_S = 120       # after the two ratings start (seconds), before they end (≥ 150 s at once, the retry within)
RETRY_S = 60           # kill → the victim's next try running (issue 33)
# the stack's own heartbeat timeout (30 s, checked every 5 s), not FAST_RECOVERY's: RETRY_S is its promise
STACK_DEFAULTS = ("AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT",
                  "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL")
TRIAL_KEY = re.compile(r"/trials/(\d{5})\.json$")


@pytest.fixture(scope="module")
def stack(minio_server, tmp_path_factory):
    """(CeleryStack, ResultsStore) for this module, on a bucket of its own."""
    from workbench.store.s3 import ResultsStore

    cfg = dataclasses.replace(minio_server, bucket=f"celery-{uuid.uuid4().hex[:10]}")
    store = ResultsStore(cfg)
    store.ensure_bucket()
    inventory = renumbered_inventory(tmp_path_factory.mktemp("inventory") / "hosts.yml", {1: 6, 2: 7})
    env = {"WB_S3_ENDPOINT": cfg.endpoint, "WB_S3_ACCESS_KEY": cfg.access_key,
           "WB_S3_SECRET_KEY": cfg.secret_key, "WB_S3_BUCKET": cfg.bucket, "WB_S3_SECURE": "false",
           "WB_SLOTS": ",".join(SLOTS), "WB_INVENTORY": str(inventory)}
    t0 = time.monotonic()
    st = CeleryStack(tmp_path_factory.mktemp("celery") / "stack", env)
    for k in STACK_DEFAULTS:
        st.env.pop(k, None)
    with st:
        st.wait_ready(DAG_ID)
        print(f"celery stack up in {time.monotonic() - t0:.1f} s")
        yield st, store


def _samples(stack, run_id: str) -> dict[int, dict]:
    return {ti["map_index"]: ti for ti in stack.task_instances(DAG_ID, run_id) if ti["task_id"] == "rate_sample_0"}


def _tries(stack, run_id: str, map_index: int) -> list[dict]:
    from urllib.parse import quote
    path = f"/dags/{DAG_ID}/dagRuns/{quote(run_id, safe='')}/taskInstances/rate_sample_0/{map_index}/tries"
    return stack.api("GET", path)["task_instances"]


def _trial_numbers(store, rating_id: str) -> list[int]:
    return sorted(int(m.group(1)) for k in store.list_keys(f"ratings/{rating_id}/trials/")
                  if (m := TRIAL_KEY.search(k)))


def _sample_rating_ids(store, run_id: str) -> dict[int, str]:
    from workbench.params.plan import rating_id_for
    plan = store.get_json(store.surface_key(rating_id_for(DAG_ID, run_id), "plan.json"), None)
    return {it["i"]: it["plan"]["rating_id"] for it in plan["samples"]} if plan else {}


def _workers() -> set[str]:
    return {f"worker{k}@{socket.getfqdn()}" for k in (1, 2)}


def _runs_under(pid: int | None, root: int) -> bool:
    """Whether process `pid` (a try's task process) is `root` (a worker) or descends from it."""
    try:
        proc = psutil.Process(pid)
        return pid == root or any(p.pid == root for p in proc.parents())
    except (psutil.NoSuchProcess, TypeError, ValueError):
        return False


def _retry_running(st, run_id: str, victim: int, killed_try: int, t_kill: float) -> tuple[dict, float]:
    """(the victim's next try, seconds from the kill) once a try after `killed_try` runs (bounded)."""
    deadline = t_kill + 3 * RETRY_S
    while True:
        later = [t for t in _tries(st, run_id, victim) if t["try_number"] > killed_try]
        if later and later[-1]["state"] == "running":
            return later[-1], time.monotonic() - t_kill
        assert not later or later[-1]["state"] not in ("success", "failed", "upstream_failed"), later
        assert time.monotonic() < deadline, f"no later try of sample {victim} running {3 * RETRY_S} s after the kill: " \
                                            f"{_tries(st, run_id, victim)}"
        time.sleep(0.5)


def _restarted(st, worker: str, old_pid: int, timeout_s: float = 60) -> tuple[int, float]:
    """(the new pid of `worker`, seconds waited) once the supervisor restarted it."""
    t0 = time.monotonic()
    while True:
        try:
            pid = st.pid(worker)
            if pid != old_pid and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return pid, time.monotonic() - t0
        except (FileNotFoundError, ValueError, psutil.NoSuchProcess):
            pass
        assert time.monotonic() - t0 < timeout_s, f"{worker} not restarted in {timeout_s} s:\n{st.tail('supervisor')}"
        time.sleep(0.5)


def _finish(stack, run_id: str, timeout_s: float) -> str:
    try:
        return stack.wait_run(DAG_ID, run_id, timeout_s=timeout_s)
    finally:
        if stack.run_state(DAG_ID, run_id) not in ("success", "failed"):
            stack.set_run_state(DAG_ID, run_id, "failed")


def _busy_sample(st, store, run_id: str) -> tuple[dict[int, dict], dict[int, str], int]:
    """(the samples' task instances, their rating ids, a sample with ≥ 2 stored trials) once both
    samples are running and one of them has stored 2 trials (at most 600 s)."""
    deadline = time.monotonic() + 600
    while True:
        tis = _samples(st, run_id)
        ratings = _sample_rating_ids(store, run_id)
        running = {i for i, ti in tis.items() if i in ratings and ti["state"] == "running"}
        busy = [i for i in sorted(running) if len(_trial_numbers(store, ratings[i])) >= 2]
        if len(running) == 2 and busy:
            return tis, ratings, busy[0]
        assert st.run_state(DAG_ID, run_id) not in ("success", "failed"), st.task_states(DAG_ID, run_id)
        assert time.monotonic() < deadline, f"not both samples running, one with 2 trials, in 600 s: {tis}"
        time.sleep(1)


def _assert_one_rating_per_slot(st, store, ratings: dict[int, str]) -> None:
    """The two running samples, on two workers each with its own working directory (two "hosts"),
    hold two different slots, each leased to its own rating in the stack's shared Postgres store.
    With host-local file leases each worker would see both slots free and lease slot6 to both."""
    env = dict(line.split("=", 1) for line in st.script("env").splitlines() if "=" in line)
    assert env["WB_LEASE_STORE"].startswith("postgresql://"), env["WB_LEASE_STORE"][:12]
    slots = {i: store.get_json(store.rating_key(rid, "spec.json"))["slot"] for i, rid in ratings.items()}
    assert sorted(slots.values()) == sorted(SLOTS), slots
    from workbench.lease import leases
    with mock.patch.dict(os.environ, {"WB_LEASE_STORE": env["WB_LEASE_STORE"]}):
        held = {slot: (leases.read_lease(slot) or {}).get("rating_id") for slot in SLOTS}
    assert held == {slot: ratings[i] for i, slot in slots.items()}, (held, slots)
    workdirs = {d.name for d in st.home.glob("worker*") if d.is_dir()}
    assert workdirs == {"worker1", "worker2"}, workdirs


@pytest.mark.timeout(1500)
def test_samples_run_at_once_on_two_workers_and_a_killed_one_s_resumes_each_trial_once(stack):
    """Both samples run at the same time, one on each worker; the worker of one with ≥ 2 stored
    trials is SIGKILLed with its task processes; the supervisor restarts it (`status` exits 0 again);
    the sample's next try runs on a live worker within 60 s of the kill and resumes from the trial
    log (each trial once, the stored ones kept); both results are stored."""
    from workbench.params.plan import rating_id_for

    st, store = stack
    t0 = time.monotonic()
    deadline = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=DEADLINE_S)).isoformat()
    run_id = st.trigger(DAG_ID, {**CONF, "deadline": deadline})
    try:
        tis, ratings, victim = _busy_sample(st, store, run_id)
        assert {ti["hostname"] for ti in tis.values()} == _workers(), tis
        _assert_one_rating_per_slot(st, store, ratings)
        ti = tis[victim]
        before = _trial_numbers(store, ratings[victim])
        worker = ti["hostname"].split("@")[0]
        old_pid = st.pid(worker)
        killed = st.kill_worker(worker)
        t_kill = time.monotonic()
        print(f"both samples running: {[(i, t['hostname']) for i, t in sorted(tis.items())]}; killed {worker} "
              f"({len(killed)} processes) during sample {victim}; trials stored: {before}")
        new_pid, restart_s = _restarted(st, worker, old_pid)
        retry, retry_s = _retry_running(st, run_id, victim, ti["try_number"], t_kill)
        print(f"{worker} restarted {restart_s:.1f} s after the kill (pid {old_pid} → {new_pid}); kill → try "
              f"{retry['try_number']} of sample {victim} running on {retry['hostname']}: {retry_s:.1f} s")
        print("supervisor.log:\n" + st.tail("supervisor", 1000))
        assert retry_s <= RETRY_S, (retry_s, retry)
        assert retry["hostname"] in _workers(), retry
        # a new try on a live worker process: the task process descends from that worker's current process
        assert retry["pid"] is None or _runs_under(retry["pid"], st.pid(retry["hostname"].split("@")[0])), retry
        status = st.script("status")                     # exits 0: every process up again
        assert f"{worker}: running, pid {new_pid}" in status and "supervisor: running" in status, status
        state = _finish(st, run_id, timeout_s=1200)
    finally:
        if st.run_state(DAG_ID, run_id) not in ("success", "failed"):
            st.set_run_state(DAG_ID, run_id, "failed")
    print(f"map_surface on the Celery stack: {state} in {time.monotonic() - t0:.1f} s")
    assert state == "success", st.task_states(DAG_ID, run_id)
    tries = _tries(st, run_id, victim)
    print("tries of the victim: " + "; ".join(f"{t['try_number']} {t['hostname']} {t['state']}" for t in tries))
    for i in sorted(tis):           # where the run's time went: each sample's tries, start → end
        print(f"sample {i}: " + "; ".join(f"try {t['try_number']} {t['hostname']} {t['start_date']} → {t['end_date']}"
                                          for t in _tries(st, run_id, i)))
    assert tries[0]["hostname"] == ti["hostname"] and tries[0]["state"] == "failed", tries
    assert tries[-1]["state"] == "success" and tries[-1]["try_number"] == retry["try_number"], tries
    assert tries[-1]["hostname"] == retry["hostname"], tries
    # the trial log: every trial once, the ones stored before the kill kept
    rid = ratings[victim]
    n = store.get_json(store.rating_key(rid, "result.json"))["n_trials"]
    assert _trial_numbers(store, rid) == list(range(n)) and set(before) <= set(range(n))
    assert [r["n"] for r in store.trials(rid)] == list(range(n))
    table = pq.read_table(io.BytesIO(store.get_bytes(store.rating_key(rid, "trials.parquet")))).to_pandas()
    assert sorted(table["n"]) == list(range(n))
    # both samples' results, the surface's model and its report
    sid = rating_id_for(DAG_ID, run_id)
    rows = [store.get_json(k) for k in store.list_keys(f"surfaces/{sid}/samples/")]
    assert len(rows) == 2 and all(r["converged"] and r["peak_rate"] > 0 for r in rows), rows
    for r in rows:
        res = store.get_json(store.rating_key(r["rating_id"], "result.json"))
        print(f"sample {r['sample']}: {res['n_trials']} trials")
        assert res["peak_rate"] == r["peak_rate"]
        # each sample ran its own Zipf α: the rendered workload, stored with its rating
        alpha = r["sample"]["zipf_alpha"]
        assert res["workload_factors"] == {"zipf_alpha": alpha}
        stored = store.get_bytes(store.rating_key(r["rating_id"], "workload.wl")).decode()
        assert f"file_popularity = zipf:{alpha:g}\n" in stored
    # the active design: 2 of its 4 start samples paid for, the deadline passed during them, the
    # later rounds skipped, the end in the model and the report; the ratings' cost within the budget
    plan = store.get_json(f"surfaces/{sid}/plan.json")
    assert (len(plan["samples"]), len(plan["unrated"])) == (2, 2), plan
    decision = store.get_json(f"surfaces/{sid}/rounds/000.json")
    assert decision["done"] and decision["reason"] == "deadline passed after 2 samples", decision
    states = st.task_states(DAG_ID, run_id)
    assert states["done_0"] == "success" and states["fit_surface"] == "success", states
    assert all(states[f"{t}_{k}"] == "skipped" for k in range(1, 6) for t in ("round", "next", "done")), states
    model = store.get_json(f"surfaces/{sid}/model.json")
    assert model["n_samples"] == 2 and model["stopped"] == decision["reason"] and model["cost_spec_s"] <= 240, model
    page = store.get_bytes(f"surfaces/{sid}/report.html").decode()
    assert all(f'href="../../ratings/{r["rating_id"]}/report.html"' in page for r in rows)
    assert "deadline passed after 2 samples" in page and "mape_vs_samples.png" in page


def test_prometheus_serves_the_live_view(stack):
    """`up` started Prometheus and the node exporter (supervised, in `status`): Prometheus is ready,
    scrapes the slots' live endpoints, their fstress agents' and the node exporter, and has the rules
    of monitoring/prometheus/."""
    st, _ = stack
    status = st.script("status")
    env = dict(line.split("=", 1) for line in (st.home / "env").read_text().splitlines())
    base = f"http://127.0.0.1:{env['WB_PROM_PORT']}"
    assert "prometheus: running" in status and "node-exporter: running" in status, status
    assert f"live view: {base}/consoles/workbench.html?slot=slot1 (Prometheus)" in status, status
    with urllib.request.urlopen(f"{base}/-/ready", timeout=10) as r:
        assert r.status == 200
    targets = json.load(urllib.request.urlopen(f"{base}/api/v1/targets", timeout=10))["data"]["activeTargets"]
    assert {t["labels"]["job"] for t in targets} == {"workbench", "fstress", "node"}, targets
    agent_urls = {t["scrapeUrl"] for t in targets if t["labels"]["job"] == "fstress"}
    assert f"http://127.0.0.1:{int(env.get('WB_METRICS_PORT_BASE', 9650)) + 11}/metrics" in agent_urls, agent_urls
    node, = [t for t in targets if t["labels"]["job"] == "node"]
    assert node["scrapeUrl"] == f"http://127.0.0.1:{env['WB_NODE_PORT']}/metrics"
    rules = json.load(urllib.request.urlopen(f"{base}/api/v1/rules", timeout=10))["data"]["groups"]
    assert "workbench:server_cpu_utilization:ratio" in {r["name"] for g in rules for r in g["rules"]}


HOLD = """
import sys
from workbench.lease import leases
from workbench.params.plan import plan_from_params
plan = leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot6"}, "held-by-the-stack"))
print("held", flush=True)
sys.stdin.read()
leases.release_slot(plan)
"""


@pytest.mark.timeout(300)
def test_the_cli_on_the_stack_s_host_leases_in_the_stack_s_store(stack, tmp_path):
    """Issue 53: `up` announces the stack's lease store to this host (mode 600, under WB_HOST_STATE,
    /run/workbench by default), so `workbench rate` without WB_LEASE_STORE leases there too: a slot
    the stack's store holds is refused in one line naming the holder, exit 2 — not leased a second
    time in this host's files while a map_surface sample loads it."""
    import subprocess
    import sys
    from pathlib import Path
    st, _ = stack
    store = dict(ln.split("=", 1) for ln in st.script("env").splitlines() if "=" in ln)["WB_LEASE_STORE"]
    announced = Path(st.env["WB_HOST_STATE"]) / "lease-store"
    assert announced.read_text().strip() == store and announced.stat().st_mode & 0o777 == 0o600
    path = os.pathsep.join(sys.path)
    holder = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env={**st.env, "WB_LEASE_STORE": store, "PYTHONPATH": path})
    try:
        assert holder.stdout.readline().strip() == "held"
        cli_env = {k: v for k, v in os.environ.items() if k != "WB_LEASE_STORE"}
        cli = subprocess.run([sys.executable, "-m", "workbench.cli", "rate", "--profile", "smoke", "--slot", "slot6",
                              "--inventory", st.env["WB_INVENTORY"], "--results", str(tmp_path / "cli"), "--quiet"],
                             capture_output=True, text=True, timeout=180,
                             env={**cli_env, "WB_HOST_STATE": st.env["WB_HOST_STATE"], "PYTHONPATH": path,
                                  "WB_LEASE_WAIT_S": "0"})         # refused at once, not waited for
        last = cli.stderr.strip().splitlines()[-1]
        assert cli.returncode == 2 and last.startswith("workbench: no free slot: slot6 is held by rating "
                                                       "held-by-the-stack"), cli.stderr
        assert "workbench_leases[slot6]" in last and "Traceback" not in cli.stderr
        assert "airflow:" not in cli.stderr                     # the store's address without its password
    finally:
        holder.communicate(timeout=60)                          # stdin closed: it releases the slot


@pytest.mark.timeout(300)
def test_the_stack_stops_cleanly(stack):
    st, _ = stack
    procs = []
    for f in st.home.glob("*.pid"):
        try:
            root = psutil.Process(st.pid(f.stem))
            procs += [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    env = dict(line.split("=", 1) for line in (st.home / "env").read_text().splitlines())
    ports = [st.port, int(env["WB_PG_PORT"]), int(env["WB_REDIS_PORT"]), int(env["WB_PROM_PORT"]),
             int(env["WB_NODE_PORT"])]
    print(st.down())
    alive = [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"still running after down: {alive}"
    for port in ports:                   # api-server, Postgres, Redis, Prometheus, node exporter: nobody listens
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0, port
    assert not st.home.exists() and not os.path.exists(env["WB_PG_DATA"])
    assert not os.path.exists(os.path.join(st.env["WB_HOST_STATE"], "lease-store"))   # no longer announced
