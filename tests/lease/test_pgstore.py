"""Leases in a real Postgres (started here, on a free port of 127.0.0.1): processes with separate state
directories — two "hosts" — share one lease per slot; the advisory lock is bounded and dies with its
holder. The same race on the file store shows why it is for one host only."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from workbench.config import paths
from workbench.lease import heartbeat, leases
from workbench.lease.store import lease_store
from workbench.params.plan import plan_from_params

PG_BINS = sorted(glob.glob("/usr/lib/postgresql/*/bin"))


def _pg(bin_dir: str, *argv: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", "postgres", "--", f"{bin_dir}/{argv[0]}", *argv[1:]],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def pg_dsn():
    assert PG_BINS and shutil.which("runuser"), "Postgres is not installed: `make setup-test` installs it"
    bin_dir, data = PG_BINS[-1], tempfile.mkdtemp(prefix="wb-lease-pg-")
    shutil.chown(data, "postgres", "postgres")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    out = _pg(bin_dir, "initdb", "-D", data, "-U", "wb", "-A", "trust", "-E", "UTF8")
    assert out.returncode == 0, out.stderr
    out = _pg(bin_dir, "pg_ctl", "start", "-D", data, "-w", "-t", "60", "-l", f"{data}/log",
              "-o", f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={data}")
    assert out.returncode == 0, out.stderr + open(f"{data}/log").read()
    try:
        yield f"postgresql://wb@127.0.0.1:{port}/postgres"
    finally:
        _pg(bin_dir, "pg_ctl", "stop", "-D", data, "-m", "immediate", "-w", "-t", "60")
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def pg_leases(pg_dsn, tmp_path, monkeypatch):
    monkeypatch.setenv("WB_LEASE_STORE", pg_dsn)
    monkeypatch.setattr(paths, "LEASES", tmp_path / "leases")
    monkeypatch.setattr(paths, "WORKDIR", tmp_path)
    import psycopg2
    with psycopg2.connect(pg_dsn) as conn, conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS workbench_leases")
    lease_store()._ready = False
    return pg_dsn


def _plan(rid: str):
    return plan_from_params({"profile": "smoke", "slot": "slot1"}, rid)


def test_leases_in_postgres_are_exclusive_fenced_and_taken_over_from_an_ended_holder(pg_leases, tmp_path):
    a = leases.lease_slot(_plan("pg-a"))
    assert a.lease_token == 1 and leases.lease_slot(_plan("pg-a")) == a
    assert "postgresql://…@127.0.0.1" in leases.lease_file("slot1") and "wb@" not in leases.lease_file("slot1")
    with pytest.raises(leases.SlotBusy, match="slot1 is held by rating pg-a.*workbench_leases"):
        leases.lease_slot(_plan("pg-b"))
    assert abs(leases.read_lease("slot1")["heartbeat_unix"] - time.time()) < 5
    with heartbeat.holding(a):
        leases.mark_dirty(a, True)
    store = lease_store()
    with store.locked("slot1"):                               # a holder that ended
        store.write("slot1", {**store.read("slot1"), "holder": {**leases.this_process(), "start": "0"}})
    b = leases.lease_slot(_plan("pg-b"))
    assert b.lease_token == 2 and leases.read_lease("slot1")["dirty"] is True
    with pytest.raises(leases.LeaseLost, match="held by pg-b"):
        leases.must_hold(a)
    assert not leases.release_slot(a) and leases.release_slot(b) and leases.read_lease("slot1") is None
    assert leases.lease_slot(_plan("pg-c")).lease_token == 3     # the sequence outlives the lease


def test_a_lease_connection_fails_within_seconds_when_its_route_is_lost(pg_leases):
    """Issue 53: libpq's keepalives and TCP_USER_TIMEOUT on every lease connection, so a call over a
    lost route fails in about 10 s instead of blocking for the kernel's retransmission limit."""
    conn = lease_store()._connect()
    try:
        got = conn.get_dsn_parameters()
        with conn.cursor() as cur:
            cur.execute("SHOW statement_timeout")
            statement_timeout = cur.fetchone()[0]
    finally:
        conn.close()
    assert {k: got.get(k) for k in ("keepalives", "keepalives_idle", "tcp_user_timeout")} == {
        "keepalives": "1", "keepalives_idle": "5", "tcp_user_timeout": "10000"}, got
    assert statement_timeout == "30s"


