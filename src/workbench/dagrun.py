"""Run one of the workbench DAGs in this process with Airflow's ``dag.test()`` and print where its
results went — the main job's entry point (no scheduler or web server needed):

    python -m workbench.dagrun rate_peak [--conf '{"workload": "web_server"}'] [--date 2026-11-22]

Needs AIRFLOW_HOME with a migrated database (scripts/main-job.sh does `airflow db migrate`) and the
results store's WB_S3_* environment (scripts/minio.sh env).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any, Sequence

from workbench.config.paths import DAGS, rating_dir
from workbench.pipeline import open_store, rating_id_for
from workbench.pipeline.console import result_block


def worker_hostname() -> str:
    """The hostname a task instance records (Airflow's `core.hostname_callable`): the Celery
    worker's own name (`worker1@host`, set by scripts/celery-stack.sh as WB_WORKER_NAME) so that two
    workers on one host are told apart; else the host's FQDN, Airflow's default."""
    return os.environ.get("WB_WORKER_NAME") or socket.getfqdn()


def load_dag(dag_id: str, dags_folder: Path = DAGS):
    from airflow.dag_processing.dagbag import DagBag
    bag = DagBag(str(dags_folder))
    if bag.import_errors:
        raise SystemExit("DAG import errors:\n" + "\n".join(f"{k}: {v}" for k, v in bag.import_errors.items()))
    if dag_id not in bag.dags:
        raise SystemExit(f"unknown DAG {dag_id!r}; known: {', '.join(sorted(bag.dags))}")
    return bag.dags[dag_id]


def run(dag_id: str, conf: dict[str, Any] | None = None, logical_date: dt.datetime | None = None):
    """dag.test() with the given conf; returns the finished DagRun."""
    dag = load_dag(dag_id)
    kw: dict[str, Any] = {"run_conf": conf or {}}
    if logical_date is not None:
        kw["logical_date"] = logical_date
    return dag.test(**kw)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workbench.dagrun", description=__doc__.split("\n\n")[0])
    ap.add_argument("dag_id", choices=["rate_peak", "map_surface", "nightly_regression", "compare_ratings"])
    ap.add_argument("--conf", default="{}", help="run conf (JSON object): the DAG's Params")
    ap.add_argument("--date", help="logical date YYYY-MM-DD (nightly_regression: the night)")
    a = ap.parse_args(argv)
    try:
        conf = json.loads(a.conf)
        if not isinstance(conf, dict):
            raise ValueError("not an object")
    except ValueError as e:
        print(f"--conf must be a JSON object: {e}", file=sys.stderr)
        return 2
    when = (dt.datetime.strptime(a.date, "%Y-%m-%d").replace(tzinfo=dt.timezone.utc) if a.date else None)
    dr = run(a.dag_id, conf, when)
    state = str(getattr(dr, "state", "unknown"))
    print(f"\n{a.dag_id} run {dr.run_id}: {state}")
    store = open_store()
    rid = rating_id_for(a.dag_id, dr.run_id)
    if a.dag_id == "rate_peak":
        res = store.get_json(store.rating_key(rid, "result.json"), None)
        if res is not None:
            print(result_block(res))
        print(f"  results       {store.url(store.rating_key(rid, ''))}")
        print(f"  report        {store.url(store.rating_key(rid, 'report.html'))}")
        print(f"  local report  {rating_dir(rid) / 'report.html'}")
    elif a.dag_id == "map_surface":
        print(f"  results       {store.url(store.surface_key(rid, ''))}")
    else:
        night = (dr.logical_date or dr.run_after).strftime("%Y-%m-%d")
        print(f"  results       {store.url(store.nightly_key(night, ''))}")
    return 0 if state.endswith("success") else 1


if __name__ == "__main__":
    sys.exit(main())
