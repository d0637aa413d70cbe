"""nightly_regression — rate the baselines of config/nightly.yml and compare each with its history.

    load_config → rate_baseline[b] (mapped; pool workbench_sut) → compare → report → verdict

Each baseline's λ* is compared with the λ* of its earlier nights in the store (CI of the
difference and Welch's test on the trials at the baseline's peak, analysis.regression); a drop
that is significant and beyond the tolerance is a regression and turns the run red. Each rating
is seeded at its baseline's reference load (the measured load nearest the baseline λ*) with
`seed_trials` trials there (default 6), so both sides of Welch's test have a sample. Schedule:
$WB_NIGHTLY_CRON (default 03:00 every day), no catch-up.
"""
from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, Param, task
from airflow.sdk.exceptions import AirflowFailException

from workbench import pipeline, sweep

POOL = "workbench_sut"


def _night(dag_run) -> str:
    when = dag_run.logical_date or dag_run.run_after
    return when.strftime("%Y-%m-%d")


with DAG(
    dag_id="nightly_regression",
    description="Nightly regression ratings of baseline configurations against their history",
    schedule=os.environ.get("WB_NIGHTLY_CRON", "0 3 * * *"),
    start_date=dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    params={
        "config_path": Param("config/nightly.yml", type="string",
                             description="baseline list (relative to the repository)"),
        "only": Param(None, type=["null", "array"], description="rate only these baseline names"),
    },
    tags=["workbench"],
    doc_md=__doc__,
) as dag:

    @task
    def load_config(params=None, dag_run=None):
        try:
            cfg = sweep.load_nightly_config(params["config_path"])
        except pipeline.ParamError as e:
            raise AirflowFailException(str(e)) from None
        only = params.get("only")
        base = [b for b in cfg["baselines"] if not only or b["name"] in only]
        if not base:
            raise AirflowFailException(f"no baseline selected (only={only})")
        night = _night(dag_run)
        pipeline.open_store().put_json(f"nightly/{night}/config.json", cfg)
        return [{"night": night, "baseline": b} for b in base]

    @task(pool=POOL, max_active_tis_per_dagrun=len(pipeline.SLOTS), retries=1,
          retry_delay=dt.timedelta(seconds=10))
    def rate_baseline(job):
        from analysis.regression import reference_load
        store = pipeline.open_store()
        night, b = job["night"], job["baseline"]
        key = f"nightly/{night}/{b['name']}.json"
        if store.exists(key):
            return store.get_json(key)
        plan = pipeline.plan_from_params(b.get("params") or {}, f"nightly__{night}__{b['name']}")
        # seeded at the baseline's reference load with a fixed number of trials there: cheaper
        # (seed 000 §5.4), and tonight then has a sample where the history has one, for the Welch
        # test in `compare`
        ref = reference_load(sweep.nightly_history(store, b["name"], night))
        cfg = store.get_json(f"nightly/{night}/config.json")
        plan = pipeline.seeded(plan, ref, cfg.get("seed_trials", sweep.NIGHTLY_SEED_TRIALS))
        print(f"{b['name']}: seed load {plan.spec.get('seed_load')} (baseline reference load {ref})")
        res = pipeline.run_rating(plan, store)
        rec = {"name": b["name"], "night": night, "params": b.get("params") or {}, "rating_id": plan.rating_id,
               "seed_load": plan.spec.get("seed_load"),
               "result": pipeline.strict_json({k: v for k, v in res.items() if k != "trace"})}
        store.put_json(key, rec)
        return rec

    @task
    def compare(records, dag_run=None):
        from analysis.regression import compare_to_history
        store = pipeline.open_store()
        night = _night(dag_run)
        cfg = store.get_json(f"nightly/{night}/config.json")
        verdicts = []
        for rec in sorted(records, key=lambda r: r["name"]):
            history = sweep.nightly_history(store, rec["name"], night)
            current = sweep.nightly_rating(store, rec["rating_id"], rec["result"])
            v = compare_to_history(current, history, tolerance=cfg["tolerance"],
                                   confidence=cfg["confidence"]).to_dict()
            v.update(name=rec["name"], config=rec["params"], rating_id=rec["rating_id"],
                     history_nights=[h["night"] for h in history],
                     report_url=store.url(store.rating_key(rec["rating_id"], "report.html")),
                     report_href=store.link(store.nightly_key(night, "report.html"),
                                            store.rating_key(rec["rating_id"], "report.html")))
            status = "REGRESSION" if v["regression"] else "NO VERDICT" if v["inconclusive"] else "ok"
            print(f"{rec['name']}: {status} — {v['reason']}")
            verdicts.append(v)
        store.put_json(f"nightly/{night}/verdicts.json", verdicts)
        return verdicts

    @task
    def report(verdicts, dag_run=None):
        from analysis.report import nightly_report_html
        store = pipeline.open_store()
        night = _night(dag_run)
        html = nightly_report_html(night, verdicts, {})
        key = store.nightly_key(night, "report.html")
        store.put_bytes(key, html.encode(), "text/html; charset=utf-8")
        print(f"report: {store.url(key)}")
        return verdicts

    @task
    def verdict(verdicts):
        bad = [v for v in verdicts if v["regression"] or v.get("inconclusive")]
        if bad:   # an unconverged rating turns the night red too: nobody knows whether it regressed
            raise AirflowFailException("; ".join(
                f"{'regression' if v['regression'] else 'no verdict'}: {v['name']}: {v['reason']}" for v in bad))
        print(f"no regression in {len(verdicts)} baseline(s)")

    verdict(report(compare(rate_baseline.expand(job=load_config()))))
