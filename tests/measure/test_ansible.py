"""AnsibleHarness: JSON → TrialResult mapping and validity rules (fake runner), the
playbooks' order and variables, and (integration) deploy and one trial on a real slot."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import (
    INTEGRATION_SLOT,
    MAX_INVALID_PER_LOAD,
    REPO,
    FakeRunner,
    fstress_json,
    send_lag_only,
)

from workbench.config.factors import factor_vars
from workbench.config.paths import DEFAULT_INVENTORY
from workbench.controller.decide import find_peak
from workbench.controller.spec import RatingSpec
from workbench.measure.ansible import AnsibleHarness

DATA = Path(__file__).resolve().parents[1] / "data"


def harness(tmp_path, runner, **kw):
    return AnsibleHarness(slot="slot1", factors=kw.pop("factors", {"threads": 8, "memory_mb": 128}),
                          workload="web_server", results_dir=tmp_path, runner=runner, warmup_s=1.0, **kw)


def test_valid_trial_maps_every_field(tmp_path):
    r = FakeRunner()
    h = harness(tmp_path, r)
    t = h.measure(500, 5)
    assert t.valid and t.reason == ""
    assert (t.mean_ms, t.p95_ms, t.p99_ms, t.std_ms) == (3.5, 6.0, 9.0, 1.2)
    assert t.achieved_rate == 500.0 and t.ops_total == 2500 and t.errors == 0
    assert t.load_ops_s == 500 and t.runlength_s == 5
    assert t.raw["send_lag_ms"]["p99"] == 0.1
    assert json.loads((tmp_path / "trials" / "0.json").read_text())["mean_ms"] == 3.5
    name, ev = r.calls[-1]
    assert name == "run_trial.yml"
    assert ev["load_ops_s"] == 500.0 and ev["runlength_s"] == 5.0 and ev["warmup_s"] == 1.0
    assert ev["trial_id"] == 0 and ev["slot"] == "slot1" and ev["workload"] == "web_server"
    assert ev["nfs_server_threads"] == 8 and ev["nfs_server_memory_mb"] == 128
    assert ev["trial_out"] == str((tmp_path / "trials" / "0.json").resolve())
    assert ev["ensure_server"] is True             # first trial: make sure the server runs
    h.measure(400, 5)
    assert r.calls[-1][1]["trial_id"] == 1 and (tmp_path / "trials" / "1.json").is_file()
    assert r.calls[-1][1]["ensure_server"] is False     # after a clean trial the check is skipped


def test_server_checked_again_after_a_failed_trial(tmp_path):
    r = FakeRunner(result=None, fail="load1: Run fstress failed: connection reset")
    h = harness(tmp_path, r)
    h.measure(500, 5)
    r.fail, r.result = None, fstress_json()
    h.measure(500, 5)
    assert r.calls[-1][1]["ensure_server"] is True
    r.result = fstress_json(errors=12)          # server killed mid-run: fstress finishes with errors
    h.measure(500, 5)
    assert r.calls[-1][1]["ensure_server"] is False
    h.measure(500, 5)
    assert r.calls[-1][1]["ensure_server"] is True   # checked after any invalid trial
    r.result = fstress_json()
    h.measure(500, 5)
    h.measure(500, 5)
    assert r.calls[-1][1]["ensure_server"] is False


def test_generator_saturated_is_invalid_with_fstress_reason(tmp_path):
    r = FakeRunner(fstress_json(generator_saturated=True, saturation_reason="send-lag p99 3.1 ms > 2 ms"),
                   rc=2)   # exit 3 is not a task failure, but a merged saturated result still counts
    t = harness(tmp_path, r).measure(9000, 5)
    assert not t.valid
    assert t.reason.startswith("generator saturated: send-lag p99 3.1 ms > 2 ms")
    assert t.mean_ms == 3.5 and t.raw["generator_saturated"]


@pytest.mark.parametrize("errors,timeouts", [(3, 0), (0, 2), (1, 1)])
def test_errors_or_timeouts_are_invalid(tmp_path, errors, timeouts):
    t = harness(tmp_path, FakeRunner(fstress_json(errors=errors, timeouts=timeouts))).measure(500, 5)
    assert not t.valid and f"{errors} errors, {timeouts} timeouts" in t.reason
    assert t.errors == errors + timeouts


def test_achieved_below_95_percent_is_invalid(tmp_path):
    t = harness(tmp_path, FakeRunner(fstress_json(achieved_rate=470.0))).measure(500, 5)
    assert not t.valid and "achieved 470.0 ops/s < 95% of offered 500.0" in t.reason
    t = harness(tmp_path, FakeRunner(fstress_json(achieved_rate=476.0))).measure(500, 5)
    assert t.valid


def test_playbook_failure_is_a_harness_failure_with_the_failing_task(tmp_path):
    msg = "load1: Run fstress failed: non-zero return code: fstress: connection reset by peer"
    t = harness(tmp_path, FakeRunner(result=None, fail=msg)).measure(500, 5)
    assert not t.valid and t.reason == "harness: " + msg
    assert t.harness_failure and t.outcome == "harness"
    assert t.mean_ms == 0.0 and t.load_ops_s == 500


def test_the_trial_bound_covers_the_drain_probe(tmp_path):
    r = FakeRunner()
    harness(tmp_path, r).measure(500, 5)
    assert r.timeouts_s["run_trial.yml"] == 5 + 1.0 + 0.5 + 60 + 180   # runlength, warm-up, margin, drain, slack
    harness(tmp_path, r, extravars={"fstress_drain_timeout_s": 0}).measure(500, 5)
    assert r.timeouts_s["run_trial.yml"] == 5 + 1.0 + 0.5 + 180


def test_missing_or_unreadable_json_is_a_harness_failure(tmp_path):
    t = harness(tmp_path, FakeRunner(result=None)).measure(500, 5)
    assert not t.valid and "no merged result" in t.reason and t.outcome == "harness"

    class Garbled(FakeRunner):
        def __call__(self, playbook, extravars, **kw):
            run = super().__call__(playbook, extravars, **kw)
            Path(extravars["trial_out"]).write_text("{not json")
            return run
    t = harness(tmp_path, Garbled()).measure(500, 5)
    assert "unreadable result" in t.reason and t.outcome == "harness"


def test_the_servers_invalid_trials_are_not_harness_failures(tmp_path):
    for runner in (FakeRunner(fstress_json(errors=3)), FakeRunner(fstress_json(achieved_rate=400.0)),
                   FakeRunner(fstress_json(generator_saturated=True, saturation_reason="lag"), rc=2)):
        t = harness(tmp_path, runner).measure(500, 5)
        assert not t.valid and not t.harness_failure and t.outcome == "invalid", t.reason


def test_a_recorded_unreachable_event_is_a_harness_failure(tmp_path, monkeypatch):
    """ansible-runner's own events of a host that cannot be reached (recorded with ansible-core
    2.19 / ansible-runner against ssh to 127.0.0.1:9, a closed port: runner_on_unreachable, then
    the recap with dark=1; status failed, rc 4) replayed through ansible_runner_run: the trial
    is a harness failure naming the host and the task, not the server's invalid trial."""
    from workbench.measure import playbook
    events = json.loads((DATA / "ansible_unreachable_events.json").read_text())
    assert [e["event"] for e in events].count("runner_on_unreachable") == 1

    class Done:
        status, rc, stats = "failed", 4, None

    def replay(**kwargs):
        for ev in events:
            kwargs["event_handler"](ev)
        return Done()
    monkeypatch.setattr(playbook, "_run_scrubbed", replay)
    h = harness(tmp_path, playbook.ansible_runner_run)
    t = h.measure(500, 5, trial_id=4)
    assert t.outcome == "harness" and not t.valid
    assert t.reason == ("harness: load9: Run fstress unreachable: Task failed: Failed to connect to the host "
                        "via ssh: ssh: connect to host 127.0.0.1 port 9: Connection refused"), t.reason
    assert h.last_run.stats["dark"] == {"load9": 1}


