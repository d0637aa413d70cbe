"""Slot leases: one rating at a time on a SUT slot, across DAG runs, workers, hosts and the CLI.

A lease (in the store of lease.store: this host's files, or the deployment's Postgres) names the
rating, a fencing token, the holder (a process, or an Airflow run) and whether the slot is dirty.
Every change happens under the store's lock of the slot, so of two ratings asking at once exactly one
wins, and a stale lease is taken over by exactly one rating.

* **Holder.** A lease is held by a process (or by an Airflow run, whose tasks are processes in turn),
  not by a rating id: a second live holder of the same rating is refused; a rating whose holder has
  ended resumes with the next token, the slot torn down first.
* **Token.** Each grant gets the next number of the slot. The plan carries it; every step that touches
  the slot checks it first (`holding`), so a rating whose lease was taken over stops.
* **Heartbeat.** While a step runs, a thread beats every HEARTBEAT_S. A lease is stale only when the
  heartbeat stopped for LEASE_STALE_S *and* the holder is not known to be alive (its process on this
  host, or the `alive` callback: the holder's Airflow run is no longer queued or running). When the
  heartbeat finds the lease lost (or cannot beat for LEASE_STALE_S / 2) it stops the step at once.
* **Dirty.** A failed teardown keeps the lease, marked dirty. A dirty lease whose holder has ended is
  taken over at once, and the new holder tears the slot down before provisioning (`steps.provision`).
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

from workbench.config import vocabulary
from workbench.lease.holders import (TASK_RUNNER, Alive, airflow_run_alive, current_holder, known_alive,  # noqa: F401
                                     same_holder, this_process, who)
from workbench.lease.store import LOCK_WAIT_S, LeaseConfigError, lease_store, store_spec
from workbench.measure.inventory import slot_load_hosts
from workbench.params.plan import RatingPlan


def env_seconds(name: str, default: float, lo: float, hi: float) -> float:
    """Seconds from the environment variable `name`, refused (LeaseConfigError naming it) outside lo..hi."""
    raw = os.environ.get(name, "").strip() or str(default)
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not lo <= value <= hi:           # NaN and ±inf fail too
        raise LeaseConfigError(f"{name}={raw[:40]!r}: must be a number of seconds from {lo:g} to {hi:g}")
    return value


_REFUSED: list[str] = []             # settings refused on import (their defaults used until check_settings)


def _setting(name: str, default: float, lo: float, hi: float) -> float:
    try:
        return env_seconds(name, default, lo, hi)
    except LeaseConfigError as e:     # not raised on import: `workbench --help` and the DAG files must load
        _REFUSED.append(str(e))
        return default


def check_settings() -> None:
    """LeaseConfigError naming each WB_LEASE_* setting refused: the bounds (read on import) and the store.
    Called by lease_slot, and by the CLI before anything else."""
    store_spec()
    if _REFUSED:
        raise LeaseConfigError("; ".join(_REFUSED))


LEASE_STALE_S = _setting("WB_LEASE_STALE_S", 300, 2, 3600)     # heartbeat silence before a takeover (tests: 5)
HEARTBEAT_S = max(0.5, min(5.0, LEASE_STALE_S / 6))
LEASE_WAIT_S = _setting("WB_LEASE_WAIT_S", 1800, 0, 86400)   # run_rating waits this long for a slot
WAIT_POLL_S = 5.0
TEARDOWN_TURN_S = 900.0        # a teardown waits this long for the slot's other teardown
STOP_GRACE_S = 2.0            # a fenced-off step stops its processes within its next beat and this
LOST_SIGNAL = signal.SIGUSR1   # the heartbeat thread's word to the step's (main) thread: lease lost

class LeaseLost(RuntimeError):
    """The rating no longer holds its slot (taken over, released): it must not touch the slot."""


class SlotBusy(RuntimeError):
    """No slot could be leased (the message names each holder)."""


class _Lost(BaseException):
    """Raised in the step's thread by LOST_SIGNAL (a BaseException: no `except Exception` swallows it);
    `holding` turns it into LeaseLost."""


def lease_file(slot: str) -> str:
    """Where the slot's lease is (for messages)."""
    return lease_store().where(slot)


