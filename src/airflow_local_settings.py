"""Airflow imports this module at start in each of its processes (airflow.settings
.import_local_settings; src/ is on the PYTHONPATH of every Airflow here, and the package installs
it).

The processes that fork task processes — `airflow scheduler` (LocalExecutor), `airflow celery
worker` and `airflow dag-processor` (a fork per parse) — import what the tasks import once, so that
no task process pays for it again (workbench.preload; `WB_PRELOAD=0` turns it off, to compare).
"""

import os
import sys

from workbench.preload import forks_tasks, preload

if os.environ.get("WB_PRELOAD", "1") != "0" and forks_tasks(sys.argv):
    preload()