def test_stale_json_of_an_earlier_run_is_not_reused(tmp_path):
    (tmp_path / "trials").mkdir(parents=True)
    (tmp_path / "trials" / "0.json").write_text(json.dumps(fstress_json()))
    t = harness(tmp_path, FakeRunner(result=None, fail="x: Run fstress failed: killed")).measure(500, 5)
    assert not t.valid and "killed" in t.reason


def test_runner_exception_is_a_harness_failure(tmp_path):
    def broken(*a, **k):
        raise OSError("pexpect: cannot spawn")
    t = harness(tmp_path, broken).measure(500, 5)
    assert not t.valid and "runner error: OSError: pexpect: cannot spawn" in t.reason
    assert t.outcome == "harness"


def test_provision_deploy_teardown_order_and_vars(tmp_path):
    r = FakeRunner()
    h = harness(tmp_path, r, factors={"fs": "btrfs", "disks": 2, "read_iops": 100})
    h.provision(); h.deploy(); h.measure(100, 2); h.teardown()
    assert [c[0] for c in r.calls] == ["provision_sut.yml", "deploy_loadgen.yml", "run_trial.yml", "teardown.yml"]
    ev = r.calls[0][1]
    assert ev["nfs_server_fs_type"] == "btrfs" and ev["nfs_server_disks"] == 2
    assert ev["nfs_server_disk_read_iops"] == 100
    assert ev["sysinfo_dest"] == str(tmp_path / "sysinfo.json")


