"""AnsibleHarness: JSON → TrialResult mapping and validity rules (fake runner), the CLI's input
checks, and (integration) real ratings on the local workbench through ansible-runner."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from workbench import cli
from workbench.measure.ansible import AnsibleHarness
from workbench.measure.playbook import PlaybookRun, _event_failure
from workbench.config.factors import factor_vars
from workbench.measure.trialjson import result_from_json
from workbench.config import paths
from workbench.controller.spec import RatingSpec
from workbench.controller.decide import find_peak

MAX_INVALID_PER_LOAD = RatingSpec.max_invalid_per_load   # the controller's re-runs of one load

REPO = Path(__file__).resolve().parent.parent


def fstress_json(**over):
    d = {"offered_rate": 500.0, "achieved_rate": 500.0, "duration_s": 5.0, "ops_total": 2500,
         "mean_ms": 3.5, "std_ms": 1.2, "p50_ms": 3.0, "p95_ms": 6.0, "p99_ms": 9.0, "max_ms": 20.0,
         "errors": 0, "timeouts": 0, "retransmits": 0, "generator_saturated": False,
         "saturation_reason": "", "send_lag_ms": {"mean": 0.01, "p99": 0.1, "max": 0.5}}
    d.update(over)
    return d


class FakeRunner:
    """Stands in for ansible-runner: records calls; run_trial writes `result` (or fails)."""

    def __init__(self, result="default", fail=None, rc=0):
        self.calls: list[tuple[str, dict]] = []
        self.result = fstress_json() if result == "default" else result
        self.fail = fail
        self.rc = rc

    def __call__(self, playbook, extravars, *, inventory, private_data_dir, log_path):
        self.calls.append((Path(playbook).name, dict(extravars)))
        if "sysinfo_dest" in extravars:            # provision_sut.yml fetches the SUT's sysinfo
            Path(extravars["sysinfo_dest"]).write_text(json.dumps({"host": "fake"}))
        if Path(playbook).name == "run_trial.yml":
            res = self.result(extravars) if callable(self.result) else self.result
            if res is not None:
                Path(extravars["trial_out"]).write_text(json.dumps(res))
        if self.fail:
            return PlaybookRun(rc=2, status="failed", failures=[self.fail])
        return PlaybookRun(rc=self.rc, status="successful" if self.rc == 0 else "failed")


def rating_files(results: Path) -> tuple[dict, list[dict], Path]:
    """(result, trial records in order, rating directory) of a `workbench rate --results DIR`."""
    rating = results / "ratings" / results.name
    trials = [json.loads(f.read_text()) for f in sorted((rating / "trials").glob("*.json"))]
    return json.loads((rating / "result.json").read_text()), trials, rating


def harness(tmp_path, runner, **kw):
    return AnsibleHarness(slot="slot1", factors=kw.pop("factors", {"threads": 8, "memory_mb": 128}),
                          workload="web_server", results_dir=tmp_path, runner=runner, warmup_s=1.0, **kw)


# ------------------------------------------------------------------ mapping + validity

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


def test_playbook_failure_is_invalid_with_the_failing_task(tmp_path):
    msg = "load1: Run fstress failed: non-zero return code: fstress: connection reset by peer"
    t = harness(tmp_path, FakeRunner(result=None, fail=msg)).measure(500, 5)
    assert not t.valid and t.reason == "harness: " + msg
    assert t.mean_ms == 0.0 and t.load_ops_s == 500


def test_missing_json_is_invalid(tmp_path):
    t = harness(tmp_path, FakeRunner(result=None)).measure(500, 5)
    assert not t.valid and "no merged result" in t.reason


def test_stale_json_of_an_earlier_run_is_not_reused(tmp_path):
    (tmp_path / "trials").mkdir(parents=True)
    (tmp_path / "trials" / "0.json").write_text(json.dumps(fstress_json()))
    t = harness(tmp_path, FakeRunner(result=None, fail="x: Run fstress failed: killed")).measure(500, 5)
    assert not t.valid and "killed" in t.reason


def test_runner_exception_is_an_invalid_trial(tmp_path):
    def broken(*a, **k):
        raise OSError("pexpect: cannot spawn")
    t = harness(tmp_path, broken).measure(500, 5)
    assert not t.valid and "runner error: OSError: pexpect: cannot spawn" in t.reason


def test_result_from_json_directly():
    t = result_from_json(fstress_json(ops_total=0, achieved_rate=500.0), 500, 5)
    assert not t.valid and "no operations" in t.reason
    t = result_from_json(fstress_json(), 500, 5, min_achieved=0.99)
    assert t.valid


def test_event_failure_message():
    ev = {"event": "runner_on_failed", "event_data": {
        "host": "load1", "task": "Run fstress",
        "res": {"msg": "non-zero return code", "rc": 1,
                "stderr": "fstress: server unreachable\nfstress: warning: --start-at is 0.1s in the past"}}}
    assert _event_failure(ev) == "load1: Run fstress failed: non-zero return code (rc 1): fstress: server unreachable"
    ev2 = {"event": "runner_on_failed", "event_data": {"host": "load1", "task": "Run fstress",
           "res": {"msg": "non-zero return code", "rc": -9, "stderr": ""}}}
    assert _event_failure(ev2) == "load1: Run fstress failed: non-zero return code (killed by signal 9)"
    assert _event_failure({"event": "runner_on_ok"}) is None
    ev["event_data"]["ignore_errors"] = True
    assert _event_failure(ev) is None


def test_provision_deploy_teardown_order_and_vars(tmp_path):
    r = FakeRunner()
    h = harness(tmp_path, r, factors={"fs": "btrfs", "disks": 2, "read_iops": 100})
    h.provision(); h.deploy(); h.measure(100, 2); h.teardown()
    assert [c[0] for c in r.calls] == ["provision_sut.yml", "deploy_loadgen.yml", "run_trial.yml", "teardown.yml"]
    ev = r.calls[0][1]
    assert ev["nfs_server_fs_type"] == "btrfs" and ev["nfs_server_disks"] == 2
    assert ev["nfs_server_disk_read_iops"] == 100
    assert ev["sysinfo_dest"] == str(tmp_path / "sysinfo.json")


def test_provision_failure_raises(tmp_path):
    from workbench.measure.ansible import HarnessError
    h = harness(tmp_path, FakeRunner(fail="sut1: Validate failed: nfs_server_fs_type must be ..."))
    with pytest.raises(HarnessError, match="provision_sut.yml failed: sut1: Validate failed"):
        h.provision()


@pytest.mark.parametrize("factors,match", [
    ({"fs": "zfs"}, "fs must be one of"),
    ({"disks": 0}, "disks must be >= 1"),
    ({"disks": 2, "fs": "ext4"}, "needs fs=btrfs"),
    ({"memory_mb": 16}, "memory_mb must be 0"),
    ({"threads": "many"}, "threads must be a whole number"),
    ({"colour": "red"}, "unknown factor"),
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


def test_measure_rejects_bad_load(tmp_path):
    h = harness(tmp_path, FakeRunner())
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            h.measure(bad, 5)


def test_find_peak_through_the_fake_harness(tmp_path):
    """The controller drives the harness: an M/M/1-ish fake server, one invalid trial re-run."""
    cap = 1000.0
    calls = {"n": 0}

    def result(ev):
        calls["n"] += 1
        load = ev["load_ops_s"]
        if calls["n"] == 3:
            return None                  # e.g. fstress killed: no JSON → invalid, re-run
        mean = 1.0 / max(cap - load, 1.0) * 1000 * 2
        return fstress_json(offered_rate=load, achieved_rate=load, mean_ms=mean, p95_ms=3 * mean)

    spec = RatingSpec(r_sat_ms=40, width=0.25, confidence=0.9, accuracy=0.8, first_load=100,
                      runlength_s=5, resolution=0.05, budget_s=1000, trial_overhead_s=3)
    h = harness(tmp_path, FakeRunner(result=result))
    res = find_peak(spec, h.measure)
    assert res.converged, res.reason
    assert res.n_invalid == 1
    assert 900 < res.peak_rate < 1000


# ------------------------------------------------------------------ CLI (no hosts touched)

def test_cli_bad_input_one_line_before_provisioning(tmp_path, capsys):
    for argv, match in ((["rate", "--fs", "zfs"], "fs: 'zfs' is not one of ext4"),
                        (["rate", "--disks", "0"], "disks: 0 is out of range (≥ 1"),
                        (["rate", "--memory-mb", "8"], "memory_mb must be 0"),
                        (["rate", "--workload", "nope"], "workload: 'nope' is not one of web_server"),
                        (["rate", "--slot", "slot9"], "slot 'slot9' is not a group"),
                        (["rate", "--inventory", str(tmp_path / "none.yml")], "inventory"),
                        (["rate", "--r-sat-ms", "-1"], "r_sat_ms")):
        rc = cli.main(argv + ["--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert rc == 2, argv
        assert err.count("\n") == 1 and err.startswith("workbench: ") and match in err, (argv, err)
    assert not (tmp_path / "out").exists()


@pytest.fixture
def private_leases(tmp_path, monkeypatch):
    """Fake-harness ratings take their slot leases here, never a real rating's slot."""
    monkeypatch.setattr(paths, "LEASES", tmp_path / "leases")


