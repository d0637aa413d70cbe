"""Slot leases: one rating at a time on a SUT slot, across DAG runs, workers and the CLI.

A lease is the JSON file ``<WORKDIR>/leases/<slot>``: the rating's id, a fencing token, the holder
(process, or Airflow run) and whether the slot is dirty. Every change to it happens under an
exclusive ``flock`` of ``<slot>.lock``, so of two ratings asking at once exactly one wins, and a
stale lease is taken over by exactly one rating.

* **Token.** Each grant gets the next number of the slot (``<slot>.seq``). The plan carries it; every
  step that touches the slot checks it first (`holding`), so a rating whose lease was taken over
  stops instead of measuring a server another rating now provisions.
* **Heartbeat.** While a step of the holder runs, a thread touches the lease every HEARTBEAT_S; its
  mtime is the heartbeat. A lease is stale only when the heartbeat stopped for LEASE_STALE_S *and*
  the holder is not known to be alive: its process (same host, same start time) is gone, or the
  `alive` callback (the DAGs: the holder's Airflow run is no longer queued or running) says so.
* **Dirty.** A failed teardown keeps the lease, marked dirty (the run turns red). A dirty lease whose
  holder has ended is taken over at once, and the new holder tears the slot down before provisioning
  (`steps.provision`); only a successful teardown clears the mark.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from workbench.config import paths, vocabulary
from workbench.measure.inventory import slot_load_hosts
from workbench.params.plan import RatingPlan

LEASE_STALE_S = float(os.environ.get("WB_LEASE_STALE_S", "300"))   # heartbeat silence before a takeover
HEARTBEAT_S = max(0.5, min(10.0, LEASE_STALE_S / 6))
LEASE_WAIT_S = float(os.environ.get("WB_LEASE_WAIT_S", "1800"))    # run_rating waits this long for a slot
WAIT_POLL_S = 5.0
LOCK_WAIT_S = 30.0             # a lease's lock is held for a read and a write
TEARDOWN_TURN_S = 900.0        # a teardown waits this long for the slot's other teardown

Alive = Callable[[dict[str, Any]], "bool | None"]   # holder → alive / dead / None (cannot tell)


class LeaseLost(RuntimeError):
    """The rating no longer holds its slot (taken over, released): it must not touch the slot."""


class SlotBusy(RuntimeError):
    """No slot could be leased (the message names each holder)."""


def lease_file(slot: str) -> Path:
    return paths.LEASES / slot


@contextlib.contextmanager
def _locked(slot: str, lock: str = "lock", wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """An exclusive flock of ``<slot>.<lock>`` for the block (a process's own opens exclude each other
    too), waited for at most `wait_s` (TimeoutError naming the file)."""
    paths.private_dir(paths.LEASES.parent)        # the state directory: ours alone, 0700
    paths.LEASES.mkdir(parents=True, exist_ok=True)
    f = paths.LEASES / f"{slot}.{lock}"
    deadline = time.monotonic() + wait_s
    with open(f, "a") as fh:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{f} still locked after {wait_s:g} s") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_lease(slot: str) -> dict[str, Any] | None:
    """The slot's lease (with `heartbeat_unix`, the file's mtime), or None when the slot is free."""
    f = lease_file(slot)
    try:
        text, mtime = f.read_text(), f.stat().st_mtime
    except FileNotFoundError:
        return None
    try:
        lease = json.loads(text)
    except ValueError:          # a lease of the old text format (rating id, workdir): treat as a holder
        lines = text.splitlines()
        lease = {"rating_id": lines[0].strip() if lines else "", "token": 0, "holder": {}}
    return {**lease, "heartbeat_unix": mtime}


def _write_lease(slot: str, lease: dict[str, Any]) -> None:
    tmp = lease_file(slot).with_name(f".{slot}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({k: v for k, v in lease.items() if k != "heartbeat_unix"}, indent=1))
    os.replace(tmp, lease_file(slot))


def _next_token(slot: str) -> int:
    seq = paths.LEASES / f"{slot}.seq"
    n = int(seq.read_text() or 0) + 1 if seq.exists() else 1
    seq.write_text(str(n))
    return n


def _proc_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def this_process(**more: Any) -> dict[str, Any]:
    """A holder record for this process (host, pid, its start time) plus e.g. an Airflow run."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "start": _proc_start(os.getpid()), **more}


