"""Notifications: tell people when a run fails, a rating does not converge, or a night regresses.

`RunNotifier` is Airflow's own notifier mechanism (a BaseNotifier), the `on_failure_callback` of
rate_peak, map_surface and nightly_regression. An unconverged rating (rate_peak's `verdict` task)
and a regression or NO VERDICT (nightly_regression's `verdict` task) turn their runs red, so one
DAG failure callback covers all of them. It reads what the run stored (result.json, verdicts.json)
and sends one message on every channel that has an Airflow connection:

- e-mail through the smtp provider's SmtpHook, connection `workbench_smtp` (host, port, login,
  password; extra `to`, `from_email`, `disable_ssl`, `disable_tls`, `timeout`);
- a webhook: an HTTP POST of a small JSON (`Notice.payload`), connection `workbench_webhook`
  (`http://host:port/path` or `https://…`; login/password → basic auth; extra `headers`).

No connection: nothing sent, one log line. A channel that fails is logged by its exception type
(and status), never by URL or message text, which may hold a token; messages hold ids, λ*, reasons
and s3:// locations only.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import re
import socket
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow.sdk.bases.notifier import BaseNotifier

from workbench.findings.latency_split import split_line
from workbench.findings.load_curve import ort_text
from workbench.findings.peak_interval import peak_statement
from workbench.findings.regression_text import verdict_label, verdict_word
from workbench.output.console import _pair, fmt_num
from workbench.params.plan import night_of, rating_id_for
from workbench.store.base import Store
from workbench.store.s3 import open_store

SMTP_CONN = "workbench_smtp"
WEBHOOK_CONN = "workbench_webhook"
WEBHOOK_TIMEOUT_S = 10.0
EVENT_WORDS = {
    "failed": "run failed",
    "unconverged": "rating did not converge",
    "regression": "REGRESSION",
    "lab_change": "LAB CHANGE",
    "no_verdict": "NO VERDICT",
}
ID_LABELS = {"map_surface": "sweep", "nightly_regression": "night"}  # else a rating

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Notice:
    """What one message says: the event, the run, its rating / sweep / night id, λ*, the report."""

    event: str  # failed | unconverged | regression | lab_change | no_verdict
    dag_id: str
    run_id: str
    subject_id: str  # rating id (rate_peak), sweep id (map_surface), night
    failed_task: str | None = None
    peak_rate: float | None = None  # λ*, ops/s
    report: str | None = None  # the report's s3:// location
    details: tuple[str, ...] = ()
    baselines: tuple[dict[str, Any], ...] = field(default=())  # nightly: the flagged baselines

    def title(self) -> str:
        return f"[workbench] {self.dag_id} {self.subject_id}: {EVENT_WORDS[self.event]}"

    def text(self) -> str:
        rows = [
            self.title(),
            "",
            f"DAG run    {self.dag_id} / {self.run_id}",
            f"{ID_LABELS.get(self.dag_id, 'rating'):<10} {self.subject_id}",
        ]
        if self.failed_task:
            rows.append(f"failed at  {self.failed_task}")
        if self.peak_rate is not None:
            rows.append(f"λ*         {fmt_num(self.peak_rate)} ops/s")
        rows.append(f"report     {self.report or '— (not written)'}")
        return "\n".join([*rows, *self.details])

    def payload(self) -> dict[str, Any]:
        """The webhook's JSON: small, flat, and the text a chat channel shows."""
        return {
            **{k: v for k, v in asdict(self).items() if k not in ("details", "baselines")},
            "title": self.title(),
            "text": self.text(),
            "baselines": list(self.baselines),
        }


# -- what to say ------------------------------------------------------------------------------


def rating_notice(store: Store, dag_id: str, run_id: str, failed_task: str | None) -> Notice:
    """rate_peak: unconverged when only its verdict failed on an unconverged result; else failed."""
    rid = rating_id_for(dag_id, run_id)
    res = store.get_json(store.result_key(rid), None)
    event = (
        "unconverged"
        if res is not None and not res.get("converged") and failed_task == "verdict"
        else "failed"
    )
    details = (
        ()
        if res is None
        else (
            f"converged  {res.get('converged')} ({res.get('reason')})",
            f"bracket    {_pair(res.get('bracket'))} ops/s; {peak_statement(res)}",
            *([f"bottleneck {res['bottleneck']['line']}"] if res.get("bottleneck") else []),
            *([f"split      {split_line(res['latency_split'])}"] if "latency_split" in res else []),
            *(
                [f"ORT        {ort_text(res, [])} (SPEC SFS overall response time)"]
                if "overall_response_time_ms" in res
                else []
            ),
        )
    )
    return Notice(
        event,
        dag_id,
        run_id,
        rid,
        failed_task,
        (res or {}).get("peak_rate"),
        _location(store, store.rating_report_key(rid)),
        details,
    )


