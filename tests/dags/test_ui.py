"""The Airflow UI in a real browser: headless Chromium (Debian's package) logs in as admin (the
simple auth manager's login page, the password from the passwords file), fills rate_peak's Params
form, presses Trigger, and the run appears with those values (checked through the REST API).

The same Airflow then checks its access rules (as ui.sh and celery-stack.sh set them up): the
read-only `viewer` lists the DAGs but is refused (403) a trigger and a pause, a request without a
token is refused (401), and neither password is in any file of AIRFLOW_HOME but the passwords file.

The run is real (scheduler, LocalExecutor, MinIO) but never touches a workbench slot: right after
the trigger the test marks the run's `lease_slot` task failed through the API (it waits for
validate, which takes seconds).  validate must still accept the form's values, provision and the
trials become upstream_failed, and the DAG's `teardown` (trigger_rule all_done) must still run.
If anything goes wrong half-way, the finally marks the run failed and calls `pipeline.teardown`
for both slots (a no-op unless this rating holds a slot's lease). The finished run's page has the
"Why λ*" tab (plugins/workbench_ui.py), which says the run has no rating.

    .venv/bin/python -m pytest -q tests/dags/test_ui.py      (root: slots need netns/cgroups)
"""
from __future__ import annotations

import io
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from airflow_live import REPO, AirflowError, LiveAirflow, airflow_auth
from browser import chromium

from workbench.params.plan import rating_id_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="a workbench slot needs root (netns, cgroups, loop devices)"),
]

DAG_ID = "rate_peak"
SCREENSHOT = REPO / "docs" / "img" / "rate_peak_trigger_form.png"
FORM = {"profile": "smoke", "memory_mb": 192}   # what the test types into the form (slot stays auto)
# a custom workload in the form's multi-line text field: validate checks it with fstress
WORKLOAD_TEXT = "base = web_server\nname = my_web\nread_size = 4K\n"
WAIT_S = 30
TRIGGER_WAIT_S = 120        # the trigger's POST and the run page (a loaded CI machine took > 30 s)


@pytest.fixture(scope="module")
def airflow(minio_server, tmp_path_factory):
    cfg = minio_server
    env = {"WB_S3_ENDPOINT": cfg.endpoint, "WB_S3_ACCESS_KEY": cfg.access_key,
           "WB_S3_SECRET_KEY": cfg.secret_key, "WB_S3_BUCKET": f"ui-{os.getpid()}",
           "WB_S3_SECURE": "false"}
    with LiveAirflow(tmp_path_factory.mktemp("airflow"), REPO / "dags", env) as af:
        af.wait_ready(DAG_ID)
        yield af


@pytest.fixture
def browser():
    with chromium() as drv:
        yield drv


