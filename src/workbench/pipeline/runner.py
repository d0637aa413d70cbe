"""A whole rating in one process, resuming from the store's trial log: the same steps as rate_peak.

`workbench rate` (over a LocalStore), the mapped samples of map_surface and the baselines of
nightly_regression run ratings through `run_rating` (Airflow 3.3.2 ignores branch skips inside
mapped task groups, apache/airflow#67265, so the per-trial branch loop lives only in rate_peak).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from typing import Any

from workbench.config.vocabulary import MAX_TRIAL_TASKS
from workbench.controller.decide import Done
from workbench.lease.heartbeat import holding
from workbench.lease.leases import LEASE_WAIT_S, lease_slot
from workbench.measure import agent as agents
from workbench.measure.ansible import AnsibleHarness
from workbench.measure.protocol import HarnessFactory
from workbench.output.console import WIDTH, fmt_num, short, trial_line
from workbench.params.plan import RatingPlan
from workbench.pipeline.finish import publish_step, summarise_step, validate_step
from workbench.pipeline.slot import reap_slots, teardown
from workbench.pipeline.steps import decide_step, deploy, provision, trial_log, trial_step
from workbench.pipeline.stop import RatingKilled, killable, stop_children
from workbench.store.base import Store

# The report step between summarise and publish (analysis.rating_report.report_step, passed in by
# the entry points and the DAG tasks: the pipeline does not render): (plan, store) → its key.
ReportStep = Callable[[RatingPlan, Store], object]

# Wall-clock bound of a whole rating in one task (map_surface, nightly_regression): the slot wait,
# provisioning and the profiles' budgets fit many times over; a rating that needs more is stuck.
RATING_TIMEOUT_S = 12 * 3600.0


def run_rating(
    plan: RatingPlan,
    store: Store,
    log: Callable[[str], object] = print,
    on_trial: Callable[[Mapping[str, Any]], None] | None = None,
    teardown_after: bool = True,
    make: HarnessFactory = AnsibleHarness,
    agent: bool | None = None,
    report: ReportStep | None = None,
) -> dict[str, Any]:
    """reap → lease (waiting up to LEASE_WAIT_S for a busy slot) → provision → deploy → trials →
    validate → summarise → report (when `report` is given) → publish → teardown (always, unless
    `teardown_after` is False; after a kill, by a detached process). A trial already in the store is
    not run again.

    One process runs the whole rating, so its harnesses (one per step) may share resident fstress
    agents (measure/agent.py): `agent`, or when None WB_FSTRESS_AGENT=0/1, else
    agents.IN_PROCESS_DEFAULT. The agents end with the rating at the latest."""
    with agents.enable(agent):
        return _run_rating(plan, store, log, on_trial, teardown_after, make, report)


def _run_rating(
    plan: RatingPlan,
    store: Store,
    log: Callable[[str], object],
    on_trial: Callable[[Mapping[str, Any]], None] | None,
    teardown_after: bool,
    make: HarnessFactory,
    report: ReportStep | None,
) -> dict[str, Any]:
    reap_slots(make, log=log)  # slots whose holder is gone: torn down first
    plan = lease_slot(plan, wait_s=LEASE_WAIT_S, log=log)
    log(
        f"rating {plan.rating_id}: {plan.workload_name()} on {plan.slot} (lease token "
        f"{plan.lease_token})\n  {plan.server_text()}"
    )
    killed = False
    try:
        with holding(plan, on_lost=stop_children), killable(plan):  # the rating's heartbeat
            return _rate(plan, store, log, on_trial, make, report)
    except RatingKilled:
        killed = True
        raise
    except BaseException:  # e.g. AirflowTaskTimeout: the playbook it interrupted may still run
        stop_children()
        raise
    finally:
        if teardown_after and not killed:
            log(f"  teardown: {teardown(plan, make)}")
        shutil.rmtree(plan.local_dir() / ".runner", ignore_errors=True)


def _rate(
    plan: RatingPlan,
    store: Store,
    log: Callable[[str], object],
    on_trial: Callable[[Mapping[str, Any]], None] | None,
    make: HarnessFactory,
    report: ReportStep | None,
) -> dict[str, Any]:
    provision(plan, store, make)
    log(f"  {deploy(plan, store, make, width=WIDTH - 2)}")  # a console line with its indent
    stored = len(trial_log(store, plan.rating_id))
    if stored:
        log(f"  resuming after {stored} stored trial(s)")
    for k in range(MAX_TRIAL_TASKS + 1):
        d = decide_step(plan, store, k)
        if isinstance(d, Done) or k == MAX_TRIAL_TASKS:
            break
        record = trial_step(plan, store, k, make)
        if k >= stored:  # a stored trial is not run again, nor shown again
            (on_trial or (lambda r: log(trial_line(r))))(record)
    result = summarise_step(plan, store, validate_step(plan, store))
    if report is not None:
        report(plan, store)
    urls = publish_step(plan, store)
    log(f"  λ* = {fmt_num(result['peak_rate'])} ops/s ({short(result['reason'], 80)})")
    return {**result, "urls": urls}
