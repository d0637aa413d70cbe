"""Slot leases: one rating at a time on a SUT slot, across DAG runs, workers, hosts and the CLI.

A lease (in the store of lease.store: this host's files, or the deployment's Postgres) names the
rating, a fencing token, the holder (a process, or an Airflow run) and whether the slot is dirty.
Every change happens under the store's lock of the slot, so of two ratings asking at once exactly
one wins, and a stale lease is taken over by exactly one rating.

* **Holder.** A lease is held by a process (or by an Airflow run, whose tasks are processes in
  turn), not by a rating id: a second live holder of the same rating is refused; a rating whose
  holder has ended resumes with the next token, the slot torn down first.
* **Token.** Each grant gets the next number of the slot. The plan carries it; every step that
  touches the slot checks it first (`holding`), so a rating whose lease was taken over stops.
* **Heartbeat.** While a step runs, a thread beats every HEARTBEAT_S. A lease is stale only when the
  heartbeat stopped for LEASE_STALE_S *and* the holder is not known to be alive (its process on this
  host, or the `alive` callback: the holder's Airflow run is no longer queued or running). When the
  heartbeat finds the lease lost (or cannot beat for LEASE_STALE_S / 2) it stops the step at once.
* **Dirty.** A failed teardown keeps the lease, marked dirty. A dirty lease whose holder has ended
  is taken over at once, and the new holder tears the slot down before provisioning
  (`steps.provision`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from workbench.config import vocabulary
from workbench.lease.holders import (
    Alive,
    airflow_run_alive,
    current_holder,
    known_alive,  # noqa: F401
    same_holder,
    this_process,  # noqa: F401 (a lease's holder: asked about here too, by pipeline.slot)
    who,
)
from workbench.lease.store import LeaseConfigError, lease_store, store_spec
from workbench.measure.inventory import slot_load_hosts
from workbench.params.plan import RatingPlan


def env_seconds(name: str, default: float, lo: float, hi: float) -> float:
    """Seconds from the environment variable `name`, refused (LeaseConfigError naming it) outside
    lo..hi."""
    raw = os.environ.get(name, "").strip() or str(default)
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not lo <= value <= hi:  # NaN and ±inf fail too
        raise LeaseConfigError(
            f"{name}={raw[:40]!r}: must be a number of seconds from {lo:g} to {hi:g}"
        )
    return value


_REFUSED: list[str] = []  # settings refused on import (their defaults used until check_settings)


def _setting(name: str, default: float, lo: float, hi: float) -> float:
    try:
        return env_seconds(name, default, lo, hi)
    except (
        LeaseConfigError
    ) as e:  # not raised on import: `workbench --help` and the DAG files must load
        _REFUSED.append(str(e))
        return default


def check_settings() -> None:
    """LeaseConfigError naming each WB_LEASE_* setting refused: the bounds (read on import) and the
    store. Called by lease_slot, and by the CLI before anything else."""
    store_spec()
    if _REFUSED:
        raise LeaseConfigError("; ".join(_REFUSED))


# heartbeat silence before a takeover (tests: 5)
LEASE_STALE_S = _setting("WB_LEASE_STALE_S", 300, 2, 3600)
HEARTBEAT_S = max(0.5, min(5.0, LEASE_STALE_S / 6))
LEASE_WAIT_S = _setting("WB_LEASE_WAIT_S", 1800, 0, 86400)  # run_rating waits this long for a slot
WAIT_POLL_S = 5.0
TEARDOWN_TURN_S = 900.0  # a teardown waits this long for the slot's other teardown
STOP_GRACE_S = 2.0  # a fenced-off step stops its processes within its next beat and this
LOST_SIGNAL = signal.SIGUSR1  # the heartbeat thread's word to the step's (main) thread: lease lost


class LeaseLost(RuntimeError):
    """The rating no longer holds its slot (taken over, released): it must not touch the slot."""


class SlotBusy(RuntimeError):
    """No slot could be leased (the message names each holder)."""


def lease_file(slot: str) -> str:
    """Where the slot's lease is (for messages)."""
    return lease_store().where(slot)


def read_lease(slot: str) -> dict[str, Any] | None:
    """The slot's lease (with `heartbeat_unix`, on this host's clock), or None when the slot is
    free."""
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
    """The holder is known to have ended, or (unknowable) its heartbeat stopped LEASE_STALE_S
    ago."""
    known = known_alive(lease.get("holder") or {}, alive)
    if known is not None:
        return not known
    return time.time() - float(lease["heartbeat_unix"]) > LEASE_STALE_S


def check_slot(plan: RatingPlan, slot: str) -> None:
    """The slot must be a slot of the plan's inventory with the load hosts the rating needs."""
    slot_load_hosts(Path(plan.inventory), slot, plan.load_hosts, server=not plan.external)


def asked_first(alive: Alive | None, lease: dict[str, Any] | None) -> Alive | None:
    """`alive`, asked before the slot's lock about the holder the lease names now: asking may take
    seconds (an Airflow run's state from its database), which under the lock would starve the
    holder's heartbeat. Another holder found under the lock is asked then."""
    holder = (lease or {}).get("holder") or {}
    if alive is None or not holder.get("dag_id"):
        return alive
    known = alive(holder)
    return lambda h: known if h == holder else alive(h)