class TriggerForm:
    """rate_peak's trigger dialog. Airflow 3.3 renders each Param as a field whose value lives in
    an input named `element_<param>`: enums are react-select comboboxes (value in a hidden input),
    numbers are number inputs."""

    def __init__(self, driver):
        from selenium.webdriver.support.ui import WebDriverWait
        self.d = driver
        self.wait = WebDriverWait(driver, WAIT_S)

    def open(self, base_url: str) -> None:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as EC
        self.d.get(f"{base_url}/dags/{DAG_ID}")
        self.wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "[data-testid=trigger-dag-button]"))).click()
        self.wait.until(EC.presence_of_element_located((By.NAME, "element_workload")))

    def value(self, name: str) -> str:
        from selenium.webdriver.common.by import By
        return self.d.find_element(By.NAME, f"element_{name}").get_attribute("value")

    def _center(self, el) -> None:
        self.d.execute_script("arguments[0].scrollIntoView({block: 'center'})", el)

    def set_enum(self, name: str, value: str) -> None:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
        hidden = self.d.find_element(By.NAME, f"element_{name}")
        box = hidden.find_element(
            By.XPATH, "./ancestor::*[.//input[@role='combobox']][1]//input[@role='combobox']")
        self._center(box)
        box.click()
        box.send_keys(value)
        box.send_keys(Keys.ENTER)
        self.wait.until(lambda _: self.value(name) == value,
                        f"form field {name} did not take {value!r}")

    def set_number(self, name: str, value: int | float) -> None:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
        inp = self.d.find_element(By.NAME, f"element_{name}")
        self._center(inp)
        inp.click()
        inp.send_keys(Keys.CONTROL, "a")
        inp.send_keys(str(value))
        inp.send_keys(Keys.TAB)               # the number input commits on blur
        self.wait.until(lambda _: self.value(name) == str(value),
                        f"form field {name} did not take {value!r}")

    def set_text(self, name: str, text: str) -> None:
        """A multi-line text field (a textarea): typed line by line."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
        area = self.d.find_element(By.NAME, f"element_{name}")
        self._center(area)
        area.click()
        area.send_keys(text)
        area.send_keys(Keys.TAB)
        self.wait.until(lambda _: self.value(name) == text, f"form field {name} did not take {text!r}")

    def screenshot(self, path: Path) -> None:
        """The whole dialog (the window is made tall enough for all the Params first)."""
        from selenium.webdriver.common.by import By
        dialog = self.d.find_element(By.CSS_SELECTOR, "[data-scope=dialog][data-part=content]")
        self.d.execute_script("document.activeElement && document.activeElement.blur()")
        size = self.d.get_window_size()
        self.d.set_window_size(size["width"], dialog.size["height"] + 200)
        time.sleep(0.5)
        self.d.execute_script("arguments[0].scrollIntoView({block: 'start'})", dialog)
        png = dialog.screenshot_as_png
        self.d.set_window_size(size["width"], size["height"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_shrink_png(png))

    def submit(self) -> None:
        """Press Trigger (the UI posts the run, then navigates to its page)."""
        from selenium.webdriver.common.by import By
        btn = self.d.find_element(By.CSS_SELECTOR, "[data-testid=trigger-dag-submit]")
        self._center(btn)
        btn.click()

    def run_page(self, timeout_s: float) -> str:
        """The run_id of the run page the UI opened after Trigger."""
        from selenium.webdriver.support.ui import WebDriverWait
        WebDriverWait(self.d, timeout_s).until(lambda d: f"/dags/{DAG_ID}/runs/" in d.current_url,
                                               "the UI did not open the new run's page after Trigger")
        return urllib.parse.unquote(self.d.current_url.split("/runs/", 1)[1].split("/")[0].split("?")[0])


def _shrink_png(png: bytes) -> bytes:
    """A palette PNG of the screenshot (UI colours are few): ~4× smaller, fine for docs."""
    from PIL import Image
    img = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    img.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _wait_task(af: LiveAirflow, run_id: str, task_id: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = af.task_states(DAG_ID, run_id).get(task_id)
        if state in ("success", "failed", "upstream_failed", "skipped"):
            return state
        time.sleep(1)
    raise AssertionError(f"{task_id} of {run_id} not finished after {timeout_s:.0f} s: "
                         f"{af.task_states(DAG_ID, run_id)}")


def _why_tab(driver, timeout_s: float) -> str:
    """Click the run page's "Why λ*" tab (the plugin's external view) and return its frame's text."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
    wait = WebDriverWait(driver, timeout_s)
    tab = wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "a[href$='/plugin/why-peak']")),
                     "no 'Why λ*' tab on the run page")
    assert "Why λ*" in tab.text, tab.text
    tab.click()
    wait.until(EC.frame_to_be_available_and_switch_to_it((By.CSS_SELECTOR, "iframe[title='Why λ*']")),
               "the 'Why λ*' tab shows no frame")
    try:
        return wait.until(lambda d: d.find_element(By.TAG_NAME, "body").text.strip(), "the frame stayed empty")
    finally:
        driver.switch_to.default_content()


def _new_runs(af: LiveAirflow, before: set[str]) -> set[str]:
    return {r["dag_run_id"] for r in af.dag_runs(DAG_ID)} - before


