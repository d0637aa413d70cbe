"""Why λ*: a rating's verdict, load curve and telemetry beside its DAG run in the Airflow UI (issue 50).

An Airflow 3 plugin (the FastAPI plugin API, no Flask/FAB), loaded from this folder
(AIRFLOW__CORE__PLUGINS_FOLDER; scripts/airflow-env.sh, celery-stack.sh, docker-compose.yml and
tests/airflow_live.py set it):

- `external_views`: a tab "Why λ*" on every DAG run's page (destination "dag_run"); the UI puts the
  run's ids into the href's {DAG_ID} and {RUN_ID} and shows the page in an iframe.
- `fastapi_apps`: the app under /workbench of the API server:
      GET /workbench/runs/<dag_id>/<run_id>                  the run's page (workbench.output.run_page)
      GET /workbench/runs/<dag_id>/<run_id>?rating=<id>      one of a sweep's or a night's ratings
      GET /workbench/runs/<dag_id>/<run_id>/store/<key>      a plot (PNG), report (HTML) or CSV of that
                                                             run's ratings, sweep or night, from the store

Access: every route depends on Airflow's own check for reading a DAG's runs,
`requires_access_dag("GET", DagAccessEntity.RUN)` (the check of GET /api/v2/dags/{dag_id}/dagRuns/…):
the caller's JWT (the UI's `_token` cookie, or an `Authorization: Bearer` header) must belong to a user
the auth manager lets read that DAG's runs; else 401 (no or a bad token) or 403. What it shows is what
the results store holds for that run's ratings (results, plots, reports), nothing else; the store's
credentials (the `workbench_s3` connection or WB_S3_*, as for the tasks) never leave the server.
Reports are served with a sandboxing Content-Security-Policy (no script runs on Airflow's origin).

Cheap to import: Airflow imports this file in each of its processes (scheduler, workers, CLI) but
only the API server (and `airflow plugins`) reads `fastapi_apps`; the app — FastAPI, Airflow's API
security and the workbench package — is built then, once. A failure there is logged and leaves the
plugin without its app (or its page names the failure); it never stops Airflow.
"""

import functools
import html
import logging
import sys
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote, urlsplit

from airflow.configuration import conf
from airflow.plugins_manager import AirflowPlugin

log = logging.getLogger(__name__)

URL_PREFIX = "/workbench"
TAB = "Why λ*"
STORE_TIMEOUT_S, STORE_RETRY_S = 5.0, 5.0     # a page, not a task: an unreachable store answers in seconds
STORE_REUSE_S = 60.0                           # an edited connection counts within a minute
SRC = Path(__file__).resolve().parent.parent / "src"        # the checkout's package, if not installed
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; "
                                           "frame-ancestors 'self'",
                "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
# a stored report: self-contained (inline CSS, PNGs as data URIs, no script) and sandboxed
REPORT_HEADERS = {**PAGE_HEADERS, "Content-Security-Policy": "sandbox; default-src 'none'; img-src data:; "
                                                             "style-src 'unsafe-inline'; frame-ancestors 'self'"}


def _root_path() -> str:
    """The path Airflow is served under ([api] base_url, e.g. /airflow), '' at the root."""
    return urlsplit(conf.get("api", "base_url", fallback="") or "").path.rstrip("/")


WHY_VIEW = {"name": TAB, "href": f"{_root_path()}{URL_PREFIX}/runs/{{DAG_ID}}/{{RUN_ID}}",
            "destination": "dag_run", "url_route": "why-peak"}


def _workbench() -> Any:
    """workbench.output.run_page (and the store), importable from the venv or, failing that, src/."""
    try:
        import workbench  # noqa: F401
    except ImportError:
        if (SRC / "workbench").is_dir() and str(SRC) not in sys.path:
            sys.path.append(str(SRC))
    from workbench.output import run_page
    return run_page


_opened: list[tuple[float, Any]] = []


def open_store() -> Any:
    """The results store as the tasks find it (the `workbench_s3` connection, else WB_S3_*), with a short
    retry budget; found again after STORE_REUSE_S (a page and its plots are one lookup)."""
    from workbench.store.s3 import ResultsStore, S3Config
    if _opened and time.monotonic() - _opened[0][0] < STORE_REUSE_S:
        return _opened[0][1]
    store = ResultsStore(S3Config.resolve(), timeout_s=STORE_TIMEOUT_S, retry_s=STORE_RETRY_S)
    _opened[:] = [(time.monotonic(), store)]
    return store


