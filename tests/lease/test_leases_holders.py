"""A lease is held by a process: a second live holder of the same rating is refused, the rating resumes
once its holder has died; losing the lease stops the step at once (children killed, nothing recorded);
the lease bounds from the environment are refused out of range."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from helpers import FakeRunner
from workbench.config import paths
from workbench.lease import heartbeat, leases
from workbench.lease.store import FileStore, lease_store
from workbench.measure.ansible import AnsibleHarness
from workbench.params.plan import RatingPlan, plan_from_params
from workbench.pipeline import steps
from workbench.store.local import LocalStore


@pytest.fixture
def lease_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "LEASES", tmp_path / "leases")
    monkeypatch.setattr(paths, "WORKDIR", tmp_path)
    monkeypatch.delenv("WB_LEASE_STORE", raising=False)
    return tmp_path / "leases"


HOLDER = """
import contextlib, sys
from workbench.lease import leases
from workbench.params.plan import plan_from_params
plan = plan_from_params({"profile": "smoke", "slot": "slot1"}, sys.argv[1])
try:
    with contextlib.redirect_stdout(sys.stderr):
        got = str(leases.lease_slot(plan).lease_token)
except leases.SlotBusy as e:
    got = "busy: " + str(e)
print(got, flush=True)
sys.stdin.readline()                          # a holder lives on until told
"""


def _start(lease_dir, rid: str) -> tuple[subprocess.Popen, str]:
    """A process leasing slot1 for rating `rid`; it and what it got (a token, or "busy: why")."""
    env = {**os.environ, "WB_WORKDIR": str(lease_dir.parent), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("WB_LEASE_STORE", None)
    p = subprocess.Popen([sys.executable, "-c", HOLDER, rid], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env=env)
    return p, p.stdout.readline().strip()


def test_a_second_live_holder_of_the_same_rating_is_refused_and_resumes_after_it_died(lease_dir):
    first, got = _start(lease_dir, "twice")
    try:
        assert got == "1"
        t0 = time.monotonic()
        second, got2 = _start(lease_dir, "twice")             # the same rating, started again
        second.communicate("done\n", timeout=60)
        with pytest.raises(leases.SlotBusy, match="a second holder of the same rating is refused"):
            leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "twice"), wait_s=60)
        assert time.monotonic() - t0 < 30                     # refused at once, not after the wait
        assert got2.startswith("busy:") and "held by rating twice itself, by a live holder" in got2, got2
        assert f"process {first.pid}" in got2
        assert json.loads((lease_dir / "slot1").read_text())["holder"]["pid"] == first.pid
    finally:
        first.kill()
        first.wait(timeout=30)
    third, got3 = _start(lease_dir, "twice")                  # its holder died: the rating resumes
    third.communicate("done\n", timeout=60)
    assert got3 == "2"                                        # a new token fences the dead holder off
    lease = json.loads((lease_dir / "slot1").read_text())
    assert lease["holder"]["pid"] == third.pid and lease["dirty"] is True   # torn down before use
    assert lease["plan"]["rating_id"] == "twice" and lease["plan"]["slot"] == "slot1"


def test_this_process_asking_again_gets_its_lease_back(lease_dir):
    p = leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "again"))
    assert leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "again")) == p
    # another process of the same Airflow run (its next task) is the same holder; another run is not
    run = {"host": "h", "pid": 1, "start": "1", "dag_id": "rate_peak", "run_id": "r1"}
    assert leases.same_holder(run, {**run, "pid": 2}) and not leases.same_holder(run, {**run, "run_id": "r2"})
    assert not leases.same_holder({}, {})


def _sleeping_trial(children: list[int]):
    """A FakeRunner result: the trial is a process (in its own session, as Ansible's workers) that
    sleeps a minute; the step waits for it."""
    def run(extravars):
        child = subprocess.Popen(["sleep", "60"], start_new_session=True)
        children.append(child.pid)
        child.wait(timeout=90)
        return None
    return run


def test_a_lease_lost_mid_trial_stops_the_trial_at_once_and_records_nothing(lease_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(leases, "HEARTBEAT_S", 0.5)
    plan = leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "lost"))
    plan = RatingPlan.from_dict({**plan.to_dict(), "workdir": str(tmp_path / "work")})
    store, children = LocalStore(tmp_path / "store"), []
    runner = FakeRunner(result=_sleeping_trial(children))
    taken = []

    def take_over():                   # another rating takes the lease while the trial runs
        while not children:
            time.sleep(0.1)
        s = lease_store()
        with s.locked("slot1"):
            s.write("slot1", {**s.read("slot1"), "rating_id": "thief", "token": 99})
        taken.append(time.monotonic())
    threading.Thread(target=take_over, daemon=True).start()
    with pytest.raises(leases.LeaseLost, match="lost its lease on slot1.*stopped"):
        steps.trial_step(plan, store, 0, lambda **kw: AnsibleHarness(runner=runner, **kw))
    assert taken and time.monotonic() - taken[0] < 10
    assert not psutil.pid_exists(children[0]) or psutil.Process(children[0]).status() == psutil.STATUS_ZOMBIE
    assert store.trials("lost") == [] and not list((tmp_path / "work").glob("pending/*"))
    assert not [t for t in threading.enumerate() if t.name.startswith("lease-heartbeat")]


def test_a_pending_trial_is_not_stored_by_a_step_whose_lease_was_taken_over(lease_dir, tmp_path):
    """Issue 53 (low): results-store writes are fenced by the lease. A trial measured by a step whose
    store write failed waits in pending/; if another rating has taken the slot since, the retried
    step stores nothing (LeaseLost), as a step whose lease is lost mid-trial records nothing."""
    plan = leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "fenced"))
    plan = RatingPlan.from_dict({**plan.to_dict(), "workdir": str(tmp_path / "work")})
    store = LocalStore(tmp_path / "store")
    d = steps.decide_step(plan, store, 0)
    pending = steps._pending_path(plan, 0)
    pending.parent.mkdir(parents=True)
    pending.write_text(json.dumps({"n": 0, "load_ops_s": d.load_ops_s, "runlength_s": float(d.runlength_s),
                                   "mean_ms": 1.0, "valid": True, "achieved_rate": d.load_ops_s}))
    s = lease_store()
    with s.locked("slot1"):
        s.write("slot1", {**s.read("slot1"), "rating_id": "thief", "token": 99})
    with pytest.raises(leases.LeaseLost, match="no longer holds slot1: the slot is held by thief"):
        steps.trial_step(plan, store, 0, lambda **kw: AnsibleHarness(runner=FakeRunner(), **kw))
    assert store.trials("fenced") == []


def test_a_heartbeat_that_cannot_take_the_lock_stops_the_step(lease_dir, monkeypatch):
    monkeypatch.setattr(leases, "HEARTBEAT_S", 0.2)
    monkeypatch.setattr(leases, "LEASE_STALE_S", 2.0)
    plan = leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "blocked"))
    other = threading.Event()

    def hog():                          # another process's lock held for longer than the heartbeat waits
        with FileStore().locked("slot1"):
            other.set()
            time.sleep(6)
    t0 = time.monotonic()
    with pytest.raises(leases.LeaseLost, match="no heartbeat of slot1"):
        with heartbeat.holding(plan):
            threading.Thread(target=hog, daemon=True).start()
            time.sleep(30)
    assert other.is_set() and time.monotonic() - t0 < 6


def test_a_heartbeat_whose_store_call_blocks_stops_the_step_within_half_the_stale_time(lease_dir, monkeypatch):
    """Issue 53: a call to the lease store that never returns (a worker that lost its route to
    Postgres) must not freeze the safety rule: the step is stopped LEASE_STALE_S / 2 after the last
    heartbeat that landed, not when (if ever) the call returns."""
    monkeypatch.setattr(leases, "HEARTBEAT_S", 0.2)
    monkeypatch.setattr(leases, "LEASE_STALE_S", 4.0)
    plan = leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "blocked-call"))
    real, release, landed, stopped = heartbeat._beat_once, threading.Event(), [], []

    def beat_once(plan_, step_id):
        if landed:
            release.wait(120)           # the second call blocks (until the test ends)
        why = real(plan_, step_id)
        landed.append(time.monotonic())
        return why
    monkeypatch.setattr(heartbeat, "_beat_once", beat_once)
    try:
        with pytest.raises(leases.LeaseLost, match="no heartbeat of slot1 .*a call to the lease store did not return"):
            with heartbeat.holding(plan, on_lost=lambda: stopped.append(time.monotonic())):
                time.sleep(60)
    finally:
        release.set()
    assert len(landed) == 1 and stopped, (landed, stopped)
    print(f"stopped {stopped[0] - landed[0]:.2f} s after the last beat that landed")
    # LEASE_STALE_S / 2 = 2 s after the last beat (3 s of slack for a busy machine; without the
    # bound the step ran its whole 60 s and kept its lease)
    assert stopped[0] - landed[0] < leases.LEASE_STALE_S / 2 + 3.0, stopped[0] - landed[0]


@pytest.mark.parametrize("name,value", [("WB_LEASE_STALE_S", "1"), ("WB_LEASE_STALE_S", "1e9"),
                                        ("WB_LEASE_STALE_S", "nan"), ("WB_LEASE_WAIT_S", "-1"),
                                        ("WB_LEASE_WAIT_S", "soon"), ("WB_LEASE_WAIT_S", "inf")])
def test_lease_bounds_out_of_range_are_refused_by_name(name, value, monkeypatch):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=f"{name}=.*must be a number of seconds from"):
        leases.env_seconds(name, 300, 2 if name == "WB_LEASE_STALE_S" else 0,
                           3600 if name == "WB_LEASE_STALE_S" else 86400)
    env = {**os.environ, name: value, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", "import workbench.lease.leases as l; l.check_settings()"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode != 0 and f"{name}=" in out.stderr     # the module loads; the settings are refused
    cli = subprocess.run([sys.executable, "-m", "workbench.cli", "rate", "--check", "--profile", "smoke"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert cli.returncode == 2 and cli.stderr.startswith(f"workbench: {name}=") and "Traceback" not in cli.stderr


def test_an_unknown_lease_store_is_refused(monkeypatch):
    monkeypatch.setenv("WB_LEASE_STORE", "redis://secret@host")
    with pytest.raises(ValueError, match="WB_LEASE_STORE must be 'file'.*not redis://…$"):
        lease_store()
    with pytest.raises(ValueError, match="WB_LEASE_STORE must be"):
        leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "x"))


def test_the_host_s_announced_lease_store_is_the_one_used_and_no_other(tmp_path, monkeypatch):
    """Issue 53: with the Celery stack up, this host's entry points lease in its store without being
    told (paths.HOST_LEASE_STORE); another store named beside it, or an announcement that cannot be
    read, is refused naming why — never two stores on one host."""
    from workbench.config import paths
    from workbench.lease.store import LeaseConfigError, store_spec
    announced = tmp_path / "lease-store"
    monkeypatch.setattr(paths, "HOST_LEASE_STORE", announced)
    monkeypatch.delenv("WB_LEASE_STORE", raising=False)
    assert store_spec() == ""                                            # no stack: this host's files
    announced.write_text("postgresql://airflow:secret@127.0.0.1:5433/workbench\n")
    assert store_spec() == "postgresql://airflow:secret@127.0.0.1:5433/workbench"
    monkeypatch.setenv("WB_LEASE_STORE", "postgresql://airflow:secret@127.0.0.1:5433/workbench")
    assert store_spec() == "postgresql://airflow:secret@127.0.0.1:5433/workbench"   # the same: fine
    for other in ("file", "postgresql://x:y@10.0.0.9/leases"):
        monkeypatch.setenv("WB_LEASE_STORE", other)
        with pytest.raises(LeaseConfigError, match="is not the lease store of this host's Celery stack") as e:
            store_spec()
        assert "secret" not in str(e.value) and "x:y" not in str(e.value)
    monkeypatch.delenv("WB_LEASE_STORE")
    monkeypatch.setattr(paths, "HOST_LEASE_STORE", announced / "under-a-file")
    with pytest.raises(LeaseConfigError, match="lease store of this host's Celery stack cannot be read"):
        store_spec()


def test_an_airflow_run_between_its_tasks_is_neither_reaped_nor_taken_over(lease_dir, monkeypatch):
    """Issue 53: rate_peak beats only inside a step, so a run whose next task waits for a worker holds
    a lease silent for longer than LEASE_STALE_S. From outside Airflow (the CLI, celery-stack.sh's
    reaper) a run whose state cannot be asked is alive: neither the reaper nor another rating takes
    its slot. A run its database shows ended is reaped, as a process that ended is."""
    import socket
    from workbench.lease import holders
    from workbench.pipeline import slot as pipeline_slot
    monkeypatch.setattr(holders, "TASK_RUNNER", "not.an.airflow.task")  # as in the CLI, whatever ran here before
    monkeypatch.delenv("AIRFLOW_HOME", raising=False)                   # no metadata database to ask
    monkeypatch.delenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", raising=False)
    waiting = {"host": socket.gethostname(), "pid": 1, "start": "0",    # its last task's process: gone
               "dag_id": "rate_peak", "run_id": "waiting-for-a-worker"}
    leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "between-tasks"), holder=waiting)
    t = time.time() - leases.LEASE_STALE_S - 300
    os.utime(lease_dir / "slot1", (t, t))
    assert holders.airflow_run_alive(waiting) is None and holders.known_alive(waiting, holders.airflow_run_alive)
    with pytest.raises(leases.SlotBusy, match="slot1 is held by rating between-tasks"):
        leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "another"))
    torn = []
    assert pipeline_slot.reap_slots(make=lambda **kw: torn.append(kw), log=lambda _: None) == [] and not torn
    assert leases.read_lease("slot1")["rating_id"] == "between-tasks"
    # the deployment's database says the run has failed: its lease is reaped (not asked: taken alive)
    monkeypatch.setattr(holders, "_run_state_in_db", lambda holder: "failed")
    assert holders.airflow_run_alive(waiting) is False
    got = leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "another"))
    assert got.lease_token == 2 and leases.read_lease("slot1")["dirty"] is True


def test_an_airflow_run_s_state_is_asked_outside_the_slot_s_lock(lease_dir):
    """Asking an Airflow run's state may take seconds (its database; 2.8 s for the first import),
    and under the slot's lock it starved the holder's heartbeat (a live 60 s trial was stopped):
    the holder the lease names is asked before the lock is taken."""
    import socket
    waiting = {"host": socket.gethostname(), "pid": 1, "start": "0", "dag_id": "rate_peak", "run_id": "r"}
    leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "airflow-held"), holder=waiting)
    lock_free = []

    def alive(holder):
        try:
            with FileStore().locked("slot1", wait_s=0):
                lock_free.append(True)
        except TimeoutError:
            lock_free.append(False)
        return True
    with pytest.raises(leases.SlotBusy, match="held by rating airflow-held"):
        leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "other"), alive=alive)
    assert lock_free == [True], lock_free


STEP = """
import json, subprocess, sys, time
from workbench.lease import heartbeat, leases
from workbench.params.plan import plan_from_params
from workbench.pipeline.stop import stop_children
holder = leases.this_process(dag_id="rate_peak", run_id="run-1")       # a task of one Airflow run
t_lease = time.monotonic()                                              # one clock for every process (Linux)
plan = leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "zombie"), holder=holder)
try:
    with heartbeat.holding(plan, on_lost=stop_children):
        child = subprocess.Popen(["sleep", sys.argv[1]], start_new_session=True)   # as Ansible's workers
        print(json.dumps({"token": plan.lease_token, "child": child.pid, "t_lease": t_lease}), flush=True)
        child.wait(timeout=90)
    print(json.dumps({"done": True}), flush=True)
