"""workbench.preload: the Airflow processes that fork task processes import what tasks need, once."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.preload import forks_tasks, preload

REPO = Path(__file__).resolve().parent.parent
PROBE = ("import sys; sys.argv = {argv!r}; import airflow, json; "
         "print(json.dumps([m in sys.modules for m in ('great_expectations', 'workbench.pipeline')]))")


@pytest.mark.parametrize("argv, forks", [
    (["/venv/bin/airflow", "scheduler"], True),
    (["airflow", "celery", "worker", "-q", "default", "--concurrency", "2"], True),
    (["airflow", "dag-processor"], True),
    (["airflow", "api-server"], False),
    (["airflow", "celery", "flower"], False),
    (["airflow", "db", "migrate"], False),
    (["airflow"], False),
    (["/venv/bin/pytest", "-q", "tests"], False),
])
def test_only_the_processes_that_fork_tasks_preload(argv, forks):
    assert forks_tasks(argv) is forks


def test_a_module_that_fails_to_import_is_logged_and_the_rest_imported(caplog):
    with caplog.at_level(logging.WARNING, logger="workbench.preload"):
        failed = preload(["json", "workbench_no_such_module", "csv"])
    assert failed == ["workbench_no_such_module"]
    assert "workbench_no_such_module not imported" in caplog.text
    assert "csv" in sys.modules


def _probe(tmp_path, argv, **env) -> list[bool]:
    """Start a Python that looks like `argv` to Airflow, import airflow (its settings import
    airflow_local_settings from src/) and report which of the task modules it holds."""
    full = {**{k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "WB_PRELOAD"))},
            "AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]), **env}
    p = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], env=full, capture_output=True,
                       text=True, timeout=180, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_airflow_s_scheduler_preloads_and_its_api_server_does_not(tmp_path):
    assert _probe(tmp_path, ["airflow", "scheduler"]) == [True, True]
    assert _probe(tmp_path, ["airflow", "api-server"]) == [False, False]
    assert _probe(tmp_path, ["airflow", "scheduler"], WB_PRELOAD="0") == [False, False]
