"""Slot leases: exclusive and atomic, idempotent for a retry, fenced by a token, kept alive by a
heartbeat, taken over only from a holder that has ended, dirty after a failed teardown."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from helpers import FakeRunner
from workbench import pipeline
from workbench.config import paths
from workbench.lease import heartbeat, leases
from workbench.measure.ansible import AnsibleHarness
from workbench.params.plan import RatingPlan, plan_from_params
from workbench.pipeline import steps
from workbench.pipeline.slot import TeardownFailed, teardown


@pytest.fixture
def lease_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "LEASES", tmp_path / "leases")
    monkeypatch.setattr(paths, "WORKDIR", tmp_path)
    return tmp_path / "leases"


def _plan(rid: str, slot: str = "auto"):
    return plan_from_params({"profile": "smoke", "slot": slot}, rid)


def _age(lease_dir, slot: str, seconds: float) -> None:
    """Make the slot's heartbeat `seconds` old."""
    t = time.time() - seconds
    os.utime(lease_dir / slot, (t, t))


def _dead_holder(lease_dir, slot: str) -> None:
    """Make the lease's holder a process that has ended (another pid, or a start time it never had)."""
    f = lease_dir / slot
    lease = json.loads(f.read_text())
    lease["holder"]["start"] = "0"
    mtime = f.stat().st_mtime
    f.write_text(json.dumps(lease))
    os.utime(f, (mtime, mtime))


def test_leases_are_exclusive_idempotent_and_taken_over_only_from_an_ended_holder(lease_dir):
    a, b, c = _plan("rating-a"), _plan("rating-b"), _plan("rating-c")
    la = leases.lease_slot(a)
    assert (la.slot, la.lease_token) == ("slot1", 1)
    assert leases.lease_slot(a) == la                   # a retried task gets the same slot and token
    lb = leases.lease_slot(b)
    assert (lb.slot, lb.lease_token) == ("slot2", 1)
    with pytest.raises(leases.SlotBusy, match="slot1 is held by rating rating-a"):
        leases.lease_slot(c)
    # silent for longer than LEASE_STALE_S, but its process lives: not stale
    _age(lease_dir, "slot1", leases.LEASE_STALE_S + 5)
    with pytest.raises(leases.SlotBusy):
        leases.lease_slot(c)
    # the holder has ended and its heartbeat stopped: taken over, with the next token
    _dead_holder(lease_dir, "slot1")
    lc = leases.lease_slot(c)
    assert (lc.slot, lc.lease_token) == ("slot1", 2)
    assert json.loads((lease_dir / "slot1").read_text())["dirty"] is True   # torn down before use
    # rating-a is fenced off: every step that touches the slot refuses
    with pytest.raises(leases.LeaseLost, match="no longer holds slot1.*held by rating-c"):
        leases.must_hold(la)
    assert not leases.release_slot(la) and leases.release_slot(lc)
    assert pipeline.teardown(lb.with_slot("slot1")).startswith("slot slot1 not held")


def test_a_slot_is_waited_for_a_bounded_time(lease_dir):
    leases.lease_slot(_plan("holder", "slot1"))
    t0 = time.monotonic()
    with pytest.raises(leases.SlotBusy, match="held by rating holder"):
        leases.lease_slot(_plan("waiter", "slot1"), wait_s=1.0)
    assert 0.9 <= time.monotonic() - t0 < 3 + leases.WAIT_POLL_S


RACER = """
import contextlib, sys
from workbench.lease import leases
from workbench.params.plan import plan_from_params
plan = plan_from_params({"profile": "smoke", "slot": "slot1"}, sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()                          # every racer is up: go at once
try:
    with contextlib.redirect_stdout(sys.stderr):
        got = leases.lease_slot(plan).rating_id
except leases.SlotBusy:
    got = "busy"
print(got, flush=True)
sys.stdin.readline()                          # a holder lives on while the others ask
"""


def _race(lease_dir, rids: list[str]) -> list[str]:
    """Each rating asks for slot1 from its own process at one instant; what each one got."""
    env = {**os.environ, "WB_WORKDIR": str(lease_dir.parent), "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", RACER, rid], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env) for rid in rids]
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