def test_cli_rate_with_fake_harness_writes_results(tmp_path, capsys, private_leases):
    cap = 800.0

    def result(ev):
        load = ev["load_ops_s"]
        mean = 1000.0 / max(cap - load, 1.0) * 2
        return fstress_json(offered_rate=load, achieved_rate=load, mean_ms=mean, p95_ms=2 * mean)

    fake = FakeRunner(result=result)

    def factory(**kw):
        return AnsibleHarness(runner=fake, **kw)

    args = cli._parser().parse_args(["rate", "--out", str(tmp_path), "--profile", "quick", "--quiet"])
    rc = cli.cmd_rate(args, harness_factory=factory)
    out = capsys.readouterr().out
    assert rc == 0 and "peak rate λ*" in out
    names = [c[0] for c in fake.calls]
    assert names[:2] == ["provision_sut.yml", "deploy_loadgen.yml"] and names[-1] == "teardown.yml"
    rating = tmp_path / "ratings" / tmp_path.name           # the LocalStore's layout, as in S3
    trials = [json.loads(f.read_text()) for f in sorted((rating / "trials").glob("*.json"))]
    # one discarded warm-up trial after deploy (not in the log), then one run per logged trial
    assert len(trials) == names.count("run_trial.yml") - 1
    assert [t["n"] for t in trials] == list(range(len(trials)))
    assert fake.calls[2][0] == "run_trial.yml" and fake.calls[2][1]["trial_out"].endswith("trials/warmup.json")
    res = json.loads((rating / "result.json").read_text())
    assert res["converged"] and 700 < res["peak_rate"] < 800
    assert json.loads((rating / "spec.json").read_text())["profile"] == "quick"
    assert (rating / "report.html").is_file() and (rating / "trials.parquet").is_file()
    tested = {t["load_ops_s"] for t in trials}
    nearest = min(tested, key=lambda x: abs(x - res["peak_rate"]))
    assert f"R̄ at {nearest:g} ops/s " in out and "the tested load nearest λ*" in out


