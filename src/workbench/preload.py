"""What every task process imports, imported once in the Airflow process that forks task processes.

A LocalExecutor worker (a fork of the scheduler) or a Celery worker runs each task in a fork of
itself (the task SDK's supervisor; os.fork on Linux), and the dag-processor parses each DAG file in
a fork of itself. The fork parses its DAG file and imports what the task needs: the workbench,
pandas, scipy, great_expectations — 6.84 CPU s per task process here, more than a smoke trial's
runlength (`bench/task_preload.py`: 0.42 s preloaded). Imported here once, before the forks, every
task process inherits them. `airflow_local_settings` (imported by Airflow in each of its processes)
calls `preload()` in the processes that fork tasks; a module that fails to import is logged and
left to the task, which then reports it the usual way.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence

TASK_MODULES = (
    "airflow.sdk",
    "airflow.providers.standard.operators.python",
    "airflow.dag_processing.dagbag",
    "workbench.pipeline",
    "workbench.pipeline.nightly",
    "workbench.pipeline.sweep",
    "analysis.compare",
    "analysis.rating_report",
    "analysis.nightly_report",
    "analysis.surface_report",
    "workbench.output.notify",
    "great_expectations",
)
# `airflow <command>`s that fork
FORKING_COMMANDS = (("scheduler",), ("celery", "worker"), ("dag-processor",))

log = logging.getLogger(__name__)


def forks_tasks(argv: Sequence[str]) -> bool:
    """Whether this process (its argv) is one that forks task processes: `airflow scheduler` (its
    LocalExecutor workers are forks of it), `airflow celery worker`, or `airflow dag-processor`
    (each parse of a DAG file is a fork of it too)."""
    args = [a for a in argv[1:] if not a.startswith("-")]
    return any(tuple(args[: len(c)]) == c for c in FORKING_COMMANDS)


def preload(modules: Sequence[str] = TASK_MODULES) -> list[str]:
    """Import `modules`; the ones that failed (logged, not raised: the scheduler must start
    anyway)."""
    failed = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 (a task that needs it reports it)
            log.warning("workbench preload: %s not imported (%s)", name, e)
            failed.append(name)
    return failed
