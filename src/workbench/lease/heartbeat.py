"""A step's hold on its slot's lease (`holding`): the fencing token checked, the slot fenced to the
step, a heartbeat thread while the step runs, and the step stopped at once when the lease is lost
(leases.py: the leases themselves, and the timings, which WB_LEASE_* and the tests set there)."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

# the timings are read from leases at each use: WB_LEASE_* set them there, and so do the tests
from workbench.lease import leases
from workbench.lease.holders import known_alive, same_holder, this_process, who
from workbench.lease.leases import holds_lease
from workbench.lease.store import LOCK_WAIT_S, lease_store
from workbench.params.plan import RatingPlan


class _Lost(BaseException):
    """Raised in the step's thread by LOST_SIGNAL (a BaseException: no `except Exception` swallows
    it); `holding` turns it into LeaseLost."""


def _check_kept(plan: RatingPlan, lost: bool) -> None:
    if lost or not leases.holds(plan):
        raise leases.LeaseLost(
            f"rating {plan.rating_id} lost its lease on {plan.slot} during the step"
        )


_beating: set[tuple[str, str, int]] = set()  # leases whose heartbeat a block of this process keeps


def _enter_step(plan: RatingPlan) -> tuple[dict[str, Any], str]:
    """Fence the slot to this step: the lease records it as the step that now runs (a new id). An
    earlier attempt of a step of the same lease that may still run (an Airflow zombie beside its
    retry: its process here alive, or elsewhere its heartbeat under 3 beats old) is fenced off — its
    next heartbeat stops it — and waited for that long."""
    store = lease_store()
    with store.locked(plan.slot):
        lease = leases.must_hold(plan)
        prev, step = lease.get("step") or {}, {"id": uuid.uuid4().hex, **this_process()}
        store.write(plan.slot, {**lease, "step": step})
    running = known_alive(prev, None) if prev and not same_holder(prev, step) else False
    if running or (
        running is None and time.time() - float(lease["heartbeat_unix"]) < 3 * leases.HEARTBEAT_S
    ):
        print(
            f"{plan.slot}: an earlier attempt of this step ({who(prev)}) may still run; fenced "
            f"off, waiting {leases.HEARTBEAT_S + leases.STOP_GRACE_S:g} s for it to stop",
            file=sys.stderr,
            flush=True,
        )
        time.sleep(leases.HEARTBEAT_S + leases.STOP_GRACE_S)
    return lease, step["id"]


def _leave_step(plan: RatingPlan, step_id: str) -> None:
    """The step is over: the lease no longer names it (if it still does; a lock not had soon leaves
    it named: the next step then finds its process ended, or waits once for it)."""
    store = lease_store()
    with (
        contextlib.suppress(Exception),
        store.locked(plan.slot, wait_s=min(LOCK_WAIT_S, 2 * leases.HEARTBEAT_S)),
    ):
        lease = store.read(plan.slot)
        if lease is not None and (lease.get("step") or {}).get("id") == step_id:
            store.write(plan.slot, {k: v for k, v in lease.items() if k != "step"})


def _beat_once(plan: RatingPlan, step_id: str) -> str | None:
    """One heartbeat; why the lease is no longer this step's, or None."""
    store = lease_store()
    with store.locked(plan.slot, wait_s=min(LOCK_WAIT_S, leases.LEASE_STALE_S / 4)):
        lease = store.read(plan.slot)
        if not holds_lease(plan, lease):
            return (
                f"the lease of {plan.slot} is no longer rating {plan.rating_id}'s (token "
                f"{plan.lease_token})"
            )
        step = (lease or {}).get("step") or {}
        if step.get("id") != step_id:
            return f"another attempt of the step ({who(step)}) took {plan.slot} over"
        store.touch(plan.slot)
        return None


def _beat_within(
    plan: RatingPlan, step_id: str, timeout_s: float
) -> tuple[bool, str | None, Exception | None]:
    """_beat_once on a thread of its own, waited for at most timeout_s: (returned, why the lease is
    lost or None, the error it raised). A store call that blocks (a lost route to Postgres) is left
    on its daemon thread, so the safety rule of `_heartbeat` still runs on the wall clock."""
    box: dict[str, Any] = {}

    def beat() -> None:
        try:
            box["why"] = _beat_once(plan, step_id)
        except Exception as e:  # the lock not had in time, the store unreachable
            box["error"] = e

    t = threading.Thread(target=beat, name=f"lease-beat-{plan.slot}", daemon=True)
    t.start()
    t.join(max(timeout_s, 0.0))
    return not t.is_alive(), box.get("why"), box.get("error")