def test_cli_teardown_runs_when_the_search_fails(tmp_path, private_leases):
    fake = FakeRunner()

    def factory(**kw):
        h = AnsibleHarness(runner=fake, **kw)
        h.measure = lambda load, rl, **kw: (_ for _ in ()).throw(RuntimeError("boom"))
        return h

    args = cli._parser().parse_args(["rate", "--out", str(tmp_path), "--quiet"])
    with pytest.raises(RuntimeError, match="boom"):
        cli.cmd_rate(args, harness_factory=factory)
    assert fake.calls[-1][0] == "teardown.yml"


def test_cli_plan(capsys):
    assert cli.main(["plan", "--workload", "web_server", "--reps", "3"]) == 0
    out = capsys.readouterr().out
    assert "expected cost" in out and "convergence" in out


def test_timeouts_in_an_overloaded_trial_stay_valid_with_overload_ms():
    raw = fstress_json(timeouts=40, mean_ms=900.0)
    assert not result_from_json(raw, 500, 5).valid
    t = result_from_json(raw, 500, 5, overload_ms=50.0)
    assert t.valid and t.reason.startswith("overloaded: 40 timeouts")
    # below the threshold, or with NFS errors, timeouts still invalidate
    assert not result_from_json(fstress_json(timeouts=4, mean_ms=20.0), 500, 5, overload_ms=50.0).valid
    assert not result_from_json(fstress_json(timeouts=4, errors=1, mean_ms=900.0), 500, 5, overload_ms=50.0).valid