def test_nfs_version_reaches_every_playbook_and_v41_probes_the_session(tmp_path):
    """nfs_version is an extra-var of every playbook (the fstress role speaks it); over 4.1 provisioning
    also probes the server from a load host and sysinfo.json keeps the session it granted."""
    r = FakeRunner()
    h = harness(tmp_path, r, factors={"nfs_version": "4.1"})
    h.provision(); h.deploy(); h.measure(100, 2); h.teardown()
    assert {c[0]: c[1]["nfs_server_nfs_version"] for c in r.calls} == {
        "provision_sut.yml": "4.1", "deploy_loadgen.yml": "4.1", "run_trial.yml": "4.1", "teardown.yml": "4.1"}
    assert r.calls[0][1]["probe_dest"] == str(tmp_path / "probe.json")
    info = json.loads((tmp_path / "sysinfo.json").read_text())
    assert info["host"] == "fake" and info["probe"]["nfs4"]["max_slots"] == 64
    r3 = FakeRunner()
    harness(tmp_path / "v3", r3, factors={"nfs_version": 3}).provision()      # coerced to "3": no probe
    assert r3.calls[0][1]["nfs_server_nfs_version"] == "3" and "probe_dest" not in r3.calls[0][1]
    assert "probe" not in json.loads((tmp_path / "v3" / "sysinfo.json").read_text())


def test_provision_failure_raises(tmp_path):
    from workbench.measure.ansible import HarnessError
    h = harness(tmp_path, FakeRunner(fail="sut1: Validate failed: nfs_server_fs_type must be ..."))
    with pytest.raises(HarnessError, match="provision_sut.yml failed: sut1: Validate failed"):
        h.provision()


@pytest.mark.parametrize("factors,match", [
    ({"fs": "zfs"}, "fs must be one of"),
    ({"disks": 0}, "disks must be >= 1"),
    ({"disks": 2, "fs": "ext4"}, "needs fs=btrfs"),
    ({"fs_compress": "zstd"}, "fs_compress=zstd needs fs=btrfs"),
    ({"fs_compress": "lz4", "fs": "btrfs"}, "fs_compress must be one of none, zstd, lzo, zlib"),
    ({"memory_mb": 16}, "memory_mb must be 0"),
    ({"threads": "many"}, "threads must be a whole number"),
    ({"colour": "red"}, "unknown factor"),
    ({"nfs_version": "4.0"}, "nfs_version must be one of 3, 4.1"),
    ({"nfs_version": 2}, "nfs_version must be one of 3, 4.1"),
])
def test_bad_factors_fail_before_any_playbook(tmp_path, factors, match):
    r = FakeRunner()
    with pytest.raises(ValueError, match=match):
        harness(tmp_path, r, factors=factors)
    assert r.calls == []


