"""rate_peak — find λ* of one NFS server configuration, one Airflow task group per trial.

    validate → lease_slot → provision → deploy → trial_0 → trial_1 → … → trial_39 → trial_40
                                                    │         │              │          │
    gx_check → summarise → report → publish → teardown (always) → verdict ◄─┴──────────┘

Each task group trial_k (one row in the grid) is   decide ─┬→ run    (→ the next group's decide)
                                                           └→ done   (→ gx_check)
and the last group, trial_40, holds only its done (the max_trials bound).

verdict fails the run when the rating did not converge (after its result and report are stored and
the slot is torn down: nothing lost). A red run is notified by e-mail and webhook (RunNotifier,
workbench.output.notify).

trial_k.decide is a branch operator: it reads the trial log from the results store and asks the
controller (`decide(spec, trials)`); it follows trial_k.run or stops at trial_k.done, which skips
every later trial. trial_k.run records trials/<k>.json and is idempotent, so a retried task or a
restarted scheduler neither loses nor repeats a trial. Branching works in a plain task group;
only a *mapped* one ignores branch skips in Airflow 3.3.2 (apache/airflow#67265).
"""

from __future__ import annotations

import datetime as dt

from airflow.providers.common.compat.sdk import DownstreamTasksSkipped
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.python import BranchPythonOperator, PythonOperator
from airflow.providers.standard.utils.skipmixin import XCOM_SKIPMIXIN_FOLLOWED, XCOM_SKIPMIXIN_KEY
from airflow.sdk import DAG, Param, TaskGroup
from airflow.sdk.exceptions import AirflowFailException

from analysis.rating_report import report_step
from workbench import pipeline
from workbench.config.vocabulary import MAX_TRIAL_TASKS, SLOTS
from workbench.controller.decide import NextTrial
from workbench.lease import leases
from workbench.lease.leases import LeaseLost
from workbench.lease.store import LeaseConfigError
from workbench.measure.inventory import InventoryError
from workbench.output.console import fmt_num, result_block, trial_line
from workbench.output.notify import RunNotifier
from workbench.params.pack import confined_pack
from workbench.params.plan import PARAMS, ParamError, RatingPlan, rating_id_for
from workbench.params.validation import checked_plan
from workbench.pipeline.stop import RatingKilled, stop_children
from workbench.store.s3 import open_store

POOL = "workbench_sut"
K = MAX_TRIAL_TASKS
# Wall-clock bounds (the ansible-runner timeouts inside are tighter: from the trial's own runlength)
SETUP_TIMEOUT = dt.timedelta(hours=1)  # provision / deploy (file set build ≤ 30 min)
TRIAL_TIMEOUT = dt.timedelta(seconds=PARAMS["runlength_s"]["maximum"] * 1.5 + 600)
TEARDOWN_TIMEOUT = dt.timedelta(minutes=15)


class SlotOperator(PythonOperator):
    """A task that touches the slot. Killed by its execution_timeout (Airflow then retries it, the
    lease kept), it stops the playbook and local generator it started; a SIGTERM (the task killed
    from the UI) also tears the slot down (pipeline.stop)."""

    def execute(self, context):
        try:
            return super().execute(context)
        except (LeaseLost, RatingKilled, InventoryError) as e:  # no retry can help
            raise AirflowFailException(f"{type(e).__name__}: {e}") from None

    def on_kill(self) -> None:
        print(f"on_kill: stopped processes {stop_children()}")


def task_ids(k: int) -> dict[str, str]:
    """The ids of trial k's tasks: its task group trial_k holds decide, run and done."""
    return {part: f"trial_{k}.{part}" for part in ("decide", "run", "done")}


class DecideOperator(BranchPythonOperator):
    """trial_k.decide. On stop (trial_k.done) it skips the whole rest of the unrolled chain at once;
    the plain branch skips only trial_k.run, and the skip then cascades one level per scheduler loop
    (~1 s each, up to 3·K levels)."""

    def skip_all_except(self, ti, branch_task_ids):
        k = int(self.task_id.split(".", 1)[0].rsplit("_", 1)[1])
        # Airflow passes the branch as a generator of task ids (task groups expanded)
        followed = (
            [branch_task_ids] if isinstance(branch_task_ids, str) else list(branch_task_ids or [])
        )
        if followed != [task_ids(k)["done"]]:
            return super().skip_all_except(ti, followed)
        rest = (
            [task_ids(j)["run"] for j in range(k, K)]
            + [task_ids(j)["decide"] for j in range(k + 1, K)]
            + [task_ids(j)["done"] for j in range(k + 1, K + 1)]
        )
        ti.xcom_push(key=XCOM_SKIPMIXIN_KEY, value={XCOM_SKIPMIXIN_FOLLOWED: [task_ids(k)["done"]]})
        raise DownstreamTasksSkipped(tasks=[(t, ti.map_index) for t in rest])


def _plan(ti) -> RatingPlan:
    return RatingPlan.from_dict(ti.xcom_pull(task_ids="lease_slot"))


def validate(params, dag_run, ti, **_):
    rating_id = rating_id_for(dag_run.dag_id, dag_run.run_id)
    # MinIO reachable, and the whole validation pass (params.validation), before anything is
    # provisioned
    try:
        confined_pack(params.get("factor_pack"))  # (the tasks of a pack the UI names run as root)
        return checked_plan(dict(params), rating_id, open_store()).to_dict()
    except ParamError as e:
        raise AirflowFailException(f"bad parameters: {e}") from None