TASK_RUNNER = "airflow.sdk.execution_time.task_runner"    # loaded in an Airflow task only


def current_holder() -> dict[str, Any]:
    """This process, and the Airflow run it works for when it is an Airflow task."""
    if TASK_RUNNER not in sys.modules:     # not a task: do not pay for importing Airflow
        return this_process()
    try:
        from airflow.sdk import get_current_context
        run = get_current_context()["dag_run"]
        return this_process(dag_id=run.dag_id, run_id=run.run_id)
    except Exception:            # not in a task (the CLI), or Airflow not installed
        return this_process()


def airflow_run_alive(holder: dict[str, Any]) -> bool | None:
    """Is the holder's Airflow run still queued or running? None when it cannot be told (no Airflow
    holder, or not asked from an Airflow task)."""
    if not holder.get("dag_id") or TASK_RUNNER not in sys.modules:
        return None
    try:
        from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance
        state = RuntimeTaskInstance.get_dagrun_state(holder["dag_id"], holder["run_id"])
    except Exception:
        return None
    return str(state).rsplit(".", 1)[-1].lower() in ("queued", "running")


def _process_alive(holder: dict[str, Any]) -> bool | None:
    if holder.get("host") != socket.gethostname() or not holder.get("pid"):
        return None
    return _proc_start(int(holder["pid"])) == holder.get("start")


def is_stale(lease: dict[str, Any], alive: Alive | None = None, now: float | None = None) -> bool:
    """True when the holder has ended: no heartbeat for LEASE_STALE_S and not known to be alive —
    or, for a dirty lease, as soon as the holder is known to have ended."""
    holder = lease.get("holder") or {}
    known = alive(holder) if alive is not None else None
    if known is None and not holder.get("dag_id"):     # an Airflow holder's process ends after each task
        known = _process_alive(holder)
    if known is not None and lease.get("dirty"):
        return not known
    silent = (now or time.time()) - float(lease["heartbeat_unix"]) > LEASE_STALE_S
    return silent and known is not True


def check_slot(plan: RatingPlan, slot: str) -> None:
    """The slot must be a slot of the plan's inventory with the load hosts the rating needs."""
    slot_load_hosts(Path(plan.inventory), slot, plan.load_hosts, server=not plan.external)


def try_lease(plan: RatingPlan, slot: str, holder: dict[str, Any], alive: Alive | None = None) -> RatingPlan | str:
    """The plan holding `slot` (token set), or the reason it is busy (one line)."""
    with _locked(slot):
        lease = read_lease(slot)
        if lease is not None and lease.get("rating_id") == plan.rating_id:   # a retried task or a resumed run
            lease.update(holder=holder)
            _write_lease(slot, lease)
            return _granted(plan, slot, lease)
        if lease is not None and not is_stale(lease, alive):
            age = time.time() - lease["heartbeat_unix"]
            return (f"{slot} is held by rating {lease.get('rating_id')} (token {lease.get('token')}, "
                    f"heartbeat {age:.0f} s ago{', dirty' if lease.get('dirty') else ''}; {lease_file(slot)})")
        dirty = lease is not None        # taken from a holder that ended without a clean teardown
        if lease is not None:
            print(f"taking over the {'dirty' if lease.get('dirty') else 'stale'} lease of {slot} from "
                  f"{lease.get('rating_id')} (token {lease.get('token')}): the slot is torn down first")
        new = {"slot": slot, "rating_id": plan.rating_id, "token": _next_token(slot), "holder": holder,
               "workdir": str(plan.local_dir()), "dirty": dirty, "taken_unix": time.time()}
        _write_lease(slot, new)
        return _granted(plan, slot, new)


def _granted(plan: RatingPlan, slot: str, lease: dict[str, Any]) -> RatingPlan:
    return plan.with_slot(slot).with_lease(int(lease["token"]))