def _wait_new_run(af: LiveAirflow, before: set[str], timeout_s: float) -> str:
    """The one run that appeared since `before` (polled through the API)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        new = _new_runs(af, before)
        if new:
            assert len(new) == 1, f"expected exactly the UI's run, new runs: {new}"
            return new.pop()
        time.sleep(0.5)
    raise AssertionError(f"no new {DAG_ID} run {timeout_s:.0f} s after Trigger")


def _cleanup(af: LiveAirflow, run_id: str | None, conf: dict | None) -> None:
    """Whatever happened: no running rating, slot torn down, lease released."""
    from workbench import pipeline
    from workbench.config.vocabulary import SLOTS
    from workbench.params.plan import plan_from_params, rating_id_for
    if run_id is not None:
        try:
            if af.run_state(DAG_ID, run_id) not in ("success", "failed"):
                af.set_run_state(DAG_ID, run_id, "failed")
            for _ in range(60):                 # let killed tasks exit before tearing down
                if not any(s in ("running", "queued") for s in af.task_states(DAG_ID, run_id).values()):
                    break
                time.sleep(1)
            time.sleep(10)                      # a killed task's ansible-runner cleans up after it
        finally:
            # pipeline.teardown is a no-op unless this rating holds the slot's lease.
            plan = plan_from_params(conf or {}, rating_id_for(DAG_ID, run_id))
            for slot in SLOTS:
                for attempt in (1, 2):
                    try:
                        print(f"cleanup {slot}:", pipeline.teardown(plan.with_slot(slot)))
                        break
                    except Exception as e:      # e.g. ansible-runner racing a killed task's runner
                        print(f"cleanup {slot} attempt {attempt} failed: {e!r}")
                        if attempt == 2:
                            raise
                        time.sleep(10)


@pytest.mark.timeout(600)
def test_trigger_rate_peak_from_the_params_form(airflow, browser, tmp_path):
    af = airflow
    before = {r["dag_run_id"] for r in af.dag_runs(DAG_ID)}
    form = TriggerForm(browser)
    t0 = time.monotonic()
    airflow_auth.ui_login(browser, af.base_url, af.passwords_file, "admin", WAIT_S)
    form.open(af.base_url)
    assert form.value("workload") == "web_server" and form.value("profile") == "quick"   # Param defaults
    form.set_enum("profile", FORM["profile"])
    form.set_number("memory_mb", FORM["memory_mb"])
    form.set_text("workload_text", WORKLOAD_TEXT)
    form.screenshot(SCREENSHOT)
    form.submit()
    run_id = conf = None
    try:
        # First thing after the trigger (validate needs ≥ 5 s, so lease_slot has not started; on a
        # loaded machine it may be queued already: a queued task marked failed never starts, as
        # Airflow's execution API refuses to run a task instance that is no longer queued): keep
        # the SUT out of it — see the module docstring.  The API learns of the run before the UI
        # has navigated (on a loaded machine that took over 30 s), so the run is found there.
        run_id = _wait_new_run(af, before, TRIGGER_WAIT_S)
        ti_path = f"/dags/{DAG_ID}/dagRuns/{urllib.parse.quote(run_id, safe='')}/taskInstances"
        early = af.task_states(DAG_ID, run_id)["lease_slot"]
        assert early in (None, "scheduled", "queued"), f"lease_slot started too early: {early}"
        af.api("PATCH", f"{ti_path}/lease_slot", {"new_state": "failed"})
        assert form.run_page(TRIGGER_WAIT_S) == run_id
        browser.save_screenshot(str(tmp_path / "run_page.png"))
        print(f"UI: form filled and triggered in {time.monotonic() - t0:.1f} s; run page "
              f"screenshot {tmp_path / 'run_page.png'}")

        runs = {r["dag_run_id"]: r for r in af.dag_runs(DAG_ID)}
        assert set(runs) - before == {run_id}, f"new runs besides the UI's {run_id}: {set(runs) - before}"
        conf = runs[run_id]["conf"]
        print(f"run {run_id} conf from the form: {conf}")
        assert {k: conf.get(k) for k in FORM} == FORM, f"run conf {conf} lacks the form's values"
        assert conf["workload"] == "web_server"          # untouched fields keep their defaults
        assert conf["workload_text"] == WORKLOAD_TEXT
        assert runs[run_id]["run_type"] == "manual"

        # The real DAG accepts what the form sent: validate turns the conf into a plan (the custom
        # workload rendered and passed through `fstress check`).
        assert _wait_task(af, run_id, "validate", 180) == "success", af.task_states(DAG_ID, run_id)
        assert af.wait_run(DAG_ID, run_id, timeout_s=300) == "failed"
        states = af.task_states(DAG_ID, run_id)
        assert states["provision"] == "upstream_failed" and states["trial_0.run"] == "upstream_failed", states
        assert states["teardown"] == "success", states
        browser.refresh()
        time.sleep(2)
        browser.save_screenshot(str(tmp_path / "run_page_finished.png"))
        # The run page's "Why λ*" tab (plugins/workbench_ui.py): this run never reached a trial.
        why = _why_tab(browser, TRIGGER_WAIT_S)
        assert "No rating yet" in why and rating_id_for(DAG_ID, run_id) in why, why
    finally:
        _cleanup(af, run_id or next(iter(_new_runs(af, before)), None), conf)
    assert SCREENSHOT.stat().st_size < 400_000


def _refused(af: LiveAirflow, method: str, path: str, body=None, user: str | None = "viewer") -> int:
    try:
        af.api(method, path, body, user=user)
    except AirflowError as e:
        return e.status
    raise AssertionError(f"{method} {path} as {user} was accepted")


@pytest.mark.timeout(120)
def test_only_the_admin_may_act_the_viewer_reads_and_no_password_is_logged(airflow):
    af = airflow
    runs_before = {r["dag_run_id"] for r in af.dag_runs(DAG_ID)}   # ids: a run's state may move on
    paused = af.api("GET", f"/dags/{DAG_ID}")["is_paused"]
    assert DAG_ID in {d["dag_id"] for d in af.api("GET", "/dags?limit=100", user="viewer")["dags"]}
    assert _refused(af, "POST", f"/dags/{DAG_ID}/dagRuns", {"logical_date": None, "conf": {}}) == 403
    assert _refused(af, "PATCH", f"/dags/{DAG_ID}", {"is_paused": not paused}) == 403
    assert _refused(af, "GET", "/dags", user=None) == 401
    assert _refused(af, "POST", f"/dags/{DAG_ID}/dagRuns", {"logical_date": None, "conf": {}}, user=None) == 401
    assert not _new_runs(af, runs_before) and af.api("GET", f"/dags/{DAG_ID}")["is_paused"] == paused
    # a wrong password gets no token
    with pytest.raises(urllib.error.HTTPError) as refused:
        req = urllib.request.Request(f"{af.base_url}/auth/token", method="POST",
                                     data=b'{"username": "admin", "password": "admin"}',
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=10)
    assert refused.value.code == 401

    assert oct(af.passwords_file.stat().st_mode & 0o777) == "0o600"
    secrets = [airflow_auth.password(af.passwords_file, u).encode() for u in ("admin", "viewer")]
    leaked = [str(f) for f in af.home.rglob("*") if f.is_file() and f != af.passwords_file
              and any(pw in f.read_bytes() for pw in secrets)]
    assert not leaked, f"a password is in {leaked}"