def read_lease(slot: str) -> dict[str, Any] | None:
    """The slot's lease (with `heartbeat_unix`, on this host's clock), or None when the slot is free."""
    return lease_store().read(slot)


def is_stale(lease: dict[str, Any], alive: Alive | None = None, now: float | None = None) -> bool:
    """True when the holder has ended: no heartbeat for LEASE_STALE_S and not known to be alive —
    or, for a dirty lease, as soon as the holder is known to have ended."""
    known = known_alive(lease.get("holder") or {}, alive)
    if known is not None and lease.get("dirty"):
        return not known
    silent = (now or time.time()) - float(lease["heartbeat_unix"]) > LEASE_STALE_S
    return silent and known is not True


def holder_gone(lease: dict[str, Any], alive: Alive | None = None) -> bool:
    """The holder is known to have ended, or (unknowable) its heartbeat stopped LEASE_STALE_S ago."""
    known = known_alive(lease.get("holder") or {}, alive)
    if known is not None:
        return not known
    return time.time() - float(lease["heartbeat_unix"]) > LEASE_STALE_S


def check_slot(plan: RatingPlan, slot: str) -> None:
    """The slot must be a slot of the plan's inventory with the load hosts the rating needs."""
    slot_load_hosts(Path(plan.inventory), slot, plan.load_hosts, server=not plan.external)


def try_lease(plan: RatingPlan, slot: str, holder: dict[str, Any], alive: Alive | None = None) -> RatingPlan | str:
    """The plan holding `slot` (token set), or the reason it is busy (one line). A lease is held by a
    process (or an Airflow run): the same holder gets its lease back; a second live holder of the same
    rating is refused at once (SlotBusy: waiting cannot help it); a rating whose earlier holder has
    ended resumes with the next token, the slot torn down first (dirty)."""
    store = lease_store()
    with store.locked(slot):
        lease = store.read(slot)
        if lease is not None and lease.get("rating_id") == plan.rating_id:
            prev = lease.get("holder") or {}
            if same_holder(prev, holder):               # a retried task of the run, or this process again
                lease.update(holder=holder)
                store.write(slot, lease)
                return _granted(plan, slot, lease)
            if not holder_gone(lease, alive):
                raise SlotBusy(f"{slot} is held by rating {plan.rating_id} itself, by a live holder ({who(prev)}, "
                               f"heartbeat {time.time() - lease['heartbeat_unix']:.0f} s ago; {store.where(slot)}): "
                               f"a second holder of the same rating is refused")
            print(f"resuming rating {plan.rating_id} on {slot}: its holder ({who(prev)}) has ended; "
                  f"the slot is torn down first")
        elif lease is not None and not is_stale(lease, alive):
            age = time.time() - lease["heartbeat_unix"]
            return (f"{slot} is held by rating {lease.get('rating_id')} (token {lease.get('token')}, "
                    f"heartbeat {age:.0f} s ago{', dirty' if lease.get('dirty') else ''}; {store.where(slot)})")
        elif lease is not None:
            print(f"taking over the {'dirty' if lease.get('dirty') else 'stale'} lease of {slot} from "
                  f"{lease.get('rating_id')} (token {lease.get('token')}): the slot is torn down first")
        new = {"slot": slot, "rating_id": plan.rating_id, "token": store.next_token(slot), "holder": holder,
               "workdir": str(plan.local_dir()), "dirty": lease is not None, "taken_unix": time.time(),
               "plan": plan.with_slot(slot).to_dict()}       # what a reaper needs to tear the slot down
        store.write(slot, new)
        return _granted(plan, slot, new)


def _granted(plan: RatingPlan, slot: str, lease: dict[str, Any]) -> RatingPlan:
    return plan.with_slot(slot).with_lease(int(lease["token"]))


def lease_slot(plan: RatingPlan, holder: dict[str, Any] | None = None, alive: Alive | None = None,
               wait_s: float = 0.0, log: Callable[[str], None] = print) -> RatingPlan:
    """Lease the plan's slot (or the first free one of SLOTS for "auto"); the plan with slot and token.
    Waits up to `wait_s` for a busy slot (progress every minute); SlotBusy naming each holder after."""
    check_settings()
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
    return _holds(plan, read_lease(plan.slot) if plan.slot != "auto" else None)


