"""map_surface — λ* over a factor space: designed samples, one rating each, a quadratic model.

    plan_samples → rate_sample[i] (mapped; ≤ 2 at once, pool workbench_sut) → fit_surface → report

plan_samples builds the design with pydoe (full factorial, D-optimal n of the grid, LHS) and orders
the samples so each can be seeded from a near finished one. Each rate_sample runs a whole rating in
its task (the per-trial branch loop stays in rate_peak: Airflow 3.3.2 ignores branch skips inside
mapped task groups, apache/airflow#67265) and seeds from the nearest sample finished so far.
"""
from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, Param, task
from airflow.sdk.exceptions import AirflowFailException

from workbench import pipeline, sweep

POOL = "workbench_sut"



with DAG(
    dag_id="map_surface",
    description="Response surface of λ* over workload/resource/configuration factors (Cutting Corners §5)",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    params={
        "workload": Param(**pipeline.PARAMS["workload"]),
        "profile": Param(**pipeline.PARAMS["profile"]),
        "policy": Param(**pipeline.PARAMS["policy"]),
        "factors": Param({"memory_mb": [128, 256], "read_iops": [100, 200]}, type="object",
                         description="factor → levels; numeric: " + ", ".join(sweep.NUMERIC_FACTORS)
                                     + "; categorical: " + ", ".join(sweep.CATEGORICAL_FACTORS)),
        "fixed": Param({}, type="object", description="other factors held fixed, e.g. {\"fs\": \"xfs\"}"),
        "design": Param("fullfact", type="string", enum=list(sweep.DESIGNS),
                        description="fullfact, dopt (D-optimal n_samples of the grid) or lhs"),
        "n_samples": Param(None, type=["null", "integer"], minimum=1, maximum=256,
                           description="samples for dopt / lhs"),
        "seeding": Param(True, type="boolean", description="seed each rating from the nearest finished sample"),
    },
    tags=["workbench"],
    doc_md=__doc__,
) as dag:

    @task
    def plan_samples(params=None, dag_run=None):
        sweep_id = pipeline.rating_id_for(dag_run.dag_id, dag_run.run_id)
        try:
            plan = sweep.plan_sweep(dict(params), sweep_id)
        except pipeline.ParamError as e:
            raise AirflowFailException(f"bad parameters: {e}") from None
        store = pipeline.open_store()
        store.put_json(f"surfaces/{sweep_id}/plan.json", plan)
        for it in plan["samples"]:
            print(f"sample {it['i']}: {it['sample']}")
        return [{"sweep": {k: v for k, v in plan.items() if k != "samples"}, "item": it} for it in plan["samples"]]

    @task(pool=POOL, max_active_tis_per_dagrun=len(pipeline.SLOTS), retries=1,
          retry_delay=dt.timedelta(seconds=10))
    def rate_sample(job):
        return sweep.rate_sample(pipeline.open_store(), job["sweep"], job["item"])

    @task
    def fit_surface(rows, dag_run=None):
        from analysis.plots import surface_png
        from analysis.report import surface_report_html
        import pandas as pd
        store = pipeline.open_store()
        sweep_id = pipeline.rating_id_for(dag_run.dag_id, dag_run.run_id)
        plan = store.get_json(f"surfaces/{sweep_id}/plan.json")
        rows = sorted(rows, key=lambda r: r["i"])
        model, summary = sweep.fit_surface(plan, rows)
        store.put_json(f"surfaces/{sweep_id}/model.json", summary)
        points = pd.DataFrame([{**r["sample"], "peak_rate": r["peak_rate"]} for r in rows])
        store.put_bytes(f"surfaces/{sweep_id}/samples.parquet", points.to_parquet(index=False),
                        "application/vnd.apache.parquet")
        numeric = [f for f in plan["factors"] if f in sweep.NUMERIC_FACTORS]
        code = sweep.coder(sweep.factor_space(plan["factors"]), [r["sample"] for r in rows])
        plots = {}
        for i, fx in enumerate(numeric):
            for fy in numeric[i + 1:]:
                plots[f"surface_{fx}_{fy}.png"] = surface_png(points, fx, fy, fit=model, code=code)
        for name, png in plots.items():
            store.put_bytes(f"surfaces/{sweep_id}/plots/{name}", png, "image/png")
        key = store.surface_key(sweep_id, "report.html")
        samples = [{**r["sample"], **{k: r[k] for k in ("peak_rate", "rating_id", "n_trials", "seed_load",
                                                        "converged")},
                    "report_href": store.link(key, store.rating_key(r["rating_id"], "report.html"))} for r in rows]
        html = surface_report_html({"sweep_id": sweep_id, "factors": plan["factors"], "design": plan["design"]},
                                   samples, summary, plots)
        store.put_bytes(key, html.encode(), "text/html; charset=utf-8")
        print(f"fit: {summary}")
        print(f"report: {store.url(key)}")
        return summary

    fit_surface(rate_sample.expand(job=plan_samples()))