class Pages:
    """What the app answers; `store_opener()` gives the results store for each request."""

    def __init__(self, store_opener: Callable[[], Any]) -> None:
        self.store_opener, self.broken = store_opener, ""
        try:
            self.run_page = _workbench()
        except Exception as e:                     # the API server starts anyway; the page says why
            log.exception("workbench_ui: the workbench package is not importable")
            self.run_page = None
            self.broken = f"The workbench package is not importable in Airflow's API server ({type(e).__name__}: {e})."

    @staticmethod
    def line(title: str, text: str, status: int) -> Any:
        """A page of one escaped line."""
        from fastapi.responses import HTMLResponse
        body = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
                f"</head><body><p>{html.escape(text)}</p></body></html>")
        return HTMLResponse(body, status_code=status, headers=PAGE_HEADERS)

    def answer(self, dag_id: str, run_id: str, draw: Callable[[Any, Any], Any]) -> Any:
        """draw(store, the run's ratings); a store or page failure as a one-line page, never a 500."""
        title = f"{TAB} — {dag_id} {run_id}"
        if self.run_page is None:
            return self.line(title, self.broken, 503)
        from workbench.store.base import StoreError
        try:
            store = self.store_opener()
            return draw(store, self.run_page.run_ratings(store, dag_id, run_id))
        except StoreError as e:                    # names endpoint and bucket, never a credential
            log.warning("workbench_ui: %s/%s: %s", dag_id, run_id, e)
            return self.line(title, f"The results store cannot be read: {e}", 503)
        except Exception as e:
            log.exception("workbench_ui: %s/%s", dag_id, run_id)
            return self.line(title, f"This page could not be drawn ({type(e).__name__}: {e}); the API "
                                    f"server's log has the details.", 200)

    def links(self, root_path: str, dag_id: str, run_id: str) -> Any:
        run = f"{root_path.rstrip('/')}/runs/{quote(dag_id, safe='')}/{quote(run_id, safe='')}"
        return self.run_page.Links(obj=lambda key: f"{run}/store/{quote(key, safe='/')}",
                                   rating=lambda rid: f"{run}?rating={quote(rid, safe='')}", run=run)

    def run_view(self, root_path: str, dag_id: str, run_id: str, rating: str | None) -> Any:
        """The run's ratings: verdict, split, plots, report link; or one line when there is none yet."""
        from fastapi.responses import HTMLResponse

        def draw(store: Any, runs: Any) -> Any:
            page = self.run_page.run_html(store, runs, self.links(root_path, dag_id, run_id), rating)
            return HTMLResponse(page, headers=PAGE_HEADERS)
        return self.answer(dag_id, run_id, draw)

    def store_object(self, dag_id: str, run_id: str, key: str) -> Any:
        """One object of the run's ratings, sweep or night: a PNG, an HTML report or a CSV."""
        from fastapi.responses import Response

        def draw(store: Any, runs: Any) -> Any:
            kind = self.run_page.servable(store, runs, key)
            data = store.get_bytes(key, None) if kind else None
            if data is None:
                return self.line(f"{TAB} — not found", f"{key}: no such plot, report or table of this run.", 404)
            headers = REPORT_HEADERS if kind.startswith("text/html") else {
                **PAGE_HEADERS, "Cache-Control": "private, max-age=60"}
            return Response(data, media_type=kind, headers=headers)
        return self.answer(dag_id, run_id, draw)


def build_app(store_opener: Callable[[], Any] = open_store) -> Any:
    """The FastAPI app of the plugin; every route behind Airflow's check for reading the DAG's runs."""
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import requires_access_dag
    from fastapi import Depends, FastAPI, Request
    from fastapi.responses import HTMLResponse

    read_runs = requires_access_dag("GET", DagAccessEntity.RUN)
    app = FastAPI(title="workbench: why λ*", dependencies=[Depends(read_runs)], docs_url=None,
                  redoc_url=None, openapi_url=None)
    app.state.read_runs = read_runs                # the access check (a test may name it)
    pages = Pages(store_opener)

    @app.get("/runs/{dag_id}/{run_id}", response_class=HTMLResponse)
    def run_view(dag_id: str, run_id: str, request: Request, rating: str | None = None):
        return pages.run_view(request.scope.get("root_path", ""), dag_id, run_id, rating)

    @app.get("/runs/{dag_id}/{run_id}/store/{key:path}")
    def store_object(dag_id: str, run_id: str, key: str):
        return pages.store_object(dag_id, run_id, key)

    return app


@functools.cache
def _apps() -> tuple[dict[str, Any], ...]:
    try:
        return ({"app": build_app(), "url_prefix": URL_PREFIX, "name": "workbench why λ*"},)
    except Exception:                              # e.g. a newer Airflow moved its security module
        log.exception("workbench_ui: the page app could not be built; the %r tab will not load", TAB)
        return ()


class WorkbenchUiPlugin(AirflowPlugin):
    """The "Why λ*" tab of a DAG run and the app that serves it."""

    name = "workbench_ui"
    external_views = [WHY_VIEW]

    @property
    def fastapi_apps(self) -> list[dict[str, Any]]:  # type: ignore[override]  # built on first use
        return list(_apps())