def _holds(plan: RatingPlan, lease: dict[str, Any] | None) -> bool:
    return (lease is not None and lease.get("rating_id") == plan.rating_id
            and (plan.lease_token == 0 or int(lease.get("token", 0)) == plan.lease_token))


def must_hold(plan: RatingPlan) -> dict[str, Any]:
    """The plan's lease; LeaseLost, naming the holder now, when the rating no longer holds it."""
    lease = read_lease(plan.slot) if plan.slot != "auto" else None
    if not _holds(plan, lease):
        now = "free" if lease is None else f"held by {lease.get('rating_id')} (token {lease.get('token')})"
        raise LeaseLost(f"rating {plan.rating_id} (token {plan.lease_token}) no longer holds {plan.slot}: "
                        f"the slot is {now}; not touching it")
    assert lease is not None
    return lease


def _check_kept(plan: RatingPlan, lost: bool) -> None:
    if lost or not holds(plan):
        raise LeaseLost(f"rating {plan.rating_id} lost its lease on {plan.slot} during the step")


_beating: set[tuple[str, str, int]] = set()     # leases whose heartbeat a block of this process keeps


def _enter_step(plan: RatingPlan) -> tuple[dict[str, Any], str]:
    """Fence the slot to this step: the lease records it as the step that now runs (a new id). An
    earlier attempt of a step of the same lease that may still run (an Airflow zombie beside its retry:
    its process here alive, or elsewhere its heartbeat under 3 beats old) is fenced off — its next
    heartbeat stops it — and waited for that long."""
    store = lease_store()
    with store.locked(plan.slot):
        lease = must_hold(plan)
        prev, step = lease.get("step") or {}, {"id": uuid.uuid4().hex, **this_process()}
        store.write(plan.slot, {**lease, "step": step})
    running = known_alive(prev, None) if prev and not same_holder(prev, step) else False
    if running or (running is None and time.time() - float(lease["heartbeat_unix"]) < 3 * HEARTBEAT_S):
        print(f"{plan.slot}: an earlier attempt of this step ({who(prev)}) may still run; fenced off, waiting "
              f"{HEARTBEAT_S + STOP_GRACE_S:g} s for it to stop", file=sys.stderr, flush=True)
        time.sleep(HEARTBEAT_S + STOP_GRACE_S)
    return lease, step["id"]


def _leave_step(plan: RatingPlan, step_id: str) -> None:
    """The step is over: the lease no longer names it (if it still does; a lock not had soon leaves it
    named: the next step then finds its process ended, or waits once for it)."""
    store = lease_store()
    with contextlib.suppress(Exception), store.locked(plan.slot, wait_s=min(LOCK_WAIT_S, 2 * HEARTBEAT_S)):
        lease = store.read(plan.slot)
        if lease is not None and (lease.get("step") or {}).get("id") == step_id:
            store.write(plan.slot, {k: v for k, v in lease.items() if k != "step"})


def _beat_once(plan: RatingPlan, step_id: str) -> str | None:
    """One heartbeat; why the lease is no longer this step's, or None."""
    store = lease_store()
    with store.locked(plan.slot, wait_s=min(LOCK_WAIT_S, LEASE_STALE_S / 4)):
        lease = store.read(plan.slot)
        if not _holds(plan, lease):
            return f"the lease of {plan.slot} is no longer rating {plan.rating_id}'s (token {plan.lease_token})"
        step = (lease or {}).get("step") or {}
        if step.get("id") != step_id:
            return f"another attempt of the step ({who(step)}) took {plan.slot} over"
        store.touch(plan.slot)
        return None


def _heartbeat(plan: RatingPlan, step_id: str, stop: threading.Event, lost: list[str]) -> None:
    """Beat every HEARTBEAT_S until `stop`; on finding the lease lost, or on heartbeats failing for
    LEASE_STALE_S / 2 (another holder may take the lease over soon), note why in `lost` and return."""
    last_ok = time.monotonic()
    while not stop.wait(HEARTBEAT_S):
        try:
            why = _beat_once(plan, step_id)
            if why:
                lost.append(why)
                return
            last_ok = time.monotonic()
        except Exception as e:        # the lock not had in time, the store unreachable
            if time.monotonic() - last_ok > LEASE_STALE_S / 2:
                lost.append(f"no heartbeat of {plan.slot} for {time.monotonic() - last_ok:.0f} s ({e})")
                return