def test_factor_vars_mapping():
    assert factor_vars({"threads": 4, "fs": "xfs", "memory_mb": 0, "sync": False, "write_bps": 1 << 20}) == {
        "nfs_server_threads": 4, "nfs_server_fs_type": "xfs", "nfs_server_memory_mb": 0,
        "nfs_server_export_sync": False, "nfs_server_disk_write_bps": 1 << 20}


def test_workload_file_is_shipped_by_the_role(tmp_path):
    wl = tmp_path / "mine.wl"
    wl.write_text("name = mine\nmix = getattr:1\n")
    r = FakeRunner()
    h = AnsibleHarness(slot="slot1", workload=str(wl), results_dir=tmp_path / "r", runner=r)
    h.deploy()
    ev = r.calls[-1][1]
    assert ev["workload"] == "mine.wl" and ev["fstress_workload_files"] == [str(wl.resolve())]


def _two_host_runner(**part_b):
    """run_trial on hosts a and b at 250 ops/s each: the parts fetched, the merge written."""
    from pathlib import Path

    def result(ev):
        parts = Path(ev["trial_out"] + ".d")
        parts.mkdir()
        a = fstress_json(offered_rate=250.0, achieved_rate=250.0, ops_total=1250, seed=1)
        b = fstress_json(**{"offered_rate": 250.0, "achieved_rate": 250.0, "ops_total": 1250, "seed": 1000004,
                            **part_b})
        for host, part in (("a", a), ("b", b)):
            (parts / f"{host}.json").write_text(json.dumps(part))
        return fstress_json(achieved_rate=a["achieved_rate"] + b["achieved_rate"], ops_total=2500,
                            generator_saturated=bool(b.get("generator_saturated")),
                            saturation_reason=b.get("saturation_reason", ""))
    return FakeRunner(result=result)


def test_each_load_hosts_figures_are_kept_beside_the_merge(tmp_path):
    t = harness(tmp_path, _two_host_runner()).measure(500, 5)
    assert t.valid, t.reason
    assert [(h["host"], h["offered_rate"], h["ops_total"], h["seed"]) for h in t.raw["per_host"]] == [
        ("a", 250.0, 1250, 1), ("b", 250.0, 1250, 1000004)]
    assert not (tmp_path / "trials" / "0.json.d").exists()      # the parts are not kept


@pytest.mark.parametrize("part_b, reason", [
    ({"achieved_rate": 200.0, "ops_total": 1000}, "load host b fell behind: achieved 200.0 of 250.0 ops/s"),
    ({"generator_saturated": True, "saturation_reason": "send lag p99 12 ms"},
     "generator saturated on b: send lag p99 12 ms"),
])
def test_a_load_host_that_falls_behind_invalidates_the_trial_by_name(tmp_path, part_b, reason):
    # the merge (450 of 500 = 90 %) hides which host it was; the per-host rule names it
    t = harness(tmp_path, _two_host_runner(**part_b)).measure(500, 5)
    assert not t.valid and reason in t.reason, t.reason


def test_measure_rejects_bad_load(tmp_path):
    h = harness(tmp_path, FakeRunner())
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            h.measure(bad, 5)


def test_find_peak_through_the_fake_harness(tmp_path):
    """The controller drives the harness: an M/M/1-ish fake server, one harness failure re-run
    (not counted as the server's invalid trial), one invalid trial (NFS errors) re-run."""
    cap = 1000.0
    calls = {"n": 0}

    def result(ev):
        calls["n"] += 1
        load = ev["load_ops_s"]
        if calls["n"] == 3:
            return None                  # e.g. fstress killed: no JSON → harness failure, re-run
        mean = 1.0 / max(cap - load, 1.0) * 1000 * 2
        if calls["n"] == 5:
            return fstress_json(offered_rate=load, achieved_rate=load, mean_ms=mean, errors=4)
        return fstress_json(offered_rate=load, achieved_rate=load, mean_ms=mean, p95_ms=3 * mean)

    spec = RatingSpec(policy="binsearch", r_sat_ms=40, width=0.25, confidence=0.9, accuracy=0.8, first_load=100,
                      runlength_s=5, resolution=0.05, budget_s=1000, trial_overhead_s=3)
    h = harness(tmp_path, FakeRunner(result=result))
    res = find_peak(spec, h.measure)
    assert res.converged, res.reason
    assert res.n_invalid == 1 and res.n_harness == 1
    assert [t.outcome for t in res.trials[2:5]] == ["harness", "measured", "invalid"]
    assert res.trials[2].load_ops_s == res.trials[3].load_ops_s
    assert 900 < res.peak_rate < 1000