def try_lease(
    plan: RatingPlan, slot: str, holder: dict[str, Any], alive: Alive | None = None
) -> RatingPlan | str:
    """The plan holding `slot` (token set), or the reason it is busy (one line). A lease is held by
    a process (or an Airflow run): the same holder gets its lease back; a second live holder of the
    same rating is refused at once (SlotBusy: waiting cannot help it); a rating whose earlier holder
    has ended resumes with the next token, the slot torn down first (dirty)."""
    store = lease_store()
    alive = asked_first(alive, store.read(slot))
    with store.locked(slot):
        lease = store.read(slot)
        if lease is not None and lease.get("rating_id") == plan.rating_id:
            prev = lease.get("holder") or {}
            if same_holder(prev, holder):  # a retried task of the run, or this process again
                lease.update(holder=holder)
                store.write(slot, lease)
                return _granted(plan, slot, lease)
            if not holder_gone(lease, alive):
                raise SlotBusy(
                    f"{slot} is held by rating {plan.rating_id} itself, by a live holder "
                    f"({who(prev)}, heartbeat {time.time() - lease['heartbeat_unix']:.0f} s ago; "
                    f"{store.where(slot)}): a second holder of the same rating is refused"
                )
            print(
                f"resuming rating {plan.rating_id} on {slot}: its holder ({who(prev)}) has ended; "
                f"the slot is torn down first"
            )
        elif lease is not None and not is_stale(lease, alive):
            age = time.time() - lease["heartbeat_unix"]
            return (
                f"{slot} is held by rating {lease.get('rating_id')} (token {lease.get('token')}, "
                f"heartbeat {age:.0f} s ago{', dirty' if lease.get('dirty') else ''}; "
                f"{store.where(slot)})"
            )
        elif lease is not None:
            print(
                f"taking over the {'dirty' if lease.get('dirty') else 'stale'} lease of {slot} "
                f"from {lease.get('rating_id')} (token {lease.get('token')}): the slot is torn "
                "down first"
            )
        # what a reaper needs to tear the slot down
        new = {
            "slot": slot,
            "rating_id": plan.rating_id,
            "token": store.next_token(slot),
            "holder": holder,
            "workdir": str(plan.local_dir()),
            "dirty": lease is not None,
            "taken_unix": time.time(),
            "plan": plan.with_slot(slot).to_dict(),
        }
        store.write(slot, new)
        return _granted(plan, slot, new)


def _granted(plan: RatingPlan, slot: str, lease: dict[str, Any]) -> RatingPlan:
    return plan.with_slot(slot).with_lease(int(lease["token"]))


def lease_slot(
    plan: RatingPlan,
    holder: dict[str, Any] | None = None,
    alive: Alive | None = None,
    wait_s: float = 0.0,
    log: Callable[[str], object] = print,
) -> RatingPlan:
    """Lease the plan's slot (or the first free one of SLOTS for "auto"); the plan with slot and
    token. Waits up to `wait_s` for a busy slot (progress every minute); SlotBusy naming each holder
    after."""
    check_settings()
    candidates: Sequence[str] = vocabulary.SLOTS if plan.slot == "auto" else (plan.slot,)
    for slot in candidates:
        check_slot(plan, slot)
    holder = holder or current_holder()
    alive = alive or airflow_run_alive
    mine = [s for s in candidates if (read_lease(s) or {}).get("rating_id") == plan.rating_id]
    candidates = mine[:1] or candidates  # a retried task gets its own slot back, not another
    deadline, said = time.monotonic() + wait_s, time.monotonic()
    while True:
        busy = []
        for slot in candidates:
            got = try_lease(plan, slot, holder, alive)
            if isinstance(got, RatingPlan):
                return got
            busy.append(got)
        if time.monotonic() >= deadline:
            raise SlotBusy(
                "no free slot: " + "; ".join(busy) + f"; a lease is taken over after "
                f"{LEASE_STALE_S:g} s without a heartbeat from a holder that has ended"
            )
        if time.monotonic() - said >= 60:
            log(
                f"waiting for a slot ({deadline - time.monotonic():.0f} s left): " + "; ".join(busy)
            )
            said = time.monotonic()
        time.sleep(min(WAIT_POLL_S, max(0.0, deadline - time.monotonic())))


def holds(plan: RatingPlan) -> bool:
    """The plan's rating holds its slot with the plan's token (token 0: any token of this
    rating)."""
    return holds_lease(plan, read_lease(plan.slot) if plan.slot != "auto" else None)


def holds_lease(plan: RatingPlan, lease: dict[str, Any] | None) -> bool:
    """`lease` is the plan's rating's, with the plan's token (token 0: any token of the rating)."""
    return (
        lease is not None
        and lease.get("rating_id") == plan.rating_id
        and (plan.lease_token == 0 or int(lease.get("token", 0)) == plan.lease_token)
    )


def must_hold(plan: RatingPlan) -> dict[str, Any]:
    """The plan's lease; LeaseLost, naming the holder now, when the rating no longer holds it."""
    lease = read_lease(plan.slot) if plan.slot != "auto" else None
    if not holds_lease(plan, lease):
        now = (
            "free"
            if lease is None
            else f"held by {lease.get('rating_id')} (token {lease.get('token')})"
        )
        raise LeaseLost(
            f"rating {plan.rating_id} (token {plan.lease_token}) no longer holds {plan.slot}: "
            f"the slot is {now}; not touching it"
        )
    assert lease is not None
    return lease


def teardown_turn(slot: str) -> contextlib.AbstractContextManager[None]:
    """Teardowns of one slot take turns (a killed step's detached teardown and the DAG's teardown
    task)."""
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
