"""The reaper: a slot whose holder died (SIGKILL) is torn down and released before anyone leases;
a live holder's slot is not touched; a failed teardown leaves the lease dirty and does not stop
the start."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import FakeRunner
from workbench.config import paths
from workbench.lease import leases
from workbench.measure.ansible import AnsibleHarness
from workbench.params.plan import plan_from_params
from workbench.pipeline import reap_slots, run_rating

HOLDER = """
import contextlib, sys
from workbench.lease import leases
from workbench.params.plan import plan_from_params
plan = plan_from_params({"profile": "smoke", "slot": sys.argv[2]}, sys.argv[1])
with contextlib.redirect_stdout(sys.stderr):
    print(leases.lease_slot(plan).lease_token, file=sys.__stdout__, flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def lease_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "LEASES", tmp_path / "leases")
    monkeypatch.setattr(paths, "WORKDIR", tmp_path)
    monkeypatch.delenv("WB_LEASE_STORE", raising=False)
    return tmp_path / "leases"


def _holder(lease_dir, rid: str, slot: str) -> subprocess.Popen:
    env = {**os.environ, "WB_WORKDIR": str(lease_dir.parent), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("WB_LEASE_STORE", None)
    p = subprocess.Popen([sys.executable, "-c", HOLDER, rid, slot], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env=env)
    assert p.stdout.readline().strip() == "1"
    return p


def test_a_dead_holder_s_slot_is_torn_down_and_released_a_live_one_is_not(lease_dir):
    dead, live = _holder(lease_dir, "killed", "slot1"), _holder(lease_dir, "living", "slot2")
    try:
        dead.kill()
        dead.wait(timeout=30)
        runner, lines = FakeRunner(), []
        assert reap_slots(lambda **kw: AnsibleHarness(runner=runner, **kw), log=lines.append) == ["slot1"]
        assert [name for name, _ in runner.calls] == ["teardown.yml"]
        assert runner.calls[0][1]["slot"] == "slot1"
        assert leases.read_lease("slot1") is None                     # released
        assert leases.read_lease("slot2")["holder"]["pid"] == live.pid
        assert any("holder of rating killed is gone" in s for s in lines), lines
        assert reap_slots(lambda **kw: AnsibleHarness(runner=runner, **kw), log=lines.append) == []
        assert len(runner.calls) == 1                                 # nothing left to reap
    finally:
        live.kill()
        live.wait(timeout=30)


def test_a_failed_reap_keeps_the_lease_dirty_and_does_not_raise(lease_dir):
    dead = _holder(lease_dir, "killed", "slot1")
    dead.kill()
    dead.wait(timeout=30)
    failing, lines = FakeRunner(fail="sut1: Unmount the export failed: target is busy"), []
    assert reap_slots(lambda **kw: AnsibleHarness(runner=failing, **kw), log=lines.append) == []
    lease = leases.read_lease("slot1")
    assert lease["dirty"] is True and lease["rating_id"] == "killed" and lease["token"] == 2
    assert any("target is busy" in s for s in lines), lines
    assert json.loads((lease_dir / "slot1").read_text())["holder"]["reaper"] is True


def test_run_rating_reaps_before_it_leases(lease_dir, tmp_path, monkeypatch):
    dead = _holder(lease_dir, "killed", "slot1")
    dead.kill()
    dead.wait(timeout=30)
    runner = FakeRunner()

    class Stop(Exception):
        pass

    def stop_at_lease(plan, **kw):
        assert leases.read_lease("slot1") is None             # torn down and released already
        raise Stop()
    monkeypatch.setattr("workbench.pipeline.runner.lease_slot", stop_at_lease)
    with pytest.raises(Stop):
        run_rating(plan_from_params({"profile": "smoke", "slot": "slot2"}, "next"), store=None,
                   make=lambda **kw: AnsibleHarness(runner=runner, **kw), log=lambda s: None)
    assert [name for name, _ in runner.calls] == ["teardown.yml"]


def test_a_lease_whose_plan_names_another_rating_is_still_reaped(lease_dir):
    """The reaper holds the lease in the lease's own rating's name, so a plan recorded under another id
    cannot leave the slot held for ever (torn down, never released, reaped again at every start)."""
    dead = _holder(lease_dir, "killed", "slot1")
    dead.kill()
    dead.wait(timeout=30)
    lease = json.loads((lease_dir / "slot1").read_text())
    (lease_dir / "slot1").write_text(json.dumps({**lease, "plan": {**lease["plan"], "rating_id": "other"}}))
    runner = FakeRunner()
    assert reap_slots(lambda **kw: AnsibleHarness(runner=runner, **kw), log=lambda s: None) == ["slot1"]
    assert [name for name, _ in runner.calls] == ["teardown.yml"]
    assert leases.read_lease("slot1") is None


@pytest.mark.parametrize("edit,why", [
    ({"extravars": {"fstress_cpus": "{{ lookup('pipe', 'id') }}"}}, "plan"),
    ({"inventory": "/nonexistent/hosts.yml"}, "/nonexistent/hosts.yml"),
])
def test_a_recorded_plan_that_would_run_what_its_writer_chose_is_not_reaped(lease_dir, edit, why):
    """Issue 53 (low): the reaper ran root playbooks with the plan the lease row records, which any
    writer of the lease store chose. A plan with a Jinja marker, or an inventory without the slot, is
    refused: nothing runs, the lease stays; a rating that leases the slot once the lease is stale
    tears it down with its own plan."""
    dead = _holder(lease_dir, "killed", "slot1")
    dead.kill()
    dead.wait(timeout=30)
    lease = json.loads((lease_dir / "slot1").read_text())
    (lease_dir / "slot1").write_text(json.dumps({**lease, "plan": {**lease["plan"], **edit}}))
    runner, lines = FakeRunner(), []
    assert reap_slots(lambda **kw: AnsibleHarness(runner=runner, **kw), log=lines.append) == []
    assert runner.calls == [] and leases.read_lease("slot1")["rating_id"] == "killed"
    assert any("its recorded plan is refused" in s and why in s for s in lines), lines
    stale = os.path.getmtime(lease_dir / "slot1") - leases.LEASE_STALE_S - 60   # once silent that long
    os.utime(lease_dir / "slot1", (stale, stale))
    new = leases.lease_slot(plan_from_params({"profile": "smoke", "slot": "slot1"}, "next"))
    assert new.lease_token == 2 and leases.read_lease("slot1")["dirty"] is True
