"""Run one of the workbench DAGs in this process with Airflow's ``dag.test()`` and print where its
results went — the main job's entry point (no scheduler or web server needed):

    python -m workbench.dagrun rate_peak [--conf '{"workload": "web_server"}'] [--date 2026-11-22]

Needs AIRFLOW_HOME with a migrated database (scripts/main-job.sh does `airflow db migrate`) and the
results store's WB_S3_* environment (scripts/minio.sh env).

The terminal shows a rate_peak run as a person wants it: one line per trial as the store records it
(load, runlength, mean, p95, verdict and reason, decision; cost against the budget and wall time),
then the result block. Airflow's own log records and the playbooks' output go to a log file, named
at the start (`--verbose` shows them instead). Exit 0 when the run succeeded and, for rate_peak, the
rating converged; 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.config.paths import DAGS, WORKDIR, private_dir, rating_dir
from workbench.measure import agent as agents
from workbench.output.console import Progress, result_block
from workbench.params.plan import RatingPlan, rating_id_for
from workbench.store.s3 import open_store


def worker_hostname() -> str:
    """The hostname a task instance records (Airflow's `core.hostname_callable`): the Celery
    worker's own name (`worker1@host`, set by scripts/celery-stack.sh as WB_WORKER_NAME) so that two
    workers on one host are told apart; else the host's FQDN, Airflow's default."""
    return os.environ.get("WB_WORKER_NAME") or socket.getfqdn()


def load_dag(dag_id: str, dags_folder: Path = DAGS):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(dags_folder))
    if bag.import_errors:
        raise SystemExit(
            "DAG import errors:\n" + "\n".join(f"{k}: {v}" for k, v in bag.import_errors.items())
        )
    if dag_id not in bag.dags:
        raise SystemExit(f"unknown DAG {dag_id!r}; known: {', '.join(sorted(bag.dags))}")
    return bag.dags[dag_id]


def run_id_at(when: dt.datetime) -> str:
    """The run id dag.test() gives a manual run with run_after = logical_date = `when`."""
    return f"manual__{when.isoformat()}"


def run(dag_id: str, conf: dict[str, Any] | None = None, logical_date: dt.datetime | None = None):
    """dag.test() with the given conf; returns the finished DagRun. Without a logical date the run
    is at now, given explicitly so that its id is `run_id_at(now)`, known before it starts.
    dag.test() runs every task in this process, so rate_peak's trial tasks find the slot's resident
    fstress agents the deploy task started (measure/agent.py; WB_FSTRESS_AGENT=0 turns them off)."""
    dag = load_dag(dag_id)
    when = logical_date or dt.datetime.now(dt.UTC)
    with agents.enable():
        return dag.test(run_conf=conf or {}, logical_date=when, run_after=when)


@contextlib.contextmanager
def quiet_fds(log_path: Path):
    """stdout and stderr of this process and its children (Airflow's logging, playbooks) into
    `log_path` for the block; yields a stream on the terminal's stdout."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(log_path, "ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    terminal = os.fdopen(os.dup(saved[0]), "w", buffering=1)
    try:
        yield terminal
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        terminal.close()


class TrialWatcher(threading.Thread):
    """Prints each trial of a rating as the store records it (every 2 s; stop() prints the rest)."""

    def __init__(self, store: Any, rating_id: str, stream: Any) -> None:
        super().__init__(daemon=True)
        self.store, self.rating_id, self.stream = store, rating_id, stream
        self.done = threading.Event()
        self.shown = 0
        self.progress: Progress | None = None

    def poll(self) -> None:
        if self.progress is None:
            spec = self.store.get_json(self.store.spec_key(self.rating_id), None)
            if spec is None:
                return
            rs = RatingPlan.from_dict(spec).rating_spec()
            self.progress = Progress(rs.budget_s, rs.trial_overhead_s, self.stream, compact=True)
        keys = sorted(self.store.list_keys(self.store.trials_prefix(self.rating_id)))
        for key in keys[self.shown :]:
            self.progress.trial(self.store.get_json(key))
            self.shown += 1

    def run(self) -> None:
        while not self.done.wait(2.0):
            with contextlib.suppress(Exception):  # the store may be busy; the next poll catches up
                self.poll()

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=30)
        with contextlib.suppress(Exception):
            self.poll()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m workbench.dagrun", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "dag_id", choices=["rate_peak", "map_surface", "nightly_regression", "compare_ratings"]
    )
    ap.add_argument("--conf", default="{}", help="run conf (JSON object): the DAG's Params")
    ap.add_argument("--date", help="logical date YYYY-MM-DD (nightly_regression: the night)")
    ap.add_argument(
        "--verbose",
        action="store_true",
        help="Airflow's log records on the terminal, not in a file",
    )
    a = ap.parse_args(argv)
    try:
        conf = json.loads(a.conf)
        if not isinstance(conf, dict):
            raise ValueError("not an object")
    except ValueError as e:
        print(f"--conf must be a JSON object: {e}", file=sys.stderr)
        return 2
    when = (
        dt.datetime.strptime(a.date, "%Y-%m-%d").replace(tzinfo=dt.UTC)
        if a.date
        else dt.datetime.now(dt.UTC)
    )
    rid = rating_id_for(a.dag_id, run_id_at(when))
    dr = _run_quietly(a.dag_id, conf, when, rid) if not a.verbose else run(a.dag_id, conf, when)
    state = str(getattr(dr, "state", "unknown"))
    print(f"\n{a.dag_id} run {dr.run_id}: {state}")
    store = open_store()
    if a.dag_id == "rate_peak":
        res = store.get_json(store.result_key(rid), None)
        if res is not None:
            print(result_block(res))
        print(f"  results       {store.url(store.rating_prefix(rid))}")
        print(f"  report        {store.url(store.rating_report_key(rid))}")
        print(f"  local report  {rating_dir(rid) / 'report.html'}")
        return 0 if state.endswith("success") and res is not None and res.get("converged") else 1
    if a.dag_id == "map_surface":
        print(f"  results       {store.url(store.surface_prefix(rid))}")
    elif a.dag_id == "nightly_regression":
        print(f"  results       {store.url(store.nightly_prefix(when.strftime('%Y-%m-%d')))}")
    return 0 if state.endswith("success") else 1


def _run_quietly(dag_id: str, conf: dict[str, Any], when: dt.datetime, rating_id: str):
    """run() with its output in a log file; rate_peak's trials shown as they are recorded."""
    log_path = private_dir(WORKDIR / "logs") / f"{rating_id}.log"
    print(f"{dag_id}: Airflow's log in {log_path}", flush=True)
    t0 = time.monotonic()
    with quiet_fds(log_path) as terminal:
        watcher = TrialWatcher(open_store(), rating_id, terminal) if dag_id == "rate_peak" else None
        if watcher:
            watcher.start()
        try:
            return run(dag_id, conf, when)
        finally:
            if watcher:
                watcher.stop()
            terminal.write(f"{dag_id}: finished after {time.monotonic() - t0:.0f} s\n")


if __name__ == "__main__":
    sys.exit(main())
