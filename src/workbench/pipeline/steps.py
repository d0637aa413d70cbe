"""One rating as resumable steps over the results store — what the DAG tasks and `workbench rate`
call.

Every step re-reads what it needs from the store (the trial log is ``ratings/<rating_id>/trials/
<n>.json``), so a task retried after a crash, a restarted scheduler or a re-run command neither
loses nor repeats a trial:

    plan_from_params → lease_slot → provision → deploy → (decide_step k → trial_step k)* →
    validate_step → summarise_step → report_step → publish_step → teardown

(the steps after the last trial: pipeline.finish).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from workbench.config.paths import FSTRESS
from workbench.controller.decide import Done, NextTrial, decide
from workbench.controller.state import load_key
from workbench.controller.trial import TrialResult
from workbench.findings.validate import validate_trials
from workbench.lease.heartbeat import holding
from workbench.lease.leases import mark_dirty, must_hold
from workbench.measure import live
from workbench.measure.ansible import AnsibleHarness
from workbench.measure.protocol import HarnessFactory
from workbench.output.console import short
from workbench.params.plan import RatingPlan
from workbench.pipeline.slot import harness_for, teardown_or_raise
from workbench.pipeline.stop import killable, stop_children
from workbench.store.base import Store, TrialConflict, encode_json


def provision(
    plan: RatingPlan, store: Store, make: HarnessFactory = AnsibleHarness
) -> dict[str, Any]:
    """Provision the slot's SUT with the plan's factors; sysinfo.json and spec.json to the store."""
    if not FSTRESS.is_file():
        raise RuntimeError(f"fstress binary {FSTRESS} is missing: run `make fstress`")
    t0 = time.time()
    with holding(plan, on_lost=stop_children) as lease, killable(plan):
        h = harness_for(plan, make)
        if lease.get("dirty"):  # taken over from a rating that ended without a clean teardown
            teardown_or_raise(plan, make)
            mark_dirty(plan, False)
        store.put_json(store.spec_key(plan.rating_id), plan.to_dict())
        store.put_bytes(
            store.workload_key(plan.rating_id),
            plan.workload_source().encode(),
            "text/plain; charset=utf-8",
        )
        h.provision()
    info = json.loads((h.results_dir / "sysinfo.json").read_text())
    store.put_json(store.sysinfo_key(plan.rating_id), info)
    _record_time(plan, store, "provision", t0)
    return info


def _record_time(plan: RatingPlan, store: Store, step: str, t0: float, **more: Any) -> None:
    """timings/<step>.json: when the step started and how long it took (the measured cost), and
    `more`."""
    store.put_json(
        store.timing_key(plan.rating_id, step),
        {"start_unix": t0, "wall_s": time.time() - t0, **more},
    )


def deploy(
    plan: RatingPlan, store: Store, make: HarnessFactory = AnsibleHarness, width: int | None = None
) -> str:
    """fstress and the file set on the load hosts, then the discarded warm-up trial; its line, an
    invalid warm-up's reason cut to fit `width` columns (None: whole, as in a task's log)."""
    t0 = time.time()
    with holding(plan, on_lost=stop_children), killable(plan):
        h = harness_for(plan, make)
        h.deploy()
        if plan.warmup_trial_s <= 0:
            _record_time(plan, store, "deploy", t0)
            return "no warm-up trial"
        spec = plan.rating_spec()
        load = spec.seed_load or spec.first_load
        with live.trial(plan.slot, plan.rating_id, -1, load) as view:  # trial -1 in the live view
            w = h.warm_up(load, plan.warmup_trial_s)
            view.done(w.achieved_rate, w.mean_ms, w.valid)
    _record_time(plan, store, "deploy", t0, warmup_valid=w.valid)
    head = (
        f"warm-up trial (discarded): {w.load_ops_s:g} ops/s × {w.runlength_s:g} s → mean "
        f"{w.mean_ms:.2f} ms"
    )
    reason = w.reason or "invalid"
    return (
        head
        if w.valid
        else f"{head} "
        f"({reason if width is None else short(reason, max(20, width - 3 - len(head)))})"
    )


def trial_records(store: Store, rating_id: str) -> list[dict[str, Any]]:
    """The rating's trial records 0..n−1 from the store; a gap is an error (never silently
    skipped)."""
    records = store.trials(rating_id)
    for i, r in enumerate(records):
        if int(r["n"]) != i:
            raise RuntimeError(
                f"trial log of {rating_id} has a gap: expected trial {i}, found {r['n']}"
            )
    return records


def trial_log(store: Store, rating_id: str) -> list[TrialResult]:
    """The rating's trials 0..n−1 as the controller sees them."""
    return [TrialResult.from_dict(r) for r in trial_records(store, rating_id)]


