"""Faults counted right (issue 13): whole ratings through `run_rating` with a simulated server
behind the Harness contract (no slot, no Ansible), under store and harness faults.

* MinIO stopped for 60 s in the middle of a rating: the rating completes, every trial stored once
  and measured once, the store's retries logged (a dedicated MinIO, not the session's).
* A harness failure is re-run at the same load and is not the server's invalid trial: λ* is the one
  of the same rating without it; result.json, gx.json, the report and the log say so.
* A trial whose store write failed is kept on the worker and stored — not measured — on the retry;
  a different record already stored for the trial wins over the new one.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import logging
import subprocess
import threading
import time
from html import escape as html_escape
from pathlib import Path
from typing import Callable

import pytest
from conftest_store import MINIO_SH, free_ports

from analysis.rating_report import report_step
from workbench.config import paths
from workbench.controller.trial import TrialResult
from workbench.lease import leases
from workbench.measure.playbook import PlaybookRun
from workbench.measure.simulated import SimulatedServer
from workbench.measure.trialjson import harness_result
from workbench.params.plan import plan_from_params
from workbench.pipeline import steps
from workbench.pipeline.runner import run_rating
from workbench.store.base import StoreError
from workbench.store.local import LocalStore
from workbench.store.s3 import ResultsStore, S3Config

CAPACITY, SEED = 800.0, 0          # smoke profile on this server: 8 trials, converged (λ* ≈ 785)


@pytest.fixture
def private_slots(tmp_path, monkeypatch):
    """Leases in the test's own directory (never a real rating's slot); no fstress binary needed."""
    monkeypatch.setattr(paths, "LEASES", tmp_path / "leases")
    fake = tmp_path / "fstress"
    fake.write_text("")
    monkeypatch.setattr(steps, "FSTRESS", fake)


def _plan(tmp_path, rid):
    plan = plan_from_params({"profile": "smoke", "slot": "slot1"}, rid)
    return dataclasses.replace(plan, workdir=str(tmp_path / "work" / rid))


class SimRig:
    """A harness factory over one SimulatedServer: a harness per step (as the pipeline makes
    them), the server's samples in trial order; counts measure() calls per trial; `before(k)` and
    `outcome(k)` hooks inject faults; `wall_s` of real time per trial."""

    def __init__(self, wall_s: float = 0.0, fail_harness: set[int] = frozenset()):
        self.server = SimulatedServer(capacity_ops_s=CAPACITY, seed=SEED)
        self.calls: collections.Counter[int] = collections.Counter()
        self.wall_s, self.fail_harness = wall_s, set(fail_harness)
        self.after_measure = None
        self.tamper: dict[int, Callable[[TrialResult], TrialResult]] = {}     # trial k → what it measures instead
        rig = self

        class Harness:
            def __init__(self, **kw):
                self.results_dir = Path(kw["results_dir"])

            def provision(self):
                self.results_dir.mkdir(parents=True, exist_ok=True)
                (self.results_dir / "sysinfo.json").write_text(json.dumps({"host": "simulated"}))
                return PlaybookRun(rc=0, status="successful")

            def deploy(self):
                return PlaybookRun(rc=0, status="successful")

            def warm_up(self, load, duration_s):
                return TrialResult(mean_ms=1.0, p95_ms=2.0, achieved_rate=load, load_ops_s=load,
                                   runlength_s=duration_s)

            def teardown(self):
                return PlaybookRun(rc=0, status="successful")

            def measure(self, load, runlength_s, *, trial_id=None, check_server=None):
                rig.calls[trial_id] += 1
                time.sleep(rig.wall_s)
                if trial_id in rig.fail_harness:
                    t = harness_result(load, runlength_s, "harness: load1: Run fstress unreachable: "
                                                          "Failed to connect to the host via ssh")
                else:
                    t = rig.server.measure(load, runlength_s)
                    t = rig.tamper.get(trial_id, lambda x: x)(t)
                if rig.after_measure is not None:
                    rig.after_measure(trial_id)
                return t
        self.make = Harness


def _baseline(tmp_path):
    """The same rating without faults: its records and result."""
    rig = SimRig()
    store = LocalStore(tmp_path / "baseline")
    res = run_rating(_plan(tmp_path, "baseline"), store, log=lambda s: None, make=rig.make, report=report_step)
    return store.trials("baseline"), res


def _server_view(records):
    """What the controller reads of the trials: everything but the decision text, n and when and
    how long the measurement ran."""
    return [{k: v for k, v in r.items() if k not in ("n", "decision", "started_unix", "wall_s")} for r in records
            if r.get("outcome") != "harness"]


# -- (a) MinIO down for 60 s ----------------------------------------------------------------------

@pytest.mark.timeout(240)
def test_minio_down_for_60_s_mid_rating_loses_and_repeats_no_trial(tmp_path, private_slots, caplog):
    d = tmp_path / "minio"
    port, console = free_ports(2)
    up = [str(MINIO_SH), "up", "--dir", str(d), "--port", str(port), "--console-port", str(console)]
    out = subprocess.run(up, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    cfg = S3Config.from_env(dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line))
    outage = {}
    restart: list[threading.Thread] = []
    try:
        store = ResultsStore(cfg, retry_s=150)
        store.ensure_bucket()
        rig = SimRig(wall_s=1.0)

        def after_measure(k):
            if k != 3:
                return
            # trials 0-2 are stored (trial_step returned them); trial 3 is measured, not yet stored
            assert [r["n"] for r in store.trials("minio-outage")] == [0, 1, 2]
            down = subprocess.run([str(MINIO_SH), "down", "--dir", str(d)], capture_output=True, text=True,
                                  timeout=30)
            assert down.returncode == 0, down.stderr
            outage["down"] = time.monotonic()

            def back():
                time.sleep(max(0.0, outage["down"] + 60.0 - time.monotonic()))
                outage["up_cmd"] = time.monotonic()
                r = subprocess.run(up, capture_output=True, text=True, timeout=60)
                outage["up"] = time.monotonic()
                outage["up_rc"] = (r.returncode, r.stderr)
            restart.append(threading.Thread(target=back, daemon=True))
            restart[0].start()
        rig.after_measure = after_measure
        plan = _plan(tmp_path, "minio-outage")
        t0 = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="workbench.store"):
            res = run_rating(plan, store, log=lambda s: None, make=rig.make, report=report_step)
        wall = time.monotonic() - t0
        restart[0].join(timeout=60)
        print(f"rating wall {wall:.1f} s; MinIO down {outage['up_cmd'] - outage['down']:.1f} s, "
              f"back {outage['up'] - outage['down']:.1f} s after the stop")
        assert outage["up_rc"][0] == 0, outage["up_rc"]
        assert outage["up_cmd"] - outage["down"] >= 60.0

        records = store.trials(plan.rating_id)
        n = len(records)
        assert [r["n"] for r in records] == list(range(n)) and n >= 6
        assert dict(rig.calls) == {k: 1 for k in range(n)}          # every trial measured exactly once
        base_records, base = _baseline(tmp_path)
        assert _server_view(records) == _server_view(base_records)  # nothing lost, nothing re-measured
        assert res["converged"] and res["peak_rate"] == base["peak_rate"] and res["n_trials"] == n
        assert store.get_json(store.rating_key(plan.rating_id, "result.json"))["n_trials"] == n
        assert store.exists(store.rating_key(plan.rating_id, "report.html"))
        assert not list((plan.local_dir() / "pending").glob("*.json"))   # stored, so no longer kept
        lines = [r.getMessage() for r in caplog.records if r.name == "workbench.store"]
        put3 = [ln for ln in lines if f"create ratings/{plan.rating_id}/trials/00003.json" in ln]
        assert len(put3) >= 5, lines                                # the write of trial 3 waited, retrying
        assert all(f"127.0.0.1:{port}" in ln and "attempt" in ln and cfg.secret_key not in ln for ln in lines)
        assert wall < 100, wall
    finally:
        for th in restart:
            th.join(timeout=90)
        subprocess.run([str(MINIO_SH), "down", "--dir", str(d)], capture_output=True, timeout=30)


# -- (b) a harness failure ------------------------------------------------------------------------

def test_a_harness_failure_is_re_run_and_not_the_servers_invalid_trial(tmp_path, private_slots):
    base_records, base = _baseline(tmp_path)
    rig = SimRig(fail_harness={2})
    store = LocalStore(tmp_path / "store")
    plan = _plan(tmp_path, "harness-fault")
    lines: list[str] = []
    res = run_rating(plan, store, log=lines.append, make=rig.make, report=report_step)
    records = store.trials(plan.rating_id)
    assert [r["n"] for r in records] == list(range(len(base_records) + 1))
    assert dict(rig.calls) == {k: 1 for k in range(len(records))}
    failed, rerun = records[2], records[3]
    assert failed["outcome"] == "harness" and failed["harness_failure"] and not failed["valid"]
    assert (rerun["load_ops_s"], rerun["runlength_s"]) == (failed["load_ops_s"], failed["runlength_s"])
    assert rerun["decision"].startswith("re-run after a harness failure (harness: load1: Run fstress")
    # the server's trials are those of the rating without the failure: the same λ*
    assert _server_view(records) == _server_view(base_records)
    assert res["peak_rate"] == base["peak_rate"] and res["converged"] == base["converged"]
    assert res["bracket"] == base["bracket"] and res["peak_rate_ci"] == base["peak_rate_ci"]
    result = store.get_json(store.rating_key(plan.rating_id, "result.json"))
    assert result["n_invalid"] == base["n_invalid"] and result["n_harness"] == 1
    assert result["n_trials"] == base["n_trials"] + 1 == len(records)
    assert [t["outcome"] for t in result["trials"]].count("harness") == 1
    assert result["trials"][2]["outcome"] == "harness" and result["n_excluded_gx"] == base["n_excluded_gx"]
    gx = store.get_json(store.rating_key(plan.rating_id, "gx.json"))
    assert gx["harness"] == {"2": failed["reason"]} and "2" not in gx["excluded"]
    assert gx["n_checked"] == len(records) - 1
    html = store.get_bytes(store.rating_key(plan.rating_id, "report.html")).decode()
    assert '<tr class="harness">' in html and "HARNESS FAILURE" in html
    assert "1 harness failure(s) not judged" in html
    trial_lines = [ln for ln in lines if ln.lstrip().startswith("trial ")]
    assert "HARNESS FAILURE: load1" in trial_lines[2] and "INVALID" not in trial_lines[2]
    assert lines[-2].startswith("  λ* = ")
    df = store.trials_df(plan.rating_id)
    assert list(df["outcome"]).count("harness") == 1


def test_a_trial_failing_great_expectations_is_excluded_before_decide_and_re_run(tmp_path, private_slots):
    """Trial 2 has NFS errors (the harness accepts it, as it would a server's EIO): the suite, run as the
    trial is recorded, excludes it before the controller reads it; trial 3 re-runs its load and
    runlength; the result, gx.json and the report name the failed expectation."""
    base_records, base = _baseline(tmp_path)
    rig = SimRig()
    rig.tamper[2] = lambda t: dataclasses.replace(t, errors=3)
    store = LocalStore(tmp_path / "store")
    plan = _plan(tmp_path, "gx-fault")
    lines: list[str] = []
    res = run_rating(plan, store, log=lines.append, make=rig.make, report=report_step)
    records = store.trials(plan.rating_id)
    bad, rerun = records[2], records[3]
    assert not bad["valid"] and bad["gx"] == "failed" and records[1]["gx"] == "passed"
    assert bad["reason"].startswith("great_expectations: ") and "error" in bad["reason"], bad["reason"]
    assert (rerun["load_ops_s"], rerun["runlength_s"]) == (bad["load_ops_s"], bad["runlength_s"])
    assert rerun["decision"] == f"re-run invalid trial ({bad['reason']})"
    def before(recs):
        return [{k: v for k, v in r.items() if k != "gx"} for r in _server_view(recs[:2])]
    assert before(records) == before(base_records)          # the same server up to the bad trial
    assert res["converged"] and res["trials"][2]["valid"] is False, res["reason"]
    assert store.get_json(store.rating_key(plan.rating_id, "gx.json"))["excluded"]["2"] == bad["reason"]
    html = store.get_bytes(store.rating_key(plan.rating_id, "report.html")).decode()
    assert html_escape(bad["reason"]) in html


def test_a_harness_that_keeps_failing_ends_the_rating_with_a_result_saying_why(tmp_path, private_slots):
    rig = SimRig(fail_harness=set(range(3, 100)))
    store = LocalStore(tmp_path / "store")
    plan = _plan(tmp_path, "harness-down")
    res = run_rating(plan, store, log=lambda s: None, make=rig.make, report=report_step)
    assert not res["converged"] and res["reason"].startswith("harness failing: 3 harness failures in a row")
    assert "Failed to connect to the host via ssh" in res["reason"]
    # the server's invalid trials are only those great_expectations excluded (the simulator's achieved
    # rate is Poisson: 2 s at 400 ops/s may fall below 95 %), never the harness failures
    assert res["n_trials"] == 6 and res["n_harness"] == 3 and res["n_invalid"] == res["n_excluded_gx"]
    assert res["peak_rate"] is not None                    # the λ* the server's 3 trials give


# -- the trial kept on the worker until stored ----------------------------------------------------

class FlakyStore(LocalStore):
    """put_trial fails for trial `k` the first time, as when the store's retries ran out."""

    def __init__(self, root, k):
        super().__init__(root)
        self.k, self.failed = k, 0

    def put_trial(self, rating_id, n, record):
        if n == self.k and not self.failed:
            self.failed += 1
            raise StoreError(f"create trials/{n:05d}.json: S3 endpoint http://127.0.0.1:1 still failing "
                             f"after 40 attempt(s) in 300.0 s")
        return super().put_trial(rating_id, n, record)


def test_a_trial_whose_store_write_failed_is_stored_not_measured_on_the_retry(tmp_path, private_slots):
    rig = SimRig()
    store = FlakyStore(tmp_path / "store", k=3)
    plan = _plan(tmp_path, "flaky")
    with pytest.raises(StoreError, match="still failing"):
        run_rating(plan, store, log=lambda s: None, make=rig.make, report=report_step)
    pending = plan.local_dir() / "pending" / "00003.json"
    kept = json.loads(pending.read_text())
    assert kept["n"] == 3 and [r["n"] for r in store.trials(plan.rating_id)] == [0, 1, 2]
    # the retried trial task (holding the slot, as rate_peak's tasks do: a store write is fenced by
    # the lease): the kept record is stored, the server is not asked again
    rec = steps.trial_step(leases.lease_slot(plan), store, 3, rig.make)
    assert rec == kept == store.trials(plan.rating_id)[3] and rig.calls[3] == 1
    assert not pending.exists()
    res = run_rating(plan, store, log=lambda s: None, make=rig.make, report=report_step)      # the rest of the rating
    records = store.trials(plan.rating_id)
    assert [r["n"] for r in records] == list(range(len(records))) and res["n_trials"] == len(records)
    assert dict(rig.calls) == {k: 1 for k in range(len(records))}
    base_records, base = _baseline(tmp_path)
    assert _server_view(records) == _server_view(base_records) and res["peak_rate"] == base["peak_rate"]


def test_a_stale_kept_record_is_not_stored(tmp_path, private_slots):
    """A kept record of another decision (another load) is dropped and the trial measured."""
    rig = SimRig()
    store = LocalStore(tmp_path / "store")
    plan = leases.lease_slot(_plan(tmp_path, "stale"))
    steps.provision(plan, store, rig.make)
    pending = plan.local_dir() / "pending" / "00000.json"
    pending.parent.mkdir(parents=True, exist_ok=True)
    pending.write_text(json.dumps({"n": 0, "load_ops_s": 12345.0, "runlength_s": 2.0, "mean_ms": 1.0}))
    rec = steps.trial_step(plan, store, 0, rig.make)
    assert rec["load_ops_s"] == 400.0 and rig.calls[0] == 1 and not pending.exists()


class RacingStore(LocalStore):
    """Another attempt of trial `k` stores its (different) record just before this one."""

    def __init__(self, root, k):
        super().__init__(root)
        self.k = k

    def put_trial(self, rating_id, n, record):
        if n == self.k and not self.exists(self.trial_key(rating_id, n)):
            super().put_trial(rating_id, n, {**record, "decision": "the other attempt", "mean_ms": 7.5})
        return super().put_trial(rating_id, n, record)


def test_a_different_stored_record_wins_over_the_new_one(tmp_path, private_slots, caplog):
    rig = SimRig()
    store = RacingStore(tmp_path / "store", k=1)
    plan = leases.lease_slot(_plan(tmp_path, "race"))
    steps.provision(plan, store, rig.make)
    steps.trial_step(plan, store, 0, rig.make)
    with caplog.at_level(logging.ERROR, logger="workbench.store"):
        rec = steps.trial_step(plan, store, 1, rig.make)
    assert rec["decision"] == "the other attempt" and rec["mean_ms"] == 7.5
    assert store.trials(plan.rating_id)[1] == rec
    assert not (plan.local_dir() / "pending" / "00001.json").exists()
    assert any("refused a second, different record" in r.getMessage() for r in caplog.records)
