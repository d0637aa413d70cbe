"""Headless Chromium (Debian's chromium and chromedriver) for the tests that look at a page as a person
would: the Airflow UI (tests/dags/test_ui.py) and the rating report (tests/analysis/test_report_browser.py)."""
from __future__ import annotations

import contextlib
import tempfile
from typing import Iterator

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@contextlib.contextmanager
def chromium(page_load_timeout_s: float = 60) -> Iterator["object"]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    # Without these Chromium stalls on this offline box (network/update/sync probes).
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1280,1000",
                f"--user-data-dir={tempfile.mkdtemp(prefix='wb-chromium-')}"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    drv.set_page_load_timeout(page_load_timeout_s)
    try:
        yield drv
    finally:
        drv.quit()