def test_send_lag_only_reads_the_reason():
    lag = "generator saturated: send-lag p99 43.295 ms > bound 10.000 ms"
    assert send_lag_only({"valid": False, "reason": lag})
    assert send_lag_only({"valid": False, "reason": lag + "; send-lag p99 18.3 ms > bound 10.000 ms"})
    assert not send_lag_only({"valid": True, "reason": ""})
    assert not send_lag_only({"valid": False, "reason": lag + "; 3 errors, 0 timeouts"})
    assert not send_lag_only({"valid": False, "reason": "generator saturated: send error: rpc: connection "
                                                         "closed; 1747 errors, 0 timeouts"})
    assert not send_lag_only({"valid": False, "reason": "harness: load2: Run fstress failed"})


def _pids(pattern: str) -> set[int]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def _kill_once_running(pattern: str, wait_s: float = 60.0, before: frozenset[int] = frozenset()) -> list[int]:
    """SIGKILL the processes matching `pattern` that were not running `before`, one second after they
    appear (bounded wait): the playbook's start-up before fstress runs takes seconds on a busy box, and
    a generator an earlier trial left behind is not this trial's. The pids killed."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if _pids(pattern) - before:
            time.sleep(1.0)
            victims = sorted(_pids(pattern) - before)
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:       # it ended between the look and the kill
                    pass
            if victims:
                return victims
        time.sleep(0.1)
    raise AssertionError(f"no new process matching {pattern!r} within {wait_s:g} s")


def _measure_past_stalls(h: AnsibleHarness, load_ops_s: float, runlength_s: float):
    """One trial, re-run (as the controller does) while it is invalid for send lag alone: the VM
    stalled, not the server."""
    for _ in range(MAX_INVALID_PER_LOAD):
        t = h.measure(load_ops_s, runlength_s)
        if t.valid or not send_lag_only({"valid": t.valid, "reason": t.reason}):
            break
    return t


@pytest.mark.integration
@pytest.mark.xdist_group("slot2")
@pytest.mark.timeout(300)
def test_deploy_is_idempotent_and_run_trial_checks_its_input(tmp_path):
    """deploy_loadgen.yml a second time reports changed=0 (file set reused); run_trial.yml without
    trial_out, or a SCHED_FIFO priority out of range, fails with a message naming it; a trial on
    tmpfs (the local inventory runs fstress SCHED_FIFO) is valid."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, loop devices, cgroups)")
    slot = INTEGRATION_SLOT
    h = AnsibleHarness(slot=slot, factors={"fs": "tmpfs"}, results_dir=tmp_path, warmup_s=1,
                       fileset_rate=500, extravars={"fstress_lag_bound": "10ms"})
    try:
        h.provision()
        first = h.deploy()
        assert sum(first.stats.get("changed", {}).values()) >= 0
        again = h.deploy()
        assert again.ok and sum(again.stats.get("changed", {}).values()) == 0, again.stats
        bad = h._play("run_trial.yml", trial_id=0, load_ops_s=100.0, runlength_s=1.0)
        assert not bad.ok and "trial_out" in bad.message(), bad.message()
        bad = h._play("deploy_loadgen.yml", fstress_rt_priority=100)
        assert not bad.ok and "fstress_rt_priority=100 (0-99)" in bad.message(), bad.message()
        t = _measure_past_stalls(h, 200, 2)
        assert t.valid, t.reason
        assert t.raw["offered_rate"] == 200 and t.ops_total == 400
    finally:
        h.teardown()


