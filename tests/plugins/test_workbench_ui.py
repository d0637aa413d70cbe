"""The "Why λ*" tab (plugins/workbench_ui.py): its page over a local store through FastAPI's
TestClient, mounted under /workbench as Airflow mounts it; `airflow plugins` listing the plugin with
its tab and app; and Airflow's own API app (create_app, in a subprocess on a migrated SQLite home)
serving the page to the admin and the viewer by token and by the UI's cookie, refusing a caller
without one, over a real MinIO bucket.

The TestClient tests replace the app's one dependency, Airflow's access check (it needs an initialised
auth manager and metadata database), by an open one; the real check is tested in
test_airflows_api_app_serves_the_page_to_readers_only (and on a live api-server after a finished
rating: tests/dags/test_restart.py; the tab in a browser: tests/dags/test_ui.py).
"""
from __future__ import annotations

import dataclasses
import html
import importlib.util
import json
import os
import re
import secrets
import subprocess
import sys
import time
import urllib.parse
import uuid
from pathlib import Path

import pytest

from workbench.findings.bottleneck import verdict
from workbench.findings.latency_split import rating_split, split_line
from workbench.params.plan import rating_id_for
from workbench.pipeline import sweep
from workbench.store.local import LocalStore

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugins" / "workbench_ui.py"
DATA = REPO / "tests" / "data"
RUN = "manual__2026-11-28T10:00:00+00:00"
RID = rating_id_for("rate_peak", RUN)
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16     # the page serves bytes; it never decodes a plot
VENV_BIN = Path(sys.executable).parent