except leases.LeaseLost as e:
    print(json.dumps({"lost": str(e)}), flush=True)
"""


def test_a_retried_step_fences_off_the_zombie_attempt_of_the_same_run(lease_dir):
    """An Airflow zombie and its retry hold the same lease (one run): the retry's step fences the slot
    to itself; the zombie's heartbeat stops it (children killed, LeaseLost) before the retry starts."""
    env = {**os.environ, "WB_WORKDIR": str(lease_dir.parent), "PYTHONPATH": os.pathsep.join(sys.path),
           "WB_LEASE_STALE_S": "10"}                                  # a beat every 1.7 s
    env.pop("WB_LEASE_STORE", None)
    run = lambda secs: subprocess.Popen([sys.executable, "-c", STEP, secs], stdout=subprocess.PIPE,  # noqa: E731
                                        text=True, env=env)
    zombie = run("60")
    try:
        z = json.loads(zombie.stdout.readline())
        retry = run("0.1")
        r = json.loads(retry.stdout.readline())
        t0 = r["t_lease"]               # the retry asks for the lease (its interpreter's start is not timed)
        assert r["token"] == z["token"]                              # the same lease: the fencing token alone cannot tell
        assert not psutil.pid_exists(z["child"]) or psutil.Process(z["child"]).status() == psutil.STATUS_ZOMBIE
        lost = json.loads(zombie.stdout.readline())
        assert "another attempt of the step" in lost["lost"] and time.monotonic() - t0 < 10
        assert json.loads(retry.stdout.readline()) == {"done": True}
        assert retry.wait(timeout=30) == 0
        assert "step" not in json.loads((lease_dir / "slot1").read_text())   # the retry's step is over
    finally:
        zombie.kill()
        zombie.wait(timeout=30)