def lease_slot(ti, **_):
    # a busy slot is retried (the task's retries); a slot the inventory lacks, or WB_LEASE_*, is not
    try:
        # slots whose holder is gone (a killed CLI, an ended run): torn down first
        pipeline.reap_slots()
        plan = leases.lease_slot(RatingPlan.from_dict(ti.xcom_pull(task_ids="validate")))
    except (InventoryError, LeaseConfigError) as e:
        raise AirflowFailException(str(e)) from None
    print(f"leased {plan.slot} (token {plan.lease_token})")
    return plan.to_dict()


def provision(ti, **_):
    info = pipeline.provision(_plan(ti), open_store())
    print(f"provisioned {info.get('host')}: {info.get('server')}")


def deploy(ti, **_):
    print(pipeline.deploy(_plan(ti), open_store()))


def decide(k: int):
    def fn(ti, **_):
        d = pipeline.decide_step(_plan(ti), open_store(), k)
        if isinstance(d, NextTrial):
            print(f"trial {k}: {d.load_ops_s:g} ops/s × {d.runlength_s:g} s ({d.reason})")
            return task_ids(k)["run"]
        print(f"stop after {k} trials: {d.result.reason}; λ* ≈ {fmt_num(d.result.peak_rate)} ops/s")
        return task_ids(k)["done"]

    return fn


def trial(k: int):
    def fn(ti, **_):
        # the whole reason
        print(trial_line(pipeline.trial_step(_plan(ti), open_store(), k), width=None))

    return fn


def gx_check(ti, **_):
    res = pipeline.validate_step(_plan(ti), open_store())
    print(f"great_expectations: success={res['success']}, excluded={res['excluded']}")
    return res


def summarise(ti, **_):
    res = pipeline.summarise_step(_plan(ti), open_store(), ti.xcom_pull(task_ids="gx_check"))
    print(
        f"λ* = {fmt_num(res['peak_rate'])} ops/s, bracket {res['bracket']}, CI "
        f"{res['peak_rate_ci']}: {res['reason']}"
    )


def report(ti, **_):
    print(report_step(_plan(ti), open_store()))


def publish(ti, **_):
    urls = pipeline.publish_step(_plan(ti), open_store())
    for k, v in urls.items():
        print(f"{k}: {v}")
    return urls


def teardown(ti, **_):
    raw = ti.xcom_pull(task_ids="lease_slot")
    if raw is None:
        print("no slot was leased: nothing to tear down")
        return
    print(pipeline.teardown(RatingPlan.from_dict(raw)))


def verdict(ti, **_):
    store = open_store()
    res = store.get_json(store.result_key(_plan(ti).rating_id))
    print(result_block(res))
    if not res.get("converged"):  # the run turns red; result, report and trials are stored
        raise AirflowFailException(f"the rating did not converge: {res.get('reason')}")


with DAG(
    dag_id="rate_peak",
    description="Peak rate λ* of one NFS server configuration (Cutting Corners, Algorithm 2)",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=len(SLOTS),
    # every step is idempotent (keys derive from the run), so a task lost to a crash is retried;
    # validate's AirflowFailException is never retried
    default_args={"retries": 2, "retry_delay": dt.timedelta(seconds=5)},
    tags=["workbench"],
    doc_md=__doc__,
    on_failure_callback=RunNotifier(),
) as dag:
    t_validate = PythonOperator(task_id="validate", python_callable=validate)
    # both slots busy: wait for one (up to ~20 min) rather than fail
    t_lease = PythonOperator(
        task_id="lease_slot",
        python_callable=lease_slot,
        retries=40,
        retry_delay=dt.timedelta(seconds=30),
    )
    t_prov = SlotOperator(
        task_id="provision", python_callable=provision, pool=POOL, execution_timeout=SETUP_TIMEOUT
    )
    t_deploy = SlotOperator(
        task_id="deploy", python_callable=deploy, pool=POOL, execution_timeout=SETUP_TIMEOUT
    )
    t_gx = PythonOperator(
        task_id="gx_check", python_callable=gx_check, trigger_rule="none_failed_min_one_success"
    )
    t_validate >> t_lease >> t_prov >> t_deploy
    prev = t_deploy
    for k in range(K):
        with TaskGroup(group_id=f"trial_{k}", tooltip=f"trial {k}: decide, then run or stop"):
            d = DecideOperator(task_id="decide", python_callable=decide(k))
            t = SlotOperator(
                task_id="run", python_callable=trial(k), pool=POOL, execution_timeout=TRIAL_TIMEOUT
            )
            stop = EmptyOperator(task_id="done")
            d >> [t, stop]
        prev >> d
        # also straight from deploy: a failure before the chain fails every decide in one scheduler
        # loop, instead of one level per loop down the 2·K levels of the chain (~2 min)
        t_deploy >> d
        stop >> t_gx
        prev = t
    with TaskGroup(group_id=f"trial_{K}", tooltip=f"max_trials: at most {K} trials"):
        prev >> EmptyOperator(task_id="done") >> t_gx
    t_sum = PythonOperator(task_id="summarise", python_callable=summarise)
    t_rep = PythonOperator(task_id="report", python_callable=report)
    t_pub = PythonOperator(task_id="publish", python_callable=publish)
    # not in the pool: a failed run must release its slot even when the pool is full
    t_down = SlotOperator(
        task_id="teardown",
        python_callable=teardown,
        trigger_rule="all_done",
        execution_timeout=TEARDOWN_TIMEOUT,
    )
    t_verdict = PythonOperator(task_id="verdict", python_callable=verdict)
    t_gx >> t_sum >> t_rep >> t_pub >> t_down
    [t_pub, t_down] >> t_verdict
    t_lease >> t_down

# the Params once the tasks exist, so that no task keeps a copy of them (dags/README.md); the
# DAG's attrs converter makes the dict a ParamsDict, which mypy does not see
dag.params = {  # type: ignore[assignment]
    name: Param(**schema) for name, schema in PARAMS.items()
}
