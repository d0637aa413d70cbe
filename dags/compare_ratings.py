"""compare_ratings — B's peak rate against A's (before/after a setting change), from the UI.

    compare → comparisons/<A>__vs__<B>/{verdict.json, report.html} in the results store

The statistics of the nightly job with A as the baseline (analysis.compare): the change in λ* with
its CI, Welch's one-sided test on the trials near A's measured load nearest its λ*, the verdict in
words; the page draws both latency-vs-load curves on one plot. The run stays green whatever the
verdict (it informs); a rating that is missing or has not finished fails it, naming which.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, Param, task
from airflow.sdk.exceptions import AirflowFailException

from analysis import compare
from workbench.params.plan import ParamError
from workbench.store.base import StoreError

with DAG(
    dag_id="compare_ratings",
    description="B's peak rate against A's: change, CI, Welch's test, verdict and a page",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    tags=["workbench"],
    doc_md=__doc__,
) as dag:

    @task
    def compare_ab(params=None):
        try:
            (sa, a), (sb, b) = compare.open_rating(params["a"]), compare.open_rating(params["b"])
            out = compare.compare_ratings(
                compare.load_rating(sa, a),
                compare.load_rating(sb, b),
                params["tolerance"],
                params["confidence"],
            )
        except (ParamError, StoreError) as e:
            raise AirflowFailException(str(e)) from None
        print(
            f"{out['verdict']['word']}: {out['verdict']['reason']}\npage: "
            f"{compare.publish(sb, out)}"
        )
        return out["verdict"]

    compare_ab()

# the Params once the tasks exist, so that no task keeps a copy of them (dags/README.md); the
# DAG's attrs converter makes the dict a ParamsDict, which mypy does not see
dag.params = {  # type: ignore[assignment]
    "a": Param(
        "",
        type="string",
        minLength=1,
        description="rating A (before): id or s3://bucket/ratings/<id>/",
    ),
    "b": Param(
        "",
        type="string",
        minLength=1,
        description="rating B (after): id or s3://bucket/ratings/<id>/",
    ),
    "tolerance": Param(
        0.10,
        type="number",
        minimum=0,
        exclusiveMaximum=1,
        description="relative change in λ* that matters",
    ),
    "confidence": Param(0.95, type="number", exclusiveMinimum=0, exclusiveMaximum=1),
}
