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


def airflow_run_alive(holder: dict[str, Any]) -> bool | None:
    """Is the holder's Airflow run still queued or running? None when it cannot be told (no Airflow
    holder, or not asked from an Airflow task)."""
    if not holder.get("dag_id") or TASK_RUNNER not in sys.modules:
        return None
    try:
        from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

        state = RuntimeTaskInstance.get_dagrun_state(holder["dag_id"], holder["run_id"])
    except Exception:
        return None
    return str(state).rsplit(".", 1)[-1].lower() in ("queued", "running")


def process_alive(holder: dict[str, Any]) -> bool | None:
    if holder.get("host") != socket.gethostname() or not holder.get("pid"):
        return None
    return _proc_start(int(holder["pid"])) == holder.get("start")


def known_alive(holder: dict[str, Any], alive: Alive | None) -> bool | None:
    """Is the holder alive: its Airflow run (the `alive` callback) or its process (same host); None
    when neither can tell (another host's process, an Airflow run asked from outside Airflow)."""
    known = alive(holder) if alive is not None else None
    # an Airflow holder's process ends after each task
    if known is None and not holder.get("dag_id"):
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