def sweep_notice(store: Store, dag_id: str, run_id: str, failed_task: str | None) -> Notice:
    sid = rating_id_for(dag_id, run_id)
    return Notice(
        "failed",
        dag_id,
        run_id,
        sid,
        failed_task,
        report=_location(store, store.surface_report_key(sid)),
    )


def _flagged(v: Mapping[str, Any]) -> dict[str, Any]:
    """One flagged baseline in the notice: the verdict, both ratings, the change with its interval,
    the two nights and the settings that changed."""
    cp, rerun = v.get("change_point") or {}, v.get("rerun") or {}
    return {
        "name": verdict_label(v),
        "verdict": verdict_word(v),
        "rating_id": v.get("rating_id"),
        "peak_rate": v.get("current_peak"),
        "baseline_peak": v.get("baseline_peak"),
        "report": v.get("report_url"),
        "rerun_rating_id": rerun.get("rating_id"),
        "rerun_peak_rate": rerun.get("peak_rate"),
        "rel_change": cp.get("rel_change"),
        "rel_ci": cp.get("rel_ci"),
        "first_night": cp.get("first_night"),
        "last_good_night": cp.get("last_good_night"),
        "canary": v.get("canary"),
        "changed": v.get("changed") or [],
        "bottleneck": v.get("bottleneck"),
        "latency_split": v.get("latency_split"),
        "load_curve": v.get("load_curve"),
    }


def _detail(b: Mapping[str, Any], reason: Any) -> str:
    both = (
        f"; re-run {b['rerun_rating_id']} λ* {fmt_num(b['rerun_peak_rate'])} ops/s"
        if b["rerun_rating_id"]
        else ""
    )
    why = f"; bottleneck: {b['bottleneck']}" if b.get("bottleneck") else ""
    why += f"; latency split: {b['latency_split']}" if b.get("latency_split") else ""
    why += f"; load curve: {b['load_curve']}" if b.get("load_curve") else ""
    return (
        f"{b['verdict']}: {b['name']}: λ* {fmt_num(b['peak_rate'])} ops/s against "
        f"{fmt_num(b['baseline_peak'])}; rating {b['rating_id']}{both}, report {b['report']}; "
        f"{reason}{why}"
    )


def night_notice(
    store: Store, dag_id: str, run_id: str, night: str, failed_task: str | None
) -> Notice:
    """nightly_regression: each baseline with a regression, a lab change or no verdict: its λ*, its
    ratings (tonight's and the confirming re-run), the change and its nights, the settings
    changed."""
    verdicts = store.get_json(store.verdicts_key(night), None) or []
    bad = [
        v for v in verdicts if v.get("regression") or v.get("lab_change") or v.get("inconclusive")
    ]
    event = (
        "regression"
        if any(v.get("regression") for v in bad)
        else "lab_change"
        if any(v.get("lab_change") for v in bad)
        else "no_verdict"
        if bad
        else "failed"
    )
    flagged = tuple(_flagged(v) for v in bad)
    details = tuple(_detail(b, v.get("reason")) for b, v in zip(flagged, bad))
    return Notice(
        event,
        dag_id,
        run_id,
        night,
        failed_task,
        flagged[0]["peak_rate"] if len(flagged) == 1 else None,
        _location(store, store.nightly_report_key(night)),
        details,
        flagged,
    )


def notice_for(context: Mapping[str, Any], store: Store) -> Notice:
    """The notice for a failed run, from the callback's context (dag, run_id, ti, dag_run)."""
    dag_id, run_id = context["dag"].dag_id, context["run_id"]
    ti = context.get("ti")
    index = getattr(ti, "map_index", None)
    task = (
        None
        if ti is None
        else ti.task_id + (f"[{index}]" if index is not None and index >= 0 else "")
    )
    if dag_id == "nightly_regression":
        return night_notice(store, dag_id, run_id, night_of(context.get("dag_run"), run_id), task)
    if dag_id == "map_surface":
        return sweep_notice(store, dag_id, run_id, task)
    return rating_notice(store, dag_id, run_id, task)


def _location(store: Store, key: str) -> str | None:
    """The s3:// location of a report, or None when the run did not get to write it."""
    return store.url(key) if store.exists(key) else None


# -- how to send it ---------------------------------------------------------------------------