# ------------------------------------------------------------------ integration (real Ganesha)
# Slot 2 of the local inventory (the ROLES tests use slot 1 for single-slot runs).

INTEGRATION_SLOT = os.environ.get("WB_HARNESS_SLOT", "slot2")
STATE = Path("/tmp/workbench/hosts")


def _pids_of(exe: str) -> list[int]:
    """Pids whose argv[0] is exactly `exe` (processes this test's harness started)."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            argv0 = (p / "cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        if argv0 == exe:
            out.append(int(p.name))
    return out


def _kill_later(delay_s: float, pids_fn, what: list[str]) -> threading.Thread:
    def run():
        deadline = time.monotonic() + delay_s + 10
        time.sleep(delay_s)
        while time.monotonic() < deadline:
            pids = pids_fn()
            if pids:
                for pid in pids:
                    os.kill(pid, 9)
                what.append(f"killed {pids}")
                return
            time.sleep(0.1)
        what.append("nothing to kill")
    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th


def _load_host(slot: str) -> str:
    return "load" + slot.removeprefix("slot")


def _sut_host(slot: str) -> str:
    return "sut" + slot.removeprefix("slot")


def _ganesha_pid(slot: str) -> list[int]:
    f = STATE / _sut_host(slot) / "ganesha.pid"
    try:
        pid = int(f.read_text().strip())
    except (OSError, ValueError):
        return []
    return [pid] if Path(f"/proc/{pid}").exists() else []


def _send_lag_only(trial: dict) -> bool:
    """Invalid only because fstress's send-lag p99 passed its bound: the generator was late, as
    when this VM stalls (20-45 ms at times, tests/test_fstress_integration.py LAG_BOUND)."""
    reason = str(trial.get("reason") or "")
    return (not trial.get("valid") and reason.startswith("generator saturated: ")
            and all(x.startswith("send-lag") for x in reason.removeprefix("generator saturated: ").split("; ")))


def test_send_lag_only_reads_the_reason():
    lag = "generator saturated: send-lag p99 43.295 ms > bound 10.000 ms"
    assert _send_lag_only({"valid": False, "reason": lag})
    assert _send_lag_only({"valid": False, "reason": lag + "; send-lag p99 18.3 ms > bound 10.000 ms"})
    assert not _send_lag_only({"valid": True, "reason": ""})
    assert not _send_lag_only({"valid": False, "reason": lag + "; 3 errors, 0 timeouts"})
    assert not _send_lag_only({"valid": False, "reason": "generator saturated: send error: rpc: connection "
                                                         "closed; 1747 errors, 0 timeouts"})
    assert not _send_lag_only({"valid": False, "reason": "harness: load2: Run fstress failed"})


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_quick_rating_end_to_end_with_faults(tmp_path, capsys):
    """`workbench rate --profile quick` on a real slot converges, while trial 2 loses its fstress
    and trial 4 its Ganesha mid-trial: both invalid with a reason, re-run, the rating completes."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, loop devices, cgroups)")
    slot = INTEGRATION_SLOT
    fstress_exe = str(STATE / _load_host(slot) / "bin" / "fstress")
    kills: dict[int, list[str]] = {}

    class FaultyHarness(AnsibleHarness):
        def measure(self, load, runlength, **kw):
            n = kw.get("trial_id") if kw.get("trial_id") != "warmup" else None   # not the warm-up trial
            th = None
            if n == 1:
                kills[n] = []
                th = _kill_later(self.warmup_s + runlength / 2 + 0.5, lambda: _pids_of(fstress_exe), kills[n])
            elif n == 3:
                kills[n] = []
                th = _kill_later(self.warmup_s + runlength / 2 + 0.5, lambda: _ganesha_pid(slot), kills[n])
            t = super().measure(load, runlength, **kw)
            if th is not None:
                th.join()
            return t

    args = cli._parser().parse_args(["rate", "--workload", "web_server", "--slot", slot,
                                     "--profile", "quick", "--out", str(tmp_path)])
    t0 = time.monotonic()
    rc = cli.cmd_rate(args, harness_factory=FaultyHarness)
    wall = time.monotonic() - t0
    out = capsys.readouterr()
    res, trials, rating = rating_files(tmp_path)
    print(out.err[-4000:], out.out, f"wall {wall:.0f} s", sep="\n")
    assert kills[1] and kills[1][0].startswith("killed"), kills
    assert kills[3] and kills[3][0].startswith("killed"), kills
    # fstress killed: the run task fails → invalid "harness: ... killed by signal 9"
    assert not trials[1]["valid"] and trials[1]["reason"].startswith("harness: "), trials[1]
    assert "signal 9" in trials[1]["reason"], trials[1]
    # Ganesha killed: fstress sees the connection drop (errors, or it fails) → invalid with a reason
    assert not trials[3]["valid"] and trials[3]["reason"], trials[3]
    # each invalid trial is re-run at the same load until valid, and the server is back for the
    # re-run: a re-run may only fail for send lag alone (the VM stalling, as any trial may)
    for k in (1, 3):
        reruns = trials[k + 1:k + 1 + MAX_INVALID_PER_LOAD]
        n_lag = next((i for i, t in enumerate(reruns) if not _send_lag_only(t)), len(reruns))
        assert n_lag < len(reruns) and reruns[n_lag]["valid"], reruns
        assert all(t["load_ops_s"] == trials[k]["load_ops_s"] for t in reruns[:n_lag + 1]), reruns
    # it converges; only when the host stalled (trials invalid for send lag alone, beyond the two
    # faults) may it instead run out of budget (CI: 11 of 33 trials, budget exhausted at [900, 950])
    stalled = sum(_send_lag_only(t) for t in trials)
    assert rc == 0, res["reason"]
    assert res["converged"] or (res["reason"].startswith("budget exhausted") and stalled >= 1), (
        res["reason"], stalled)
    assert res["n_trials"] == len(trials) and res["n_invalid"] >= 2
    lo, hi = res["bracket"]
    assert 0 < lo <= res["peak_rate"] <= hi < 1e6
    assert (rating / "sysinfo.json").is_file() and (rating / "spec.json").is_file()
    assert len(list((tmp_path / "work" / "trials").glob("*.json"))) >= len(trials) - 2
    assert "peak rate λ*" in out.out