def decide_step(plan: RatingPlan, store: Store, k: int) -> NextTrial | Done:
    """The controller's decision before trial k, from trials 0..k−1 of the store's log."""
    log = trial_log(store, plan.rating_id)
    if len(log) < k:
        raise RuntimeError(f"decide_{k}: the log has only {len(log)} trials")
    return decide(plan.rating_spec(), log[:k])


def _pending_path(plan: RatingPlan, k: int) -> Path:
    """Where trial k's record waits on this worker until the store has it."""
    return plan.local_dir() / "pending" / f"{k:05d}.json"


def _pending_record(plan: RatingPlan, k: int, d: NextTrial) -> dict[str, Any] | None:
    """The pending record of trial k if one was measured for this decision (same load and
    runlength); a stale or unreadable one is removed."""
    path = _pending_path(plan, k)
    try:
        rec = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        rec = None
    if (
        isinstance(rec, dict)
        and rec.get("n") == k
        and rec.get("load_ops_s") is not None
        and load_key(rec["load_ops_s"]) == load_key(d.load_ops_s)
        and rec.get("runlength_s") == float(d.runlength_s)
    ):
        return rec
    path.unlink(missing_ok=True)
    return None


def _warm(plan: RatingPlan, store: Store) -> bool:
    """Whether deploy's warm-up trial was valid: the server answered a moment ago, so trial 0 need
    not check it first (through the agents, no playbook run)."""
    return bool(store.get_json(store.timing_key(plan.rating_id, "deploy"), {}).get("warmup_valid"))


def trial_step(
    plan: RatingPlan, store: Store, k: int, make: HarnessFactory = AnsibleHarness
) -> dict[str, Any]:
    """Run trial k (or return it if an earlier attempt already recorded it) and record it.

    The measured record is kept on this worker (<local_dir>/pending/<k>.json, written atomically)
    until the store has it: a retry of the step after a failed store write (the store's own retries
    exhausted, the task killed) stores that record instead of measuring again. The store writes a
    trial once; if it already holds a different record for k (another attempt got there first,
    and the controller may have read it), the stored one is returned, never the new one."""
    existing = [r for r in store.trials(plan.rating_id) if int(r["n"]) == k]
    if existing:
        _pending_path(plan, k).unlink(missing_ok=True)
        return existing[0]
    d = decide_step(plan, store, k)
    if not isinstance(d, NextTrial):
        raise RuntimeError(f"trial_{k}: the controller has stopped ({d.result.reason})")
    record = _pending_record(plan, k, d)
    if record is None:
        prev = trial_log(store, plan.rating_id)[:k]
        t0 = time.time()
        # LeaseLost (the lease lost: the trial stopped at once) / RatingKilled: the trial is not
        # recorded
        with (
            holding(plan, on_lost=stop_children),
            killable(plan),
            live.trial(plan.slot, plan.rating_id, k, d.load_ops_s) as view,  # the live view
        ):
            t = harness_for(plan, make).measure(
                d.load_ops_s,
                d.runlength_s,
                trial_id=k,
                check_server=not prev[-1].valid if prev else not _warm(plan, store),
            )
            view.done(t.achieved_rate, t.mean_ms, t.valid)
        record = checked_record(
            {
                "n": k,
                "decision": d.reason,
                **t.at(d.load_ops_s, d.runlength_s).to_dict(),
                "started_unix": t0,
                "wall_s": time.time() - t0,
            }
        )
        path = _pending_path(plan, k)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(encode_json(record))
        os.replace(tmp, path)
    must_hold(plan)  # fenced: a step whose lease was taken over records nothing, pending or new
    try:
        store.put_trial(plan.rating_id, k, record)
    except TrialConflict as e:
        record = e.stored
    _pending_path(plan, k).unlink(missing_ok=True)
    return record


def checked_record(record: dict[str, Any]) -> dict[str, Any]:
    """great_expectations on one trial as it is recorded, before decide may read it: a trial the
    harness accepted that fails the suite is recorded invalid with the failed expectations as its
    reason, so the controller re-runs it (the invalid-trial path) and the report shows why; `gx`
    keeps the verdict ("passed"/"failed"; absent on trials the suite does not judge). Fewer
    operations completed than offered is not a broken trial here but the controller's evidence of
    saturation (its throughput rule): that expectation is the batch's (validate_step), on the
    points a rating reports."""
    if not record.get("valid") or record.get("harness_failure"):
        return record
    why = validate_trials([record], min_achieved_fraction=0.0).excluded.get(int(record["n"]))
    if why is None:
        return {**record, "gx": "passed"}
    return {**record, "valid": False, "reason": f"great_expectations: {why}", "gx": "failed"}