def test_a_store_address_is_named_without_its_password():
    """Issue 53: a DSN's password, in its user part or as ?password=, never reaches a message."""
    from workbench.lease.pgstore import PgStore
    for dsn, shown in (("postgresql://wb:s3cret@127.0.0.1:5433/workbench", "127.0.0.1:5433/workbench"),
                       ("postgresql://127.0.0.1:5433/workbench?user=wb&password=s3cret", "127.0.0.1:5433/workbench"),
                       ("postgresql:///workbench?host=/run/postgresql&password=s3cret", "/workbench")):
        where = PgStore(dsn).where("slot1")
        assert where == f"postgresql://…@{shown} workbench_leases[slot1]" and "s3cret" not in where, where


def test_the_advisory_lock_is_bounded_and_dies_with_its_holder(pg_leases):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from workbench.lease.store import lease_store\n"
         "with lease_store().locked('slot1'):\n    print('locked', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match="still locked after 0.5 s"):
            with lease_store().locked("slot1", wait_s=0.5):
                pass
        assert time.monotonic() - t0 < 5
    finally:
        holder.kill()
        holder.wait(timeout=30)
    deadline = time.monotonic() + 30                           # the server notices the closed connection
    while True:
        try:
            with lease_store().locked("slot1", wait_s=1):
                break
        except TimeoutError:
            assert time.monotonic() < deadline
    with lease_store().locked("slot1"), lease_store().locked("slot1", "teardown.lock", wait_s=0.5):
        pass                                                    # another lock name of the slot is another lock


RACER = """
import contextlib, sys
from workbench.lease import leases
from workbench.params.plan import plan_from_params
plan = plan_from_params({"profile": "smoke", "slot": "slot1"}, sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
try:
    with contextlib.redirect_stdout(sys.stderr):
        got = leases.lease_slot(plan).rating_id
except leases.SlotBusy:
    got = "busy"
print(got, flush=True)
sys.stdin.readline()
"""


def _race_on_hosts(tmp_path, store: str | None, n: int = 4) -> list[str]:
    """n ratings ask for slot1 at one instant, each from its own state directory (its own "host")."""
    procs = []
    for i in range(n):
        env = {**os.environ, "WB_WORKDIR": str(tmp_path / f"host{i}"), "PYTHONPATH": os.pathsep.join(sys.path)}
        env.pop("WB_LEASE_STORE", None)
        env.update({"WB_LEASE_STORE": store} if store else {})
        procs.append(subprocess.Popen([sys.executable, "-c", RACER, f"host{i}"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True, env=env))
    try:
        assert all(p.stdout.readline().strip() == "ready" for p in procs)
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        got = [p.stdout.readline().strip() for p in procs]
        for p in procs:
            p.communicate("done\n", timeout=60)
        return got
    finally:
        for p in procs:
            p.kill()


def test_hosts_sharing_the_postgres_store_never_hold_one_slot_twice(pg_leases, tmp_path):
    got = _race_on_hosts(tmp_path, pg_leases)
    assert len([g for g in got if g != "busy"]) == 1, got
    assert leases.read_lease("slot1")["rating_id"] in got
    # the same race on each host's own file store: every "host" gets the slot (why the stack refuses it)
    assert _race_on_hosts(tmp_path / "files", None) == [f"host{i}" for i in range(4)]


def test_the_heartbeat_beats_in_postgres_and_a_takeover_stops_the_step(pg_leases, monkeypatch):
    monkeypatch.setattr(leases, "HEARTBEAT_S", 0.2)
    a = leases.lease_slot(_plan("pg-beat"))
    store = lease_store()
    t0 = time.monotonic()
    with pytest.raises(leases.LeaseLost, match="no longer rating pg-beat's"):
        with heartbeat.holding(a):
            first = leases.read_lease("slot1")
            assert first["step"]["pid"] == os.getpid()
            time.sleep(1.0)
            assert leases.read_lease("slot1")["heartbeat_unix"] > first["heartbeat_unix"] + 0.5
            with store.locked("slot1"):                    # another rating takes the slot over
                store.write("slot1", {**store.read("slot1"), "rating_id": "pg-thief", "token": 99})
            time.sleep(30)                                 # interrupted at the next beat
    assert time.monotonic() - t0 < 5