def lease_slot(plan: RatingPlan, holder: dict[str, Any] | None = None, alive: Alive | None = None,
               wait_s: float = 0.0, log: Callable[[str], None] = print) -> RatingPlan:
    """Lease the plan's slot (or the first free one of SLOTS for "auto"); the plan with slot and token.
    Waits up to `wait_s` for a busy slot (progress every minute); SlotBusy naming each holder after."""
    candidates = vocabulary.SLOTS if plan.slot == "auto" else (plan.slot,)
    for slot in candidates:
        check_slot(plan, slot)
    holder = holder or current_holder()
    alive = alive or airflow_run_alive
    mine = [s for s in candidates if (read_lease(s) or {}).get("rating_id") == plan.rating_id]
    candidates = mine[:1] or candidates          # a retried task gets its own slot back, not another
    deadline, said = time.monotonic() + wait_s, time.monotonic()
    while True:
        busy = []
        for slot in candidates:
            got = try_lease(plan, slot, holder, alive)
            if isinstance(got, RatingPlan):
                return got
            busy.append(got)
        if time.monotonic() >= deadline:
            raise SlotBusy("no free slot: " + "; ".join(busy) + f"; a lease is taken over after "
                           f"{LEASE_STALE_S:g} s without a heartbeat from a holder that has ended")
        if time.monotonic() - said >= 60:
            log(f"waiting for a slot ({deadline - time.monotonic():.0f} s left): " + "; ".join(busy))
            said = time.monotonic()
        time.sleep(min(WAIT_POLL_S, max(0.0, deadline - time.monotonic())))


def holds(plan: RatingPlan) -> bool:
    """The plan's rating holds its slot with the plan's token (token 0: any token of this rating)."""
    lease = read_lease(plan.slot) if plan.slot != "auto" else None
    return (lease is not None and lease.get("rating_id") == plan.rating_id
            and (plan.lease_token == 0 or int(lease.get("token", 0)) == plan.lease_token))


def must_hold(plan: RatingPlan) -> dict[str, Any]:
    """The plan's lease; LeaseLost, naming the holder now, when the rating no longer holds it."""
    lease = read_lease(plan.slot) if plan.slot != "auto" else None
    if not holds(plan):
        now = "free" if lease is None else f"held by {lease.get('rating_id')} (token {lease.get('token')})"
        raise LeaseLost(f"rating {plan.rating_id} (token {plan.lease_token}) no longer holds {plan.slot}: "
                        f"the slot is {now}; not touching it")
    assert lease is not None
    return lease


def _check_kept(plan: RatingPlan, lost: bool) -> None:
    if lost or not holds(plan):
        raise LeaseLost(f"rating {plan.rating_id} lost its lease on {plan.slot} during the step")


_beating: set[tuple[str, str, int]] = set()     # leases whose heartbeat a block of this process keeps


@contextlib.contextmanager
def holding(plan: RatingPlan) -> Iterator[dict[str, Any]]:
    """Check the fencing token, then keep the lease's heartbeat while the block runs; LeaseLost at the
    end if the lease was lost meanwhile or is lost now (what the block measured must not be recorded).
    A block inside another of the same lease (a step of run_rating) checks the token but adds no thread."""
    lease = must_hold(plan)
    key = (plan.slot, plan.rating_id, plan.lease_token)
    if key in _beating:
        yield lease
        _check_kept(plan, lost=False)
        return
    stop, lost = threading.Event(), []

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            with _locked(plan.slot):
                if not holds(plan):
                    lost.append(True)
                    return
                os.utime(lease_file(plan.slot))
    os.utime(lease_file(plan.slot))
    t = threading.Thread(target=beat, name=f"lease-heartbeat-{plan.slot}", daemon=True)
    t.start()
    _beating.add(key)
    try:
        yield lease
    finally:
        _beating.discard(key)
        stop.set()
        t.join(timeout=HEARTBEAT_S + 5)
    _check_kept(plan, bool(lost))


def teardown_turn(slot: str) -> contextlib.AbstractContextManager[None]:
    """Teardowns of one slot take turns (a killed step's detached teardown and the DAG's teardown task)."""
    return _locked(slot, "teardown.lock", TEARDOWN_TURN_S)


def mark_dirty(plan: RatingPlan, dirty: bool) -> None:
    with _locked(plan.slot):
        lease = must_hold(plan)
        lease["dirty"] = dirty
        _write_lease(plan.slot, lease)


def release_slot(plan: RatingPlan) -> bool:
    """Remove the lease if this rating holds it (with its token); False otherwise."""
    if plan.slot == "auto":
        return False
    with _locked(plan.slot):
        if not holds(plan):
            return False
        lease_file(plan.slot).unlink()
        return True
