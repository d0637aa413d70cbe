"""Who holds a lease: a process (host, pid, start time) or an Airflow run, and whether it still
lives."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Alive = Callable[[dict[str, Any]], "bool | None"]  # holder → alive / dead / None (cannot tell)


def _proc_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), None if
    gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def this_process(**more: Any) -> dict[str, Any]:
    """A holder record for this process (host, pid, its start time) plus e.g. an Airflow run."""
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "start": _proc_start(os.getpid()),
        **more,
    }


TASK_RUNNER = "airflow.sdk.execution_time.task_runner"  # loaded in an Airflow task only


def current_holder() -> dict[str, Any]:
    """This process, and the Airflow run it works for when it is an Airflow task."""
    if TASK_RUNNER not in sys.modules:  # not a task: do not pay for importing Airflow
        return this_process()
    try:
        from airflow.sdk import get_current_context

        run = get_current_context()["dag_run"]
        return this_process(dag_id=run.dag_id, run_id=run.run_id)
    except Exception:  # not in a task (the CLI), or Airflow not installed
        return this_process()


def _run_state_in_task(holder: dict[str, Any]) -> str | None:
    """The run's state as an Airflow task asks it (the task runner's API); None if it cannot."""
    try:
        from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

        state = RuntimeTaskInstance.get_dagrun_state(holder["dag_id"], holder["run_id"])
    except Exception:
        return None
    return str(state).rsplit(".", 1)[-1].lower()


def _run_state_in_db(holder: dict[str, Any]) -> str | None:
    """The run's state in the Airflow metadata database this process is configured for (the
    deployment's environment names it: AIRFLOW__DATABASE__SQL_ALCHEMY_CONN or AIRFLOW_HOME, as in
    celery-stack.sh's reaper and its CLI env); None when none is, the run is not there (another
    deployment's), or the database cannot be read."""
    if not any(os.environ.get(k) for k in ("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "AIRFLOW_HOME")):
        return None
    try:
        from airflow.models.dagrun import DagRun
        from airflow.utils.session import create_session

        with create_session() as session:
            run = (
                session.query(DagRun)
                .filter(DagRun.dag_id == holder["dag_id"], DagRun.run_id == holder["run_id"])
                .one_or_none()
            )
            return None if run is None else str(run.state).rsplit(".", 1)[-1].lower()
    except Exception:
        return None


def airflow_run_alive(holder: dict[str, Any]) -> bool | None:
    """Is the holder's Airflow run still queued or running? Asked through the task runner inside a
    task, else through the deployment's metadata database (_run_state_in_db); None when it cannot
    be told (no Airflow holder, nothing to ask): known_alive then takes the run as alive."""
    if not holder.get("dag_id"):
        return None
    in_task = TASK_RUNNER in sys.modules
    state = _run_state_in_task(holder) if in_task else _run_state_in_db(holder)
    return None if state is None else state in ("queued", "running")


def process_alive(holder: dict[str, Any]) -> bool | None:
    if holder.get("host") != socket.gethostname() or not holder.get("pid"):
        return None
    return _proc_start(int(holder["pid"])) == holder.get("start")


def known_alive(holder: dict[str, Any], alive: Alive | None) -> bool | None:
    """Is the holder alive: its Airflow run (the `alive` callback) or its process (same host); None
    when neither can tell (another host's process). An Airflow run whose state cannot be asked is
    alive: its tasks beat only while they run, and a run whose next task waits for a worker longer
    than LEASE_STALE_S must be neither reaped nor taken over (issue 53)."""
    known = alive(holder) if alive is not None else None
    if known is None and holder.get("dag_id"):
        return True
    if known is None:  # (an Airflow holder's process ends after each task: never asked)
        known = process_alive(holder)
    return known


def same_holder(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """One holder: the same Airflow run (its tasks are processes in turn), or the same process."""
    if a.get("dag_id") or b.get("dag_id"):
        return bool(a.get("dag_id")) and (a.get("dag_id"), a.get("run_id")) == (
            b.get("dag_id"),
            b.get("run_id"),
        )
    return all(a.get(k) == b.get(k) for k in ("host", "pid", "start")) and bool(a.get("pid"))


def who(holder: dict[str, Any]) -> str:
    if holder.get("dag_id"):
        return f"Airflow run {holder.get('dag_id')}/{holder.get('run_id')}"
    return f"process {holder.get('pid')} on {holder.get('host')}"
