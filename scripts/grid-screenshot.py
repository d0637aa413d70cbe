#!/usr/bin/env python3
"""Screenshot of a DAG's grid in the Airflow UI (headless Chromium), for docs/img/.

    scripts/grid-screenshot.py http://127.0.0.1:8093 rate_peak docs/img/rate_peak_grid.png

Start the UI first (`WB_UI_PORT=8093 make ui`, or scripts/ui.sh in the clone whose .airflow/ holds
the run to show: `make run` records its dag.test() run there). Logs in as the read-only `viewer`
with the password in that UI's passwords file: $AIRFLOW_HOME/passwords.json, default
.airflow/passwords.json of this checkout (scripts/airflow_auth.py). Needs chromium and
chromium-driver (`scripts/install-system.sh test`) and selenium (the venv's test extras).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

sys.path.insert(0, str(Path(__file__).resolve().parent))
import airflow_auth  # noqa: E402  (scripts/airflow_auth.py)

REPO = Path(__file__).resolve().parent.parent


def browser(width: int, height: int) -> webdriver.Chrome:
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    # Without these Chromium stalls on an offline box (network/update/sync probes).
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", f"--window-size={width},{height}",
                f"--user-data-dir={tempfile.mkdtemp(prefix='wb-chromium-')}"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    drv.set_page_load_timeout(60)
    return drv


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    base, dag_id, out = argv
    drv = browser(1500, 1700)
    passwords = Path(os.environ.get("AIRFLOW_HOME", REPO / ".airflow")) / "passwords.json"
    try:
        airflow_auth.ui_login(drv, base, str(passwords), "viewer")
        drv.get(f"{base.rstrip('/')}/dags/{dag_id}")
        time.sleep(20)                 # the React UI fetches the grid after the page loads
        drv.save_screenshot(out)
    finally:
        drv.quit()
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
