"""A rating's slot: the plan's harness on it and the slot's teardown — what the steps, `run_rating`
and a killed step's detached teardown (`stop.main`) share."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from workbench.config import vocabulary
from workbench.config.untrusted import check_rating_id, refuse_template
from workbench.lease.heartbeat import holding
from workbench.lease.leases import (
    Alive,
    airflow_run_alive,
    asked_first,
    check_settings,
    check_slot,
    holder_gone,
    holds,
    mark_dirty,
    release_slot,
    teardown_turn,
    this_process,
)
from workbench.lease.store import lease_store
from workbench.measure.ansible import AnsibleHarness
from workbench.measure.protocol import Harness, HarnessFactory
from workbench.params.plan import RatingPlan


class TeardownFailed(RuntimeError):
    """The slot could not be torn down: its lease stays, marked dirty, until a later teardown
    succeeds."""


def harness_for(plan: RatingPlan, make: HarnessFactory = AnsibleHarness) -> Harness:
    """The plan's harness on its leased slot (`make`: AnsibleHarness, or a test's subclass)."""
    if plan.slot == "auto":
        raise RuntimeError("the plan has no slot yet: lease_slot first")
    req = plan.request()
    server, load = req.server, req.load  # the harness reads these two parts only
    return make(
        slot=plan.slot,
        inventory=plan.inventory,
        factors=server.factors,
        workload=plan.workload_file(),
        results_dir=plan.local_dir(),
        warmup_s=load.warmup_s,
        fileset_rate=load.fileset_rate,
        extravars=load.extravars,
        overload_ms=req.goals.region[1],
        external=server.external,
        load_hosts=load.load_hosts,
        **({"background": load.background} if load.background else {}),
        **({"factor_pack": server.pack, "pack_levels": server.pack_levels} if server.pack else {}),
    )


def teardown_or_raise(plan: RatingPlan, make: HarnessFactory) -> None:
    # every load host of the slot, even where the rating asked for fewer (or too many)
    run = harness_for(dataclasses.replace(plan, load_hosts=0), make).teardown()
    if not run.ok:
        raise TeardownFailed(
            f"teardown of {plan.slot} failed: {run.message()}; its lease stays, marked "
            f"dirty, until a later teardown succeeds"
        )


def teardown(plan: RatingPlan, make: HarnessFactory = AnsibleHarness) -> str:
    """Tear the slot down and release the lease — only if this rating holds it. TeardownFailed (the
    run turns red) when the playbook fails: the lease is kept, marked dirty. Teardowns of a slot
        take turns."""
    with teardown_turn(plan.slot):
        if not holds(plan):
            return f"slot {plan.slot} not held by {plan.rating_id}: nothing to tear down"
        try:
            with holding(plan):
                teardown_or_raise(plan, make)
        except TeardownFailed:
            mark_dirty(plan, True)
            raise
        release_slot(plan)
    return "torn down"


def _take_for_reaping(slot: str, alive: Alive | None) -> RatingPlan | str:
    """The dead holder's plan holding `slot` with a new token (the reaper now holds the lease, in
    the dead rating's name: its resume waits for the teardown), or why the slot is not reaped."""
    store = lease_store()
    alive = asked_first(alive or airflow_run_alive, store.read(slot))
    with store.locked(slot):
        lease = store.read(slot)
        if lease is None:
            return "free"
        if not holder_gone(lease, alive):
            return f"held by rating {lease.get('rating_id')}"
        if not isinstance(lease.get("plan"), dict):
            return (
                f"holder of rating {lease.get('rating_id')} gone, but no plan recorded: the next "
                f"rating that leases {slot} tears it down first"
            )
        plan = _recorded_plan(lease, slot)
        if isinstance(plan, str):
            return (
                f"holder of rating {lease.get('rating_id')} gone, but its recorded plan is refused "
                f"({plan}): the next rating that leases {slot} tears it down first"
            )
        token = store.next_token(slot)
        store.write(
            slot,
            {
                **lease,
                "token": token,
                "holder": this_process(reaper=True),
                "dirty": True,
                "taken_unix": time.time(),
            },
        )
    return plan.with_slot(slot).with_lease(token)


def _recorded_plan(lease: dict[str, Any], slot: str) -> RatingPlan | str:
    """The plan the lease records, or why it must not drive the teardown's root playbooks (the
    lease row is data another process wrote, the shared store's too): a Jinja marker in any value,
    a bad rating id, an inventory without the slot. Under the lease's rating_id, not the plan's:
    the reaper must hold what it tears down (a plan edited or recorded under another id would
    otherwise leave the lease unreleasable, reaped again every start)."""
    try:
        refuse_template("plan", lease["plan"])
        check_rating_id(lease.get("rating_id"))
        plan = RatingPlan.from_dict({**lease["plan"], "rating_id": lease.get("rating_id")})
        check_slot(plan, slot)
    except (ValueError, TypeError, KeyError, OSError) as e:
        return " ".join(str(e).split())[:300]
    return plan


def reap_slots(
    make: HarnessFactory = AnsibleHarness,
    alive: Alive | None = None,
    log: Callable[[str], Any] = print,
) -> list[str]:
    """Every slot whose holder is gone (its process ended, its Airflow run over, or its heartbeat
    silent for LEASE_STALE_S where neither can be told) is torn down and its lease released — what
    any start (CLI, DAG, stack) does before it leases. A failed teardown leaves the lease dirty (the
    next rating tears down first) and is logged, not raised. The slots reaped."""
    check_settings()
    reaped = []
    for slot in vocabulary.SLOTS:
        try:
            got = _take_for_reaping(slot, alive)
        except (OSError, TimeoutError, ValueError) as e:
            log(f"reaper: {slot} not checked: {e}")
            continue
        if isinstance(got, str):
            if got.startswith("holder of rating"):  # gone, but not reaped: say why
                log(f"reaper: {slot}: {got}")
            continue
        log(f"reaper: {slot}: the holder of rating {got.rating_id} is gone; tearing the slot down")
        try:
            log(f"reaper: {slot}: {teardown(got, make)}")
            reaped.append(slot)
        except Exception as e:  # TeardownFailed, a harness error: the next rating tries again
            log(f"reaper: {slot}: {e}")
    return reaped