@pytest.mark.integration
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
        for _ in range(MAX_INVALID_PER_LOAD):     # re-run when the VM stalled, as the controller does
            t = h.measure(200, 2)
            if t.valid or not _send_lag_only({"valid": t.valid, "reason": t.reason}):
                break
        assert t.valid, t.reason
        assert t.raw["offered_rate"] == 200 and t.ops_total == 400
    finally:
        h.teardown()


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_two_slots_rate_concurrently(tmp_path):
    """`workbench rate --profile quick` on slot1 and slot2 at the same time: both converge, each
    SUT's sysinfo names its own host and address, and the two λ* agree within 1.3× (same
    configuration on the same machine; the other slot is only a neighbour, not a client).
    The disk is throttled to 40 read IOPS (λ* ≈ 340 ops/s): both fstress share core 1 and both
    Ganesha core 0, and at quick's own 100 IOPS (λ* ≈ 950) the search offers 800 ops/s per slot,
    where two generators on one core miss the 10 ms send-lag bound (CI: p99 12.7 ms, 3 invalid
    trials in a row, rating unconverged). Isolation is what is tested here, not the box's ceiling."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, loop devices, cgroups)")
    exe = str(Path(sys.executable).parent / "workbench")
    procs = {}
    for k in (1, 2):
        out = tmp_path / f"slot{k}"
        cmd = [exe, "rate", "--workload", "web_server", "--profile", "quick", "--slot", f"slot{k}",
               "--read-iops", "40", "--quiet", "--out", str(out)]
        procs[k] = (out, subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
    peaks = {}
    for k, (out, p) in procs.items():
        text, _ = p.communicate(timeout=840)
        assert p.returncode == 0, f"slot{k}:\n{text[-3000:]}"
        res, _, rating = rating_files(out)
        assert res["converged"], (k, res["reason"])
        info = json.loads((rating / "sysinfo.json").read_text())
        assert info["host"] == f"sut{k}", info["host"]
        assert info["network"]["address"] == f"10.251.{k}.1", info["network"]
        # every trial's JSON was measured against this slot's own server
        for f in (out / "work" / "trials").glob("*.json"):
            raw = json.loads(f.read_text())
            assert raw["server"] == f"10.251.{k}.1:2049", (f, raw["server"])
        peaks[k] = res["peak_rate"]
    ratio = max(peaks.values()) / min(peaks.values())
    assert ratio <= 1.3, peaks