def _bridge_slot(dst, k: int):
    """The local inventory with slot k as a bridge (bridge wbs<k>, 10.251.k.0/24): its SUT (.1), two
    load hosts, load<k> (.2) and load<k>b (.3), and nosy<k> (.9), on the bridge but no load host,
    each in its own namespace."""
    import yaml
    inv = yaml.safe_load((REPO / "inventory" / "local" / "hosts.yml").read_text())
    groups = inv["all"]["children"]
    net = f"10.251.{k}"
    groups[f"slot{k}"] = {"vars": {"wb_bridge": f"wbs{k}", "wb_prefix": 24}, "hosts": {
        f"sut{k}": {"wb_netns": f"wb-sut{k}", "wb_addr": f"{net}.1"},
        f"load{k}": {"wb_netns": f"wb-load{k}", "wb_addr": f"{net}.2", "wb_sut_addr": f"{net}.1"},
        f"load{k}b": {"wb_netns": f"wb-load{k}b", "wb_addr": f"{net}.3", "wb_sut_addr": f"{net}.1"},
        f"nosy{k}": {"wb_netns": f"wb-nosy{k}", "wb_addr": f"{net}.9"}}}
    groups["loadgen"]["hosts"][f"load{k}b"] = None
    dst.write_text(yaml.safe_dump(inv))
    return dst


@pytest.mark.integration
@pytest.mark.xdist_group("slot2")
@pytest.mark.timeout(600)
def test_a_rating_on_two_load_hosts_of_a_bridge_slot(tmp_path):
    """A smoke rating on a slot of one SUT and two load hosts on a bridge: every trial runs on both
    at half the rate with their own op streams (seeds, first calls), the merge is the exact sum of
    the hosts' figures kept beside it; then one host's fstress killed mid-trial makes that trial
    invalid, naming the host. A namespace on the bridge that is not a load host cannot mount the
    export."""
    from workbench.store.local import LocalStore
    from workbench.params.plan import plan_from_params, with_settings
    from workbench.pipeline.runner import run_rating
    from workbench.pipeline.slot import harness_for, teardown
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, loop devices, cgroups)")
    k = int(INTEGRATION_SLOT.removeprefix("slot"))
    hosts = [f"load{k}", f"load{k}b"]
    # a short budget: the trials, not a converged λ*, are the point (5 trials of 2 s + 4 s overhead)
    plan = plan_from_params({"profile": "smoke", "slot": INTEGRATION_SLOT, "load_hosts": 2, "budget_s": 30},
                            "two-hosts")
    plan = with_settings(plan, inventory=_bridge_slot(tmp_path / "hosts.yml", k), fileset_rate=2000)
    plan = dataclasses.replace(plan, workdir=str(tmp_path / "work"))
    store = LocalStore(tmp_path / "store")
    try:
        run_rating(plan, store, log=lambda s: None, teardown_after=False)
        trials = [t for t in store.trials(plan.rating_id) if (t.get("raw") or {}).get("per_host")]
        assert len(trials) >= 3, store.trials(plan.rating_id)
        for t in trials:
            per_host = t["raw"]["per_host"]
            assert [h["host"] for h in per_host] == hosts, per_host
            assert all(h["offered_rate"] == pytest.approx(t["load_ops_s"] / 2) for h in per_host), per_host
            a, b = per_host
            assert a["seed"] != b["seed"] and a["first_calls"] != b["first_calls"], (a, b)
            assert t["ops_total"] == a["ops_total"] + b["ops_total"], t
        # the warm-up's op stream is its own (seed 0, omitted from the JSON): trial 0 does not replay
        # its files from the page cache
        warm_seed = json.loads((tmp_path / "work" / "trials" / "warmup.json").read_text()).get("seed", 0)
        assert warm_seed not in {h["seed"] for t in trials for h in t["raw"]["per_host"]}, warm_seed
        probe = [str(REPO / "bin" / "fstress"), "probe", "--server", f"10.251.{k}.1:2049", "--mount-port", "20048",
                 "--export", "/export", "--pings", "1", "--timeout", "5s"]
        for ns, allowed in ((f"wb-load{k}b", True), (f"wb-nosy{k}", False)):
            out = subprocess.run(["ip", "netns", "exec", ns, *probe], capture_output=True, text=True, timeout=60)
            assert (out.returncode == 0) == allowed, (ns, out.returncode, out.stderr)
            assert allowed or "MNT3ERR_ACCES" in out.stderr, out.stderr      # reachable, but refused
        plan = plan.with_slot(INTEGRATION_SLOT)
        h = harness_for(plan)
        with ThreadPoolExecutor(1) as pool:
            # this slot's second load host only: tenant B of the tenants test (beside this one)
            # runs `fstress run ... --client-id 1` too
            pattern = rf"/{hosts[1]}/bin/fstress run .*--client-id 1 --seed"
            killed = pool.submit(_kill_once_running, pattern, before=frozenset(_pids(pattern)))
            t = h.measure(300, 8, trial_id=90, check_server=True)
            killed.result()                          # raises if it never found the process
        assert not t.valid and hosts[1] in t.reason, t.reason
    finally:
        teardown(plan.with_slot(INTEGRATION_SLOT))


