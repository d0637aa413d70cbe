"""A rating's slot: the plan's harness on it and the slot's teardown — what the steps, `run_rating`
and a killed step's detached teardown (`stop.main`) share."""
from __future__ import annotations

import dataclasses

from workbench.lease.leases import holding, holds, mark_dirty, release_slot, teardown_turn
from workbench.measure.ansible import AnsibleHarness
from workbench.measure.protocol import Harness, HarnessFactory
from workbench.params.plan import RatingPlan


class TeardownFailed(RuntimeError):
    """The slot could not be torn down: its lease stays, marked dirty, until a later teardown succeeds."""


def harness_for(plan: RatingPlan, make: HarnessFactory = AnsibleHarness) -> Harness:
    """The plan's harness on its leased slot (`make`: AnsibleHarness, or a test's subclass)."""
    if plan.slot == "auto":
        raise RuntimeError("the plan has no slot yet: lease_slot first")
    req = plan.request()
    server, load = req.server, req.load        # the harness reads these two parts only
    return make(slot=plan.slot, inventory=plan.inventory, factors=server.factors, workload=plan.workload_file(),
                results_dir=plan.local_dir(), warmup_s=load.warmup_s, fileset_rate=load.fileset_rate,
                extravars=load.extravars, overload_ms=req.goals.region[1],
                external=server.external, load_hosts=load.load_hosts,
                **({"background": load.background} if load.background else {}))


def teardown_or_raise(plan: RatingPlan, make: HarnessFactory) -> None:
    # every load host of the slot, even where the rating asked for fewer (or too many)
    run = harness_for(dataclasses.replace(plan, load_hosts=0), make).teardown()
    if not run.ok:
        raise TeardownFailed(f"teardown of {plan.slot} failed: {run.message()}; its lease stays, marked "
                             f"dirty, until a later teardown succeeds")


def teardown(plan: RatingPlan, make: HarnessFactory = AnsibleHarness) -> str:
    """Tear the slot down and release the lease — only if this rating holds it. TeardownFailed (the run
    turns red) when the playbook fails: the lease is kept, marked dirty. Teardowns of a slot take turns."""
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
