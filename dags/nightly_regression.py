"""nightly_regression — rate the baselines of config/nightly.yml and judge each with its history.

    load_config → rate_baseline[b] (mapped; pool workbench_sut) → compare → needs_rerun
        needs_rerun → rerun → decide   (a suspect: re-rate it, and the canary)
        needs_rerun → decide           (none)
    decide → report → verdict

load_config checks the configuration and puts every selected baseline through the validation pass
(params.validation) before anything is stored or provisioned. compare runs the change-point detector
over each baseline's stored λ* history (the per-night test while it is shorter than six nights:
pipeline.nightly); a suspected new level branches to `rerun` (the suspect re-rated, the config's
canary with it) and `decide` names the verdict: REGRESSION (the night it began and the settings that
changed), LAB CHANGE (the canary moved too), NO VERDICT or ok. Any but ok turns the run red
(notified by e-mail and webhook: workbench.output.notify). Each rating is seeded at its baseline's
reference load with `seed_trials` trials there (default 6). Schedule: $WB_NIGHTLY_CRON (default
03:00 every day), no catch-up.
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, Param, task
from airflow.sdk.exceptions import AirflowFailException

from analysis.nightly_report import night_report
from analysis.rating_report import report_step
from workbench.config.vocabulary import SLOTS
from workbench.output.notify import RunNotifier
from workbench.params.plan import ParamError, night_of
from workbench.pipeline import nightly, nightly_config
from workbench.pipeline.runner import RATING_TIMEOUT_S
from workbench.store.s3 import open_store

POOL = "workbench_sut"


with DAG(
    dag_id="nightly_regression",
    description="Nightly regression ratings of baseline configurations against their history",
    schedule=os.environ.get("WB_NIGHTLY_CRON", "0 3 * * *"),
    start_date=dt.datetime(2026, 11, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    tags=["workbench"],
    doc_md=__doc__,
    on_failure_callback=RunNotifier(),  # a regression, NO VERDICT or a failure: e-mail and webhook
) as dag:

    @task
    def load_config(params=None, dag_run=None):
        try:
            return nightly.start_night(
                open_store(),
                nightly_config.confined_config(params["config_path"]),
                params.get("only"),
                night_of(dag_run),
            )
        except ParamError as e:
            raise AirflowFailException(str(e)) from None

    @task(
        pool=POOL,
        max_active_tis_per_dagrun=len(SLOTS),
        retries=1,
        retry_delay=dt.timedelta(seconds=10),
        execution_timeout=dt.timedelta(seconds=RATING_TIMEOUT_S),
    )
    def rate_baseline(job):
        return nightly.rate_baseline(open_store(), job["night"], job["baseline"], report_step)

    @task
    def compare(records, dag_run=None):
        return nightly.compare(open_store(), night_of(dag_run), records)

    @task.branch
    def needs_rerun(verdicts):
        return "rerun" if nightly.needs_rerun(verdicts) else "decide"

    @task(
        pool=POOL,
        retries=1,
        retry_delay=dt.timedelta(seconds=10),
        execution_timeout=dt.timedelta(seconds=RATING_TIMEOUT_S * 8),
    )  # suspects + canary, in series
    def rerun(verdicts, dag_run=None):
        return nightly.rerun(open_store(), night_of(dag_run), verdicts, report_step)

    @task(trigger_rule="none_failed_min_one_success")
    def decide(verdicts, dag_run=None):
        return nightly.decide(open_store(), night_of(dag_run), verdicts)

    @task
    def report(verdicts, dag_run=None):
        print(f"report: {night_report(open_store(), night_of(dag_run), verdicts)}")
        return verdicts

    @task
    def verdict(verdicts):
        why = nightly.failures(verdicts)  # an unconverged rating turns the night red too
        if why:
            raise AirflowFailException(why)
        print(f"no regression in {len(verdicts)} baseline(s)")

    judged = compare(rate_baseline.expand(job=load_config()))
    redo, final = rerun(judged), decide(judged)
    needs_rerun(judged) >> [redo, final]
    redo >> final
    verdict(report(final))

# the Params once the tasks exist, so that no task keeps a copy of them (dags/README.md); the
# DAG's attrs converter makes the dict a ParamsDict, which mypy does not see
dag.params = {  # type: ignore[assignment]
    "config_path": Param(
        "config/nightly.yml",
        type="string",
        description="baseline list (relative to the repository; inside config/ or "
        "a directory of WB_NIGHTLY_CONFIG_DIRS)",
    ),
    "only": Param(None, type=["null", "array"], description="rate only these baseline names"),
}