# A load host that cannot be reached is the harness's failure, not the server's invalid trial. Real
# ansible-runner and OpenSSH: the slot's hosts are reached over SSH on a port where nothing listens
# (extra-vars override the inventory's local connection), so Ansible reports the load host
# unreachable before fstress runs. Nothing of the slot is touched: the first play only includes
# tasks whose condition is false, and asserts run on the controller.
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]        # closed again when the block ends: nothing listens


def test_an_unreachable_load_host_is_a_harness_failure_not_an_invalid_trial(tmp_path):
    unreachable = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": _closed_port(),
                   "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes "
                                              "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"}
    h = AnsibleHarness(slot="slot1", inventory=DEFAULT_INVENTORY, results_dir=tmp_path, extravars=unreachable)
    t0 = time.monotonic()
    t = h.measure(100.0, 1.0, trial_id=0, check_server=False)
    print(f"unreachable trial judged in {time.monotonic() - t0:.1f} s: {t.reason}")
    assert t.harness_failure and not t.valid and t.outcome == "harness", t
    assert "load1" in t.reason and "unreachable" in t.reason.lower(), t.reason
    assert h.last_run is not None and h.last_run.stats.get("dark", {}).get("load1"), h.last_run.stats


@pytest.mark.integration
@pytest.mark.xdist_group("slot4")        # beside the v4.1 CLI rating (test_cli.py); filer4 / xload4 are its names
@pytest.mark.timeout(300)
def test_an_nfs41_only_filer_is_probed_and_a_v3_only_one_refused(tmp_path):
    """An external Ganesha that speaks only NFSv4 (no portmapper, no MOUNT) is described over v4.1 from a
    load host: no portmapper asked, port 2049, the session it grants in sysinfo. The same filer speaking
    only v3 fails the v4.1 probe, naming the version mismatch, before any load."""
    from conftest import start_slot, stop_slot
    from workbench.measure.ansible import HarnessError
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, rpcbind, Ganesha)")
    inv = tmp_path / "external.yml"
    text = (REPO / "inventory" / "external" / "hosts.yml").read_text()
    inv.write_text(text.replace("xload1", "xload4").replace("wb-filer\n", "wb-filer4\n")
                   .replace("filer1:", "filer4:").replace("10.251.11.", "10.251.14."))
    filer = {"address": "10.251.14.1", "export": "/export"}
    stop_slot("filer4")
    try:
        start_slot("filer4", "--protocols", "4")
        h = AnsibleHarness(slot="filer4", inventory=inv, results_dir=tmp_path / "v4", external=filer,
                           factors={"nfs_version": "4.1"})
        try:
            h.provision()
        finally:
            h.teardown()
        probe = json.loads((tmp_path / "v4" / "sysinfo.json").read_text())["probe"]
        assert probe["nfs_version"] == "4.1" and probe["rpc_programs"] == [] and probe["mount_port_from"] == "none"
        assert probe["nfs_port"] == 2049 and probe["nfs4"]["max_slots"] >= 1 and probe["nfs4"]["lease_time_s"] > 0
        stop_slot("filer4")
        start_slot("filer4", "--protocols", "3")
        h = AnsibleHarness(slot="filer4", inventory=inv, results_dir=tmp_path / "v3", external=filer,
                           factors={"nfs_version": "4.1"})
        try:
            with pytest.raises(HarnessError, match=r"fstress: probe: NFSv4 NULL .* program version mismatch"):
                h.provision()
        finally:
            h.teardown()
    finally:
        stop_slot("filer4")
    assert "wb-xload4" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