def _heartbeat(plan: RatingPlan, step_id: str, stop: threading.Event, lost: list[str]) -> None:
    """Beat every HEARTBEAT_S until `stop`; on finding the lease lost, or on no heartbeat landing
    for LEASE_STALE_S / 2 (another holder may take the lease over soon) — the store failing, or a
    call to it not returning (each wait is bounded: _beat_within) — note why in `lost` and
    return."""
    last_ok = time.monotonic()
    while not stop.wait(leases.HEARTBEAT_S):
        # a beat is waited for until LEASE_STALE_S / 2 after the last that landed, and at least a
        # beat's interval (so a failed beat's pause leaves the next one its chance): the step stops
        # by LEASE_STALE_S / 2 + HEARTBEAT_S, well before another holder may take the lease over
        wait_s = max(leases.LEASE_STALE_S / 2 - (time.monotonic() - last_ok), leases.HEARTBEAT_S)
        returned, why, error = _beat_within(plan, step_id, wait_s)
        if returned and error is None:
            if why:
                lost.append(why)
                return
            last_ok = time.monotonic()
        elif time.monotonic() - last_ok >= leases.LEASE_STALE_S / 2:
            cause = error or "a call to the lease store did not return"
            lost.append(
                f"no heartbeat of {plan.slot} for {time.monotonic() - last_ok:.0f} s ({cause})"
            )
            return


@contextlib.contextmanager
def holding(
    plan: RatingPlan, on_lost: Callable[[], object] | None = None
) -> Iterator[dict[str, Any]]:
    """Check the fencing token, fence the slot to this step (`_enter_step`), then keep the lease's
    heartbeat while the block runs. When the heartbeat finds the lease lost (or the step fenced off
    by a later attempt) it calls `on_lost` (the pipeline: stop the step's child processes) and, if
    the block runs in the main thread, interrupts it at once (LOST_SIGNAL); the block ends with
    LeaseLost (what it measured must not be recorded), as it does if the lease is lost at its end.
    A block inside another of the same lease (a step of run_rating) checks the token but adds no
    thread."""
    key = (plan.slot, plan.rating_id, plan.lease_token)
    if key in _beating:
        yield leases.must_hold(plan)
        _check_kept(plan, lost=False)
        return
    lease, step_id = _enter_step(plan)
    stop, watch = threading.Event(), _Watch()
    lost: list[str] = []
    t = threading.Thread(
        target=_watched_heartbeat,
        args=(plan, step_id, stop, lost, watch, on_lost),
        name=f"lease-heartbeat-{plan.slot}",
        daemon=True,
    )
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
        t.join(timeout=leases.HEARTBEAT_S + LOCK_WAIT_S + 5)
        _leave_step(plan, step_id)
    if lost:
        raise leases.LeaseLost(
            f"rating {plan.rating_id} lost its lease on {plan.slot} during the step: {lost[0]}; "
            f"the step was stopped"
        )
    _check_kept(plan, lost=False)


class _Watch:
    """While entered in the main thread: LOST_SIGNAL raises _Lost there (if `armed`)."""

    def __init__(self) -> None:
        self.main = threading.current_thread() is threading.main_thread()
        self.armed = False
        self.previous: Any = None

    def __enter__(self) -> _Watch:
        if self.main:
            self.previous = signal.signal(leases.LOST_SIGNAL, self._raise)
            self.armed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.main:
            self.armed = False
            signal.signal(
                leases.LOST_SIGNAL, signal.SIG_DFL if self.previous is None else self.previous
            )

    def _raise(self, signum: int, frame: object) -> None:
        if self.armed:
            self.armed = False
            raise _Lost()

    def interrupt(self) -> None:
        if self.armed:
            main = threading.main_thread().ident
            if main is not None:  # (a started thread's ident is never None)
                signal.pthread_kill(main, leases.LOST_SIGNAL)


def _watched_heartbeat(
    plan: RatingPlan,
    step_id: str,
    stop: threading.Event,
    lost: list[str],
    watch: _Watch,
    on_lost: Callable[[], object] | None,
) -> None:
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