def _connection(conn_id: str) -> Any:
    """The Airflow connection, or None when it is not defined (or Airflow cannot look it up)."""
    from airflow.sdk import BaseHook

    try:
        return BaseHook.get_connection(conn_id)
    except Exception:  # AirflowNotFoundException, no secrets backend, no metadata DB
        return None


def send_email(conn: Any, notice: Notice) -> str:
    """One e-mail through the smtp provider's hook to the connection's extra `to`."""
    from airflow.providers.smtp.hooks.smtp import SmtpHook

    extra = conn.extra_dejson or {}
    to = extra.get("to")
    if not to:
        raise ValueError(f"connection {conn.conn_id} has no extra 'to' (the recipients)")
    with SmtpHook(smtp_conn_id=conn.conn_id) as hook:
        hook.send_email_smtp(
            to=to,
            subject=notice.title(),
            from_email=extra.get("from_email") or f"workbench@{socket.getfqdn()}",
            html_content=f"<pre>{html.escape(notice.text())}</pre>",
        )
    return f"e-mail via {conn.conn_id}"


def webhook_url(conn: Any) -> str:
    """http(s)://host[:port]/path of the connection (its URI's path is Airflow's `schema`)."""
    scheme = conn.conn_type if conn.conn_type in ("http", "https") else "https"
    host = re.sub(r"^https?://", "", conn.host or "").rstrip("/")
    if not host:
        raise ValueError(f"connection {conn.conn_id} has no host")
    port = f":{conn.port}" if conn.port else ""
    return f"{scheme}://{host}{port}/{(conn.schema or '').lstrip('/')}"


def post_webhook(conn: Any, notice: Notice) -> str:
    """One HTTP POST of the notice's JSON; headers from the extra, basic auth from
    login/password."""
    headers = {
        "Content-Type": "application/json",
        **((conn.extra_dejson or {}).get("headers") or {}),
    }
    if conn.login:
        token = base64.b64encode(f"{conn.login}:{conn.password or ''}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    req = urllib.request.Request(
        webhook_url(conn),
        data=json.dumps(notice.payload()).encode(),
        headers=headers,
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=WEBHOOK_TIMEOUT_S) as resp:
        return f"webhook via {conn.conn_id} (HTTP {resp.status})"


CHANNELS: dict[str, Callable[[Any, Notice], str]] = {"e-mail": send_email, "webhook": post_webhook}


def _safe_error(e: BaseException) -> str:
    """An error without its text (a URL's path or a server's answer may hold a token); our own
    configuration errors (ValueError: a connection without `to` or host) name the field."""
    if type(e) is ValueError:
        return f"ValueError: {e}"
    code = getattr(e, "code", None) or getattr(e, "smtp_code", None)
    return type(e).__name__ + (f" {code}" if isinstance(code, int) else "")


def send(notice: Notice, conn_ids: Mapping[str, str] | None = None) -> list[str]:
    """The notice on every channel with a connection; returns what was sent. Never raises."""
    conn_ids = conn_ids or {"e-mail": SMTP_CONN, "webhook": WEBHOOK_CONN}
    conns = {ch: _connection(cid) for ch, cid in conn_ids.items()}
    if not any(conns.values()):
        log.info(
            "notification not sent (no connection %s): %s",
            " or ".join(conn_ids.values()),
            notice.title(),
        )
        return []
    sent = []
    for channel, conn in conns.items():
        if conn is None:
            continue
        try:
            sent.append(CHANNELS[channel](conn, notice))
        except Exception as e:
            log.warning(
                "notification by %s (%s) failed: %s", channel, conn_ids[channel], _safe_error(e)
            )
    log.info("notification %s: %s", "; ".join(sent) or "not delivered", notice.title())
    return sent


class RunNotifier(BaseNotifier):
    """on_failure_callback of the workbench DAGs: what failed, to e-mail and webhook."""

    def __init__(self, store_opener: Callable[[], Store] = open_store) -> None:
        super().__init__()
        self.store_opener = store_opener

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        """Nothing to render (no template fields). BaseNotifier's would ask the context's DAG for a
        Jinja environment, which the SerializedDAG of dag.test() (`make run`) lacks: the callback
        then dies before notify (apache/airflow#64649, open in 3.3.2)."""

    def notify(self, context: Any) -> None:
        try:
            notice = notice_for(context, self.store_opener())
        except Exception as e:  # the store unreadable: say what failed, from the context alone
            log.warning("notification without the stored results: %s", _safe_error(e))
            notice = Notice(
                "failed",
                context["dag"].dag_id,
                context["run_id"],
                context["run_id"],
                getattr(context.get("ti"), "task_id", None),
            )
        send(notice)
