"""map_surface — λ* over a factor space: designed samples, one rating each, a quadratic model.

    plan_samples → rate_sample_0[i] → next_0 ─┬→ round_1 → rate_sample_1[i] → next_1 ─┬→ …
                                              └→ done_0 ─┐                           └→ done_1 ─┐
    … → next_5 → done_5 ─────────────────────────────────┴──────────────────────────────────────┴→
    fit_surface

plan_samples builds the design with pydoe (full factorial, D-optimal n of the grid, LHS, or
active) and orders the samples so each can be seeded from a near finished one; every sample goes
through the validation pass (params.validation) before anything is stored or provisioned. Each
rate_sample_k[i] (mapped; ≤ 2 at once, pool workbench_sut) runs a whole rating in its task (the
per-trial branch loop stays in rate_peak: Airflow 3.3.2 ignores branch skips inside mapped task
groups, apache/airflow#67265) and seeds from the nearest sample finished so far.

**Rounds.** A DAG is acyclic, so the active design's loop is unrolled into MAX_ROUNDS rounds. After
round k, next_k (a branch in the plain DAG, where skips work) reads the rated samples from the
store, fits the model and decides (planning.active, stored at rounds/<k>.json so a retry decides
the same): done_k when the leave-one-out MAPE reaches `mape_target_pct`, the sweep budget or the
deadline is spent, every grid sample is rated or the last round ran — it then skips every later
round at once; else round_{k+1} with the `batch` grid samples of largest prediction variance
(the D-optimal augmentation). One-shot designs (fullfact, dopt, lhs) are round 0 and done_0.

**Budget and deadline** (every design): `sweep_budget_s` bounds the ratings' summed cost (runlengths
+ trial overheads: the controller's account, which a rating's budget_s caps; the measured wall time,
with provisioning, is reported beside it): a round starts only as many ratings as the rest pays
for at their own budget_s, the last one getting what is left. No rating starts after `deadline`
(an interrupted one resumes); no round is planned after it. The report gives why the sweep stopped
and, for the active design, LOO MAPE against samples.
"""

from __future__ import annotations

import datetime as dt

from airflow.providers.common.compat.sdk import DownstreamTasksSkipped
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.python import BranchPythonOperator
from airflow.providers.standard.utils.skipmixin import XCOM_SKIPMIXIN_FOLLOWED, XCOM_SKIPMIXIN_KEY
from airflow.sdk import DAG, Param, task
from airflow.sdk.exceptions import AirflowFailException

from analysis.rating_report import report_step
from analysis.surface_report import surface_report_step
from workbench.config.vocabulary import DESIGNS, MAX_ROUNDS, SLOTS
from workbench.output.notify import RunNotifier
from workbench.params.pack import confined_pack
from workbench.params.plan import PARAMS, ParamError, rating_id_for
from workbench.pipeline import sweep, sweep_plan
from workbench.pipeline.runner import RATING_TIMEOUT_S
from workbench.store.s3 import open_store

POOL = "workbench_sut"
R = MAX_ROUNDS


def _sweep_id(dag_run) -> str:
    return rating_id_for(dag_run.dag_id, dag_run.run_id)


class RoundBranch(BranchPythonOperator):
    """next_k. On done_k it skips every later round's tasks at once; the plain branch skips only
    round_{k+1}, and the skip then cascades one level per scheduler loop (~1 s each, 4 a round)."""

    def skip_all_except(self, ti, branch_task_ids):
        k = int(self.task_id.rsplit("_", 1)[1])
        followed = (
            [branch_task_ids] if isinstance(branch_task_ids, str) else list(branch_task_ids or [])
        )
        if followed != [f"done_{k}"]:
            return super().skip_all_except(ti, followed)
        rest = [
            f"{t}_{j}" for j in range(k + 1, R) for t in ("round", "rate_sample", "next", "done")
        ]
        ti.xcom_push(key=XCOM_SKIPMIXIN_KEY, value={XCOM_SKIPMIXIN_FOLLOWED: [f"done_{k}"]})
        raise DownstreamTasksSkipped(tasks=[(t, -1) for t in rest])


def decide(k: int):
    def fn(dag_run, **_):
        d = sweep.decide_round(open_store(), _sweep_id(dag_run), k)
        return f"done_{k}" if d["done"] else f"round_{k + 1}"

    return fn