def test_ratings_racing_for_one_free_or_stale_slot_exactly_one_wins(lease_dir):
    lease_dir.mkdir()
    for round_ in range(2):
        if round_ % 2:                                    # a stale lease of an ended holder to take over
            leases.lease_slot(_plan("ended", "slot1"))
            _dead_holder(lease_dir, "slot1")
            _age(lease_dir, "slot1", leases.LEASE_STALE_S + 5)
        got = _race(lease_dir, [f"r{round_}-{i}" for i in range(4)])
        winners = [g for g in got if g != "busy"]
        assert len(winners) == 1, got
        assert json.loads((lease_dir / "slot1").read_text())["rating_id"] == winners[0]
        (lease_dir / "slot1").unlink()


def test_the_heartbeat_keeps_a_lease_past_the_stale_time(lease_dir, monkeypatch):
    monkeypatch.setattr(leases, "LEASE_STALE_S", 1.0)
    monkeypatch.setattr(leases, "HEARTBEAT_S", 0.2)
    holder = leases.lease_slot(_plan("long", "slot1"), holder={"host": "elsewhere", "pid": 1})   # not provably alive
    with heartbeat.holding(holder):
        for _ in range(6):                                # 3 s: three stale times
            time.sleep(0.5)
            with pytest.raises(leases.SlotBusy):
                leases.lease_slot(_plan("second", "slot1"))
    time.sleep(1.3)                                       # heartbeat stopped, holder unknown: stale
    assert leases.lease_slot(_plan("second", "slot1")).lease_token == 2
    with pytest.raises(leases.LeaseLost):
        with heartbeat.holding(holder):
            pass


def test_a_failed_teardown_keeps_the_lease_dirty_until_a_teardown_succeeds(lease_dir, tmp_path):
    failing = FakeRunner(fail="sut1: Unmount the export failed: target is busy")
    make = lambda **kw: AnsibleHarness(runner=failing, **kw)   # noqa: E731
    a = leases.lease_slot(_plan("rating-a", "slot1"))
    a = RatingPlan.from_dict({**a.to_dict(), "workdir": str(tmp_path / "a")})
    with pytest.raises(TeardownFailed, match="target is busy.*marked dirty"):
        teardown(a, make)
    lease = leases.read_lease("slot1")
    assert lease["rating_id"] == "rating-a" and lease["dirty"] is True
    # rating-a has ended: its dirty lease is taken over at once; the taker tears down before provisioning
    _dead_holder(lease_dir, "slot1")
    b = leases.lease_slot(_plan("rating-b", "slot1"))
    b = RatingPlan.from_dict({**b.to_dict(), "workdir": str(tmp_path / "b")})
    ok = FakeRunner()
    from workbench.store.local import LocalStore
    steps.provision(b, LocalStore(tmp_path / "store"), lambda **kw: AnsibleHarness(runner=ok, **kw))
    assert [name for name, _ in ok.calls] == ["teardown.yml", "provision_sut.yml"]
    assert leases.read_lease("slot1")["dirty"] is False


def test_a_slot_must_be_a_slot_of_the_inventory(lease_dir):
    for bad in ("nope", "all", "sut", "loadgen"):
        with pytest.raises(ValueError, match=f"slot: '{bad}' is not a slot of .*slots: slot1, slot2"):
            leases.lease_slot(_plan("x", "slot1").with_slot(bad))
    assert not lease_dir.exists() or not list(lease_dir.iterdir())


def test_the_state_directory_must_be_ours_and_private(tmp_path):
    d = tmp_path / "state"
    assert paths.private_dir(d) == d and (d.stat().st_mode & 0o777) == 0o700
    d.chmod(0o777)
    paths.private_dir(d)
    assert (d.stat().st_mode & 0o777) == 0o700
    os.chown(d, 65534, 65534)                             # made by another user first
    with pytest.raises(PermissionError, match="owned by uid 65534"):
        paths.private_dir(d)
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(PermissionError, match="symbolic link"):
        paths.private_dir(link)


def test_no_heartbeat_thread_outlives_its_block(lease_dir):
    p = leases.lease_slot(_plan("t", "slot1"))
    with heartbeat.holding(p):
        pass
    assert not [t for t in __import__("threading").enumerate() if t.name.startswith("lease-heartbeat")]

