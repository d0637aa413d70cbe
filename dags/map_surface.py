"""map_surface — λ* over a factor space: designed samples, one rating each, a quadratic model.

    plan_samples → rate_sample[i] (mapped; ≤ 2 at once, pool workbench_sut) → fit_surface → report

plan_samples builds the design with pydoe (full factorial, D-optimal n of the grid, LHS) and orders
the samples so each can be seeded from a near finished one; every sample goes through the validation
pass (pipeline.validation) before anything is stored or provisioned. Each rate_sample runs a whole rating in
its task (the per-trial branch loop stays in rate_peak: Airflow 3.3.2 ignores branch skips inside
mapped task groups, apache/airflow#67265) and seeds from the nearest sample finished so far.
"""
from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, Param, task
from airflow.sdk.exceptions import AirflowFailException

from workbench import pipeline
from workbench.config.vocabulary import DESIGNS, SLOTS
from workbench.pipeline import sweep
from workbench.pipeline.notify import RunNotifier
from workbench.pipeline.runner import RATING_TIMEOUT_S

POOL = "workbench_sut"


def _sweep_id(dag_run) -> str:
    return pipeline.rating_id_for(dag_run.dag_id, dag_run.run_id)

with DAG(
    dag_id="map_surface",
    description="Response surface of λ* over workload/resource/configuration factors (Cutting Corners §5)",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    params={
        "workload": Param(**pipeline.PARAMS["workload"]),
        "workload_text": Param(**pipeline.PARAMS["workload_text"]),
        "profile": Param(**pipeline.PARAMS["profile"]),
        "policy": Param(**pipeline.PARAMS["policy"]),
        "factors": Param({"memory_mb": [128, 256], "read_iops": [100, 200]}, type="object",
                         description="factor → levels; numeric: " + ", ".join(sweep.NUMERIC_FACTORS)
                                     + "; categorical: " + ", ".join(sweep.CATEGORICAL_FACTORS)),
        "fixed": Param({}, type="object", description="other factors held fixed, e.g. {\"fs\": \"xfs\"}"),
        "design": Param("fullfact", type="string", enum=list(DESIGNS),
                        description="fullfact, dopt (D-optimal n_samples of the grid) or lhs"),
        "n_samples": Param(None, type=["null", "integer"], minimum=1, maximum=256,
                           description="samples for dopt / lhs"),
        "seeding": Param(True, type="boolean", description="seed each rating from the nearest finished sample"),
    },
    tags=["workbench"],
    doc_md=__doc__,
    on_failure_callback=RunNotifier(),     # a failed sweep: e-mail and webhook
) as dag:

    @task
    def plan_samples(params=None, dag_run=None):
        try:
            return sweep.start_sweep(pipeline.open_store(), dict(params), _sweep_id(dag_run))
        except pipeline.ParamError as e:
            raise AirflowFailException(f"bad parameters: {e}") from None

    @task(pool=POOL, max_active_tis_per_dagrun=len(SLOTS), retries=1,
          retry_delay=dt.timedelta(seconds=10), execution_timeout=dt.timedelta(seconds=RATING_TIMEOUT_S))
    def rate_sample(job):
        return sweep.rate_sample(pipeline.open_store(), job["sweep"], job["item"])

    @task
    def fit_surface(rows, dag_run=None):
        return sweep.finish_sweep(pipeline.open_store(), _sweep_id(dag_run), rows)

    fit_surface(rate_sample.expand(job=plan_samples()))