@contextlib.contextmanager
def holding(plan: RatingPlan, on_lost: Callable[[], object] | None = None) -> Iterator[dict[str, Any]]:
    """Check the fencing token, fence the slot to this step (`_enter_step`), then keep the lease's
    heartbeat while the block runs. When the heartbeat finds the lease lost (or the step fenced off by a
    later attempt) it calls `on_lost` (the pipeline: stop the step's child processes) and, if the block
    runs in the main thread, interrupts it at once (LOST_SIGNAL); the block ends with LeaseLost (what it
    measured must not be recorded), as it does if the lease is lost at its end.
    A block inside another of the same lease (a step of run_rating) checks the token but adds no thread."""
    key = (plan.slot, plan.rating_id, plan.lease_token)
    if key in _beating:
        yield must_hold(plan)
        _check_kept(plan, lost=False)
        return
    lease, step_id = _enter_step(plan)
    stop, lost, watch = threading.Event(), [], _Watch()
    t = threading.Thread(target=_watched_heartbeat, args=(plan, step_id, stop, lost, watch, on_lost),
                         name=f"lease-heartbeat-{plan.slot}", daemon=True)
    _beating.add(key)
    try:
        with watch:
            t.start()
            yield lease
    except _Lost:
        pass
    finally:
        _beating.discard(key)
        stop.set()
        t.join(timeout=HEARTBEAT_S + LOCK_WAIT_S + 5)
        _leave_step(plan, step_id)
    if lost:
        raise LeaseLost(f"rating {plan.rating_id} lost its lease on {plan.slot} during the step: {lost[0]}; "
                        f"the step was stopped")
    _check_kept(plan, lost=False)


class _Watch:
    """While entered in the main thread: LOST_SIGNAL raises _Lost there (if `armed`)."""

    def __init__(self) -> None:
        self.main = threading.current_thread() is threading.main_thread()
        self.armed = False
        self.previous: Any = None

    def __enter__(self) -> "_Watch":
        if self.main:
            self.previous = signal.signal(LOST_SIGNAL, self._raise)
            self.armed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.main:
            self.armed = False
            signal.signal(LOST_SIGNAL, signal.SIG_DFL if self.previous is None else self.previous)

    def _raise(self, signum: int, frame: object) -> None:
        if self.armed:
            self.armed = False
            raise _Lost()

    def interrupt(self) -> None:
        if self.armed:
            signal.pthread_kill(threading.main_thread().ident, LOST_SIGNAL)


def _watched_heartbeat(plan: RatingPlan, step_id: str, stop: threading.Event, lost: list[str], watch: _Watch,
                       on_lost: Callable[[], object] | None) -> None:
    _heartbeat(plan, step_id, stop, lost)
    if not lost or stop.is_set():
        return
    print(f"lease lost: {lost[0]}; stopping the step", file=sys.stderr, flush=True)
    if on_lost is not None:
        try:
            on_lost()
        except Exception as e:
            print(f"stopping the step's processes failed: {e}", file=sys.stderr, flush=True)
    watch.interrupt()


def teardown_turn(slot: str) -> contextlib.AbstractContextManager[None]:
    """Teardowns of one slot take turns (a killed step's detached teardown and the DAG's teardown task)."""
    return lease_store().locked(slot, "teardown.lock", TEARDOWN_TURN_S)


def mark_dirty(plan: RatingPlan, dirty: bool) -> None:
    store = lease_store()
    with store.locked(plan.slot):
        lease = must_hold(plan)
        lease["dirty"] = dirty
        store.write(plan.slot, lease)


def release_slot(plan: RatingPlan) -> bool:
    """Remove the lease if this rating holds it (with its token); False otherwise."""
    if plan.slot == "auto":
        return False
    store = lease_store()
    with store.locked(plan.slot):
        if not holds(plan):
            return False
        store.delete(plan.slot)
        return True