def _plugin():
    """The plugin module, loaded from its file as Airflow's plugins manager loads it."""
    spec = importlib.util.spec_from_file_location("workbench_ui", PLUGIN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _split_raw(read_ms: float) -> dict:
    """One trial's raw record with every part of the split (fstress, Ganesha's statistics and receive
    queue, NULL RTT)."""
    return {"mean_ms": read_ms, "send_lag_ms": {"mean": 0.1}, "null_rtt_ms": {"n": 50, "mean": 0.2},
            "ops": {"read": {"count": 300, "mean_ms": read_ms}},
            "telemetry": {"hosts": {"sut1": {"server_ops": {"v3": {"READ": {"n": 300, "mean_ms": 1.5}}},
                                             "rpc_queue": {"wait_ms": 0.05, "mean_bytes": 2.0, "rx_bytes": 4e4}}}}}


def _result(**more) -> dict:
    """tests/data/report_result.json with a real bottleneck verdict (a recorded read-IOPS limit) and a
    real latency split."""
    res = json.loads((DATA / "report_result.json").read_text())
    case = json.loads((DATA / "bottleneck" / "read_iops.json").read_text())
    res["bottleneck"] = verdict(case["result"], case["records"])
    records = [{"valid": True, "load_ops_s": load, "raw": _split_raw(ms)} for load, ms in ((400, 2.0), (800, 2.5))]
    res["latency_split"] = rating_split(res, records)
    return {**res, **more}


def _rating(store, rid: str = RID, result: dict | None = None, plots=("load_curve.png", "utilization.png",
                                                                      "latency_vs_load.png")) -> dict:
    res = result or _result()
    store.put_json(store.spec_key(rid), {"spec": {}})
    store.put_json(store.result_key(rid), res)
    for name in plots:
        store.put_bytes(store.rating_plot_key(rid, name), PNG, "image/png")
    store.put_bytes(store.rating_plot_key(rid, "notes.txt"), b"not a plot", "text/plain")
    store.put_bytes(store.rating_report_key(rid), b"<html><body>the report</body></html>", "text/html")
    return res


@pytest.fixture
def store(tmp_path):
    s = LocalStore(tmp_path / "store")
    s.ensure_bucket()
    return s


@pytest.fixture
def client(store):
    """The plugin's app on `store`, mounted at /workbench (Airflow's access check opened: see above)."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient
    app = _plugin().build_app(lambda: store)
    app.dependency_overrides[app.state.read_runs] = lambda: None
    root = FastAPI()
    root.mount("/workbench", app)
    return TestClient(root)


def _page(client, dag_id: str = "rate_peak", run_id: str = RUN, **query):
    r = client.get(f"/workbench/runs/{dag_id}/{urllib.parse.quote(run_id, safe='')}", params=query)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/html") and "<script" not in r.text
    return r.text


def _hrefs(page: str, attr: str) -> list[str]:
    return [html.unescape(u) for u in re.findall(rf'{attr}="([^"]+)"', page)]


def test_the_page_shows_lambda_the_verdict_the_split_every_plot_and_the_report(client, store):
    res = _rating(store)
    page = _page(client)
    assert "λ* 898.891 ops/s" in page and "bracket [875, 900] narrower" in page
    assert html.escape(res["bottleneck"]["line"]) in page and res["bottleneck"]["resource"] == "disk read IOPS"
    assert html.escape(split_line(res["latency_split"])) in page and "server 1.500" in page
    imgs = _hrefs(page, "src")
    assert [u.rsplit("/", 1)[1] for u in imgs] == ["load_curve.png", "utilization.png", "latency_vs_load.png"]
    for url in imgs:                                   # each <img> loads from the store through the app
        r = client.get(url)
        assert (r.status_code, r.headers["content-type"], r.content) == (200, "image/png", PNG), url
    [report] = [u for u in _hrefs(page, "href") if u.endswith("/report.html")]
    r = client.get(report)
    assert r.status_code == 200 and r.text == "<html><body>the report</body></html>"
    assert r.headers["content-security-policy"].startswith("sandbox;")    # no script on Airflow's origin


def test_a_run_without_a_result_says_no_rating_yet_with_its_trials_so_far(client, store):
    assert "No rating yet: nothing stored for rating" in _page(client)
    store.put_json(store.spec_key(RID), {"spec": {}})
    for n in range(2):
        store.put_trial(RID, n, {"n": n, "load_ops_s": 100.0 * (n + 1)})
    page = _page(client)
    assert f"No rating yet: rating {RID} has 2 trials so far" in page and "<img" not in page
    assert "No rating yet" in _page(client, "rate_peak", "manual__never_started")
    assert "stored no rating for this run" in _page(client, "compare_ratings", RUN)


def test_text_from_the_store_is_escaped(client, store):
    evil = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    _rating(store, result=_result(reason=evil, bottleneck={"resource": "cpu", "line": f"cpu {evil}"}), plots=())
    page = _page(client)
    assert "<script>" not in page and "<img src=x" not in page and 'onerror="' not in page
    assert html.escape(evil) in page


def test_only_the_runs_own_plots_reports_and_tables_are_served(client, store):
    _rating(store)
    _rating(store, "rate_peak__manual__other")
    base = f"/workbench/runs/rate_peak/{urllib.parse.quote(RUN, safe='')}/store"
    assert client.get(f"{base}/ratings/{RID}/plots/utilization.png").status_code == 200
    for key in (f"ratings/{RID}/result.json", f"ratings/{RID}/plots/notes.txt",
                "ratings/rate_peak__manual__other/report.html", f"ratings/{RID}/plots/missing.png",
                f"ratings/{RID}/%2E%2E/rate_peak__manual__other/report.html"):
        r = client.get(f"{base}/{key}")
        assert r.status_code == 404 and "no such plot, report or table" in r.text, key


def test_a_sweep_lists_its_ratings_and_opens_each_and_its_report_links_resolve(client, store):
    sid = rating_id_for("map_surface", RUN)
    jobs = sweep.start_sweep(store, {"workload": "web_server", "profile": "smoke",
                                     "factors": {"threads": [8, 16], "read_iops": [90, 100]}}, sid)
    rids = [j["item"]["plan"]["rating_id"] for j in jobs]
    res = _rating(store, rids[0])
    store.put_trial(rids[1], 0, {"n": 0, "load_ops_s": 200.0})
    store.put_bytes(store.surface_report_key(sid), f'<a href="../../ratings/{rids[0]}/report.html">s0</a>'.encode())
    page = _page(client, "map_surface", RUN)
    assert f"Sweep {sid}: 4 ratings" in page and html.escape(res["bottleneck"]["line"]) in page
    assert f"rating {rids[1]} has 1 trial so far" in page
    links = _hrefs(page, "href")
    one = _page(client, "map_surface", RUN, rating=rids[0])
    assert f"Rating {rids[0]}" in one and len(_hrefs(one, "src")) == 3 and "all ratings of this run" in one
    assert any(f"rating={rids[0]}" in u for u in links)
    [report] = [u for u in links if u.endswith(f"surfaces/{sid}/report.html")]
    assert client.get(report).status_code == 200
    # the sweep report's relative link to a sample's report resolves to a URL the app serves
    assert client.get(urllib.parse.urljoin(report, f"../../ratings/{rids[0]}/report.html")).status_code == 200
    assert "not one of the ratings of this run" in _page(client, "map_surface", RUN, rating="rate_peak__x")


def test_an_unreachable_store_is_one_line_not_an_error(store):
    from fastapi.testclient import TestClient

    from workbench.store.s3 import ResultsStore, S3Config
    dead = S3Config(endpoint="127.0.0.1:9", access_key="AKIDPLUGINTEST", secret_key="SECRETPLUGINTEST",
                    bucket="workbench", secure=False)           # port 9 (discard): connection refused
    app = _plugin().build_app(lambda: ResultsStore(dead, timeout_s=1, retry_s=0))
    app.dependency_overrides[app.state.read_runs] = lambda: None
    r = TestClient(app).get(f"/runs/rate_peak/{RUN}")
    assert r.status_code == 503 and "The results store cannot be read" in r.text and "127.0.0.1:9" in r.text
    assert "AKIDPLUGINTEST" not in r.text and "SECRETPLUGINTEST" not in r.text


def test_the_plugin_imports_without_fastapi_or_its_app():
    """Airflow imports the file in every process: the app is built only when `fastapi_apps` is read."""
    code = ("import sys, importlib.util as u; import airflow.plugins_manager; "
            f"s = u.spec_from_file_location('workbench_ui', {str(PLUGIN)!r}); m = u.module_from_spec(s); "
            "s.loader.exec_module(m); print('fastapi' in sys.modules, m.WHY_VIEW['href'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__")})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "/workbench/runs/{DAG_ID}/{RUN_ID}"]


# -- Airflow itself -----------------------------------------------------------------------------------

def _airflow_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    from airflow_live import airflow_auth        # scripts/airflow_auth.py: the users of ui.sh
    passwords = home / "passwords.json"
    airflow_auth.ensure_passwords(passwords)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW") and not k.startswith("WB_S3_")}
    env.update({"PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}", "AIRFLOW_HOME": str(home),
                "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
                "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32), **airflow_auth.env(passwords), **(extra or {})})
    return env


@pytest.mark.timeout(180)
def test_airflow_lists_the_plugin_with_its_tab_and_its_app(tmp_path):
    t0 = time.monotonic()
    out = subprocess.run([str(VENV_BIN / "airflow"), "plugins", "--output", "json"], env=_airflow_env(tmp_path),
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    [plugin] = [p for p in json.loads(out.stdout) if p["name"] == "workbench_ui"]
    assert plugin["external_views"] == [{"name": "Why λ*", "href": "/workbench/runs/{DAG_ID}/{RUN_ID}",
                                         "destination": "dag_run", "url_route": "why-peak"}]
    assert plugin["fastapi_apps"] == [{"app": "fastapi.applications.FastAPI", "url_prefix": "/workbench",
                                       "name": "workbench why λ*"}]
    print(f"airflow plugins: {time.monotonic() - t0:.1f} s")


API_APP_SCRIPT = r"""
import json, sys
from fastapi.testclient import TestClient
from airflow.api_fastapi.app import create_app
page, passwords = sys.argv[1], json.load(open(sys.argv[2]))
c = TestClient(create_app())
tok = {u: c.post("/auth/token", json={"username": u, "password": p}).json()["access_token"] for u, p in passwords.items()}
out = {u: [(r := c.get(page, headers={"Authorization": f"Bearer {t}"})).status_code, r.text] for u, t in tok.items()}
out["none"] = [(r := c.get(page)).status_code, r.text]
out["cookie"] = [(r := c.get(page, cookies={"_token": tok["viewer"]})).status_code, r.text]
views = c.get("/api/v2/plugins", headers={"Authorization": f"Bearer {tok['admin']}"}).json()["plugins"]
out["views"] = [v for p in views for v in p["external_views"]]
print("RESULT" + json.dumps(out))
"""


@pytest.mark.timeout(300)
def test_airflows_api_app_serves_the_page_to_readers_only(tmp_path, minio_server):
    """Airflow's API app as the api-server builds it (plugins mounted, its auth manager, its database),
    the store found from WB_S3_* as in the tasks: admin and viewer read the page (token or the UI's
    cookie), a request without a token gets 401."""
    from workbench.store.s3 import ResultsStore
    cfg = dataclasses.replace(minio_server, bucket=f"wb-ui-{uuid.uuid4().hex[:10]}")
    s3 = ResultsStore(cfg)
    s3.ensure_bucket()
    res = _rating(s3)
    env = _airflow_env(tmp_path, {"WB_S3_ENDPOINT": cfg.endpoint, "WB_S3_ACCESS_KEY": cfg.access_key,
                                  "WB_S3_SECRET_KEY": cfg.secret_key, "WB_S3_BUCKET": cfg.bucket,
                                  "WB_S3_SECURE": "false"})
    t0 = time.monotonic()
    migrate = subprocess.run([str(VENV_BIN / "airflow"), "db", "migrate"], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=240)
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    t1 = time.monotonic()
    page = f"/workbench/runs/rate_peak/{urllib.parse.quote(RUN, safe='')}"
    out = subprocess.run([sys.executable, "-c", API_APP_SCRIPT, page, str(tmp_path / "passwords.json")],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0 and "RESULT" in out.stdout, out.stderr[-3000:]
    got = json.loads(out.stdout.split("RESULT", 1)[1])
    print(f"db migrate {t1 - t0:.1f} s, API app + 5 requests {time.monotonic() - t1:.1f} s")
    for who in ("admin", "viewer", "cookie"):
        status, text = got[who]
        assert status == 200 and html.escape(res["bottleneck"]["line"]) in text, (who, status, text[:300])
    assert got["none"][0] == 401, got["none"]
    assert {"name": "Why λ*", "href": "/workbench/runs/{DAG_ID}/{RUN_ID}", "destination": "dag_run",
            "url_route": "why-peak"}.items() <= next(v for v in got["views"] if v["name"] == "Why λ*").items()
    assert cfg.secret_key not in got["admin"][1]