with DAG(
    dag_id="map_surface",
    description="Response surface of λ* over workload/resource/configuration factors (Cutting "
    "Corners §5)",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    tags=["workbench"],
    doc_md=__doc__,
    on_failure_callback=RunNotifier(),  # a failed sweep: e-mail and webhook
) as dag:

    @task
    def plan_samples(params=None, dag_run=None):
        try:
            confined_pack(params.get("factor_pack"))  # (a pack's tasks run as root)
            return sweep.start_sweep(open_store(), dict(params), _sweep_id(dag_run))
        except ParamError as e:
            raise AirflowFailException(f"bad parameters: {e}") from None

    def rate_sample(k: int):
        @task(
            task_id=f"rate_sample_{k}",
            pool=POOL,
            max_active_tis_per_dagrun=len(SLOTS),
            retries=1,
            retry_delay=dt.timedelta(seconds=10),
            execution_timeout=dt.timedelta(seconds=RATING_TIMEOUT_S),
        )
        def fn(job):
            return sweep.rate_sample(open_store(), job["sweep"], job["item"], report=report_step)

        return fn

    def next_round(k: int):
        @task(task_id=f"round_{k}")
        def fn(dag_run=None):
            return sweep.round_jobs(open_store(), _sweep_id(dag_run), k)

        return fn

    @task(trigger_rule="none_failed_min_one_success")
    def fit_surface(dag_run=None):
        store, sweep_id = open_store(), _sweep_id(dag_run)
        summary = sweep.finish_sweep(store, sweep_id)
        print(f"fit: {summary}\nreport: {surface_report_step(store, sweep_id)}")
        return summary

    fit = fit_surface()
    jobs = plan_samples()
    for k in range(R):
        rated = rate_sample(k).expand(job=jobs)
        # none_failed_min_one_success: runs after its round (an empty one included), skipped with it
        branch = RoundBranch(
            task_id=f"next_{k}",
            python_callable=decide(k),
            trigger_rule="none_failed_min_one_success",
        )
        done = EmptyOperator(task_id=f"done_{k}")
        [jobs, rated] >> branch >> done >> fit
        if k + 1 < R:
            jobs = next_round(k + 1)()
            branch >> jobs

# the Params once the tasks exist, so that no task keeps a copy of them (dags/README.md); the
# DAG's attrs converter makes the dict a ParamsDict, which mypy does not see
dag.params = {  # type: ignore[assignment]
    "workload": Param(**PARAMS["workload"]),
    "workload_text": Param(**PARAMS["workload_text"]),
    "profile": Param(**PARAMS["profile"]),
    "policy": Param(**PARAMS["policy"]),
    "factors": Param(
        {"memory_mb": [128, 256], "read_iops": [100, 200]},
        type="object",
        description="factor → levels; numeric: "
        + ", ".join(sweep_plan.NUMERIC_FACTORS)
        + "; categorical: "
        + ", ".join(sweep_plan.CATEGORICAL_FACTORS)
        + "; and the factors of factor_pack",
    ),
    "factor_pack": Param(**PARAMS["factor_pack"]),
    "fixed": Param({}, type="object", description='other factors held fixed, e.g. {"fs": "xfs"}'),
    "design": Param(
        "fullfact",
        type="string",
        enum=list(DESIGNS),
        description="fullfact, dopt (D-optimal n_samples of the grid), lhs, or active (rounds "
        "until the MAPE target)",
    ),
    "n_samples": Param(
        None,
        type=["null", "integer"],
        minimum=1,
        maximum=256,
        description="samples for dopt / lhs; active: the start set (default terms + 1)",
    ),
    "seeding": Param(
        True, type="boolean", description="seed each rating from the nearest finished sample"
    ),
    "mape_target_pct": Param(
        10.0,
        type="number",
        minimum=0.1,
        maximum=100,
        description="active: stop when the leave-one-out MAPE of λ* is at most this (%)",
    ),
    "batch": Param(
        1,
        type="integer",
        minimum=1,
        maximum=sweep_plan.MAX_BATCH,
        description="active: samples added a round (up to the slots for parallel ratings)",
    ),
    "degree": Param(
        2, type="integer", enum=[1, 2], description="model: 2 quadratic (seed 000 §5.5), 1 planar"
    ),
    "sweep_budget_s": Param(
        None,
        type=["null", "number"],
        minimum=10,
        description="every design: Σ cost of the ratings (runlengths + overheads, s)",
    ),
    "deadline": Param(
        None,
        type=["null", "string"],
        description="every design: no rating starts after this UTC time (ISO 8601)",
    ),
}