def test_outside_the_main_thread_a_lost_lease_stops_the_children_and_ends_the_block_lost(lease_dir, monkeypatch):
    monkeypatch.setattr(leases, "HEARTBEAT_S", 0.2)
    plan = leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "threaded"))
    called, got = [], []

    def step():
        try:
            with heartbeat.holding(plan, on_lost=lambda: called.append(child.kill())):
                s = lease_store()
                with s.locked("slot1"):
                    s.write("slot1", {**s.read("slot1"), "rating_id": "thief"})
                child.wait(timeout=60)                     # ends when on_lost kills it
            got.append("kept")
        except leases.LeaseLost as e:
            got.append(str(e))
    child = subprocess.Popen(["sleep", "60"])
    before, t0 = signal.getsignal(leases.LOST_SIGNAL), time.monotonic()
    t = threading.Thread(target=step)
    t.start()
    t.join(timeout=30)
    assert called and "no longer rating threaded's" in got[0] and time.monotonic() - t0 < 10
    assert signal.getsignal(leases.LOST_SIGNAL) is before          # the main thread's handler untouched


def test_the_cli_refuses_a_rating_its_live_twin_holds_in_one_line(lease_dir, tmp_path, capsys):
    """`workbench rate` of a rating whose slot a live process of the same rating holds: one line naming
    the holder, exit 2 — no traceback (issue 53)."""
    from workbench import cli
    first, got = _start(lease_dir, "twice")
    try:
        assert got == "1"
        rc = cli.main(["rate", "--slot", "slot1", "--profile", "smoke", "--quiet", "--results", str(tmp_path / "twice")])
        err = capsys.readouterr().err
        assert rc == 2 and "Traceback" not in err, err
        last = err.strip().splitlines()[-1]
        assert last.startswith("workbench: slot1 is held by rating twice itself, by a live holder"), last
        assert f"process {first.pid}" in last
    finally:
        first.kill()
        first.wait(timeout=30)
