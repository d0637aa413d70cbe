"""Notifications with real sockets: an SMTP receiver (aiosmtpd) and an HTTP receiver (http.server)
on 127.0.0.1, the channels configured by AIRFLOW_CONN_* as an operator would, the notifier called
the way Airflow calls a DAG's on_failure_callback (BaseNotifier.__call__ with a context)."""
from __future__ import annotations

import base64
import datetime as dt
import logging
import socket
import types

import pytest
from helpers import WebhookReceiver, smtp_conn_env

from workbench.output import notify
from workbench.params.plan import night_of, rating_id_for
from workbench.store.local import LocalStore

RUN_ID = "manual__2026-11-24T10:00:00+00:00"
NIGHT_RUN = "scheduled__2026-11-03T03:00:00+00:00"


@pytest.fixture
def no_connections(monkeypatch):
    for name in ("AIRFLOW_CONN_WORKBENCH_SMTP", "AIRFLOW_CONN_WORKBENCH_WEBHOOK"):
        monkeypatch.delenv(name, raising=False)


def _context(dag_id: str, run_id: str, task_id: str, **more):
    """A DAG failure callback's context; its DAG serialized and back, as dag.test() (`make run`)
    passes it (no Jinja environment: apache/airflow#64649)."""
    from airflow.sdk import DAG
    from airflow.serialization.serialized_objects import DagSerialization
    dag = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(DAG(dag_id=dag_id, schedule=None)))
    ti = types.SimpleNamespace(task_id=task_id, map_index=-1)
    return {"dag": dag, "run_id": run_id, "ti": ti, "reason": "task_failure", **more}


def _unconverged_rating(store) -> str:
    rid = rating_id_for("rate_peak", RUN_ID)
    store.put_json(store.rating_key(rid, "result.json"), {
        "peak_rate": 1600.0, "converged": False, "bracket": [1600.0, None], "peak_rate_ci": [1600.0, None],
        "reason": "budget exhausted: 24 s spent, next trial needs 6 s of 24 s",
        "bottleneck": {"resource": "disk read IOPS", "line": "disk read IOPS — 99/100 at 1600 ops/s"},
        "latency_split": {"loads": [], "at_peak": None, "missing": {"send lag": 2}},
        "overall_response_time_ms": 0.412})
    store.put_bytes(store.rating_key(rid, "report.html"), b"<html></html>", "text/html")
    return rid


def _body(message) -> str:
    return message.get_payload()[0].get_payload(decode=True).decode()


def test_an_unconverged_rating_is_mailed_and_posted_with_its_id_lambda_and_report(tmp_path, notify_receivers):
    smtp, hook = notify_receivers
    store = LocalStore(tmp_path)
    rid = _unconverged_rating(store)
    notifier = notify.RunNotifier(store_opener=lambda: store)
    notifier(_context("rate_peak", RUN_ID, "verdict"))             # as Airflow calls a DAG callback
    report = store.url(store.rating_key(rid, "report.html"))
    assert len(smtp.messages) == 1 and len(hook.posts) == 1
    mail = smtp.messages[0]
    assert mail["Subject"] == f"[workbench] rate_peak {rid}: rating did not converge"
    assert smtp.envelopes == [("workbench@example.org", ["storage-team@example.org"])]
    body = _body(mail)
    assert rid in body and "1600.0 ops/s" in body and report in body and "budget exhausted" in body
    assert "bottleneck disk read IOPS — 99/100 at 1600 ops/s" in body            # issue 50: why λ* is there
    assert "split      not split (send lag)" in body and "ORT        0.412 ms" in body
    path, headers, payload = hook.posts[0]
    assert path == "/hooks/workbench" and headers["Content-Type"] == "application/json"
    assert payload["event"] == "unconverged" and payload["subject_id"] == rid and payload["peak_rate"] == 1600.0
    assert payload["report"] == report and payload["failed_task"] == "verdict" and payload["run_id"] == RUN_ID


def test_a_converged_rating_whose_run_failed_later_is_a_failure_not_unconverged(tmp_path):
    store = LocalStore(tmp_path)
    rid = rating_id_for("rate_peak", RUN_ID)
    store.put_json(store.rating_key(rid, "result.json"), {"peak_rate": 900.0, "converged": True, "reason": "ok"})
    n = notify.notice_for(_context("rate_peak", RUN_ID, "teardown"), store)
    assert (n.event, n.failed_task, n.peak_rate, n.report) == ("failed", "teardown", 900.0, None)
    assert "report     — (not written)" in n.text()
    early = notify.notice_for(_context("rate_peak", "manual__other", "provision"), store)
    assert (early.event, early.peak_rate, early.details) == ("failed", None, ())


def _verdicts(store, night: str) -> None:
    def v(name, regression, inconclusive, peak):
        return {"name": name, "regression": regression, "inconclusive": inconclusive, "current_peak": peak,
                "baseline_peak": 900.0, "rating_id": f"nightly__{night}__{name}", "reason": f"{name}'s reason",
                "report_url": f"s3://workbench/ratings/nightly__{night}__{name}/report.html",
                "bottleneck": f"{name} disk, as the night before; at 400 ops/s server CPU 20 → 55 %",
                "latency_split": f"{name} 2.000 ms at 400 ops/s = server 1.700 + network 0.200 + client queueing 0.050",
                "load_curve": f"ORT 1.2 ms, latency against throughput in s3://workbench/{name}/load_curve.csv"}
    store.put_json(store.nightly_key(night, "verdicts.json"),
                   [v("db", False, True, None), v("mail", False, False, 880.0), v("web", True, False, 450.0)])
    store.put_bytes(store.nightly_key(night, "report.html"), b"<html></html>", "text/html")


def test_a_regressed_night_names_each_flagged_baseline_with_its_rating(tmp_path, notify_receivers):
    smtp, hook = notify_receivers
    store = LocalStore(tmp_path)
    _verdicts(store, "2026-11-03")
    run = types.SimpleNamespace(logical_date=dt.datetime(2026, 11, 3, 3, tzinfo=dt.timezone.utc), run_after=None)
    notify.RunNotifier(store_opener=lambda: store)(_context("nightly_regression", NIGHT_RUN, "verdict", dag_run=run))
    payload = hook.posts[0][2]
    assert payload["event"] == "regression" and payload["subject_id"] == "2026-11-03"
    assert payload["report"] == store.url(store.nightly_key("2026-11-03", "report.html"))
    assert [(b["name"], b["verdict"], b["peak_rate"]) for b in payload["baselines"]] == \
        [("db", "NO VERDICT", None), ("web", "REGRESSION", 450.0)]          # mail is ok: not named
    assert payload["peak_rate"] is None                                     # two flagged: no one λ*
    body = _body(smtp.messages[0])
    assert "REGRESSION: web: λ* 450.0 ops/s against 900.0; rating nightly__2026-11-03__web" in body
    assert "s3://workbench/ratings/nightly__2026-11-03__web/report.html" in body
    assert "bottleneck: web disk, as the night before; at 400 ops/s server CPU 20 → 55 %" in body
    assert "latency split: web 2.000 ms at 400 ops/s = server 1.700 + network 0.200" in body
    assert "load curve: ORT 1.2 ms, latency against throughput in s3://workbench/web/load_curve.csv" in body
    assert smtp.messages[0]["Subject"] == "[workbench] nightly_regression 2026-11-03: REGRESSION"


def test_a_night_with_only_an_unconverged_rating_is_no_verdict(tmp_path):
    store = LocalStore(tmp_path)
    store.put_json(store.nightly_key("2026-11-04", "verdicts.json"),
                   [{"name": "web", "regression": False, "inconclusive": True, "current_peak": 700.0}])
    n = notify.night_notice(store, "nightly_regression", "manual__2026-11-04", "2026-11-04", "verdict")
    assert (n.event, n.peak_rate) == ("no_verdict", 700.0)
    assert n.title() == "[workbench] nightly_regression 2026-11-04: NO VERDICT"


def test_the_night_comes_from_the_run_else_from_its_id():
    when = dt.datetime(2026, 11, 3, 3, tzinfo=dt.timezone.utc)
    assert night_of(types.SimpleNamespace(logical_date=when, run_after=None)) == "2026-11-03"
    assert night_of(types.SimpleNamespace(logical_date=None, run_after=when + dt.timedelta(days=1))) == "2026-11-04"
    assert night_of(None, NIGHT_RUN) == "2026-11-03"
    with pytest.raises(ValueError):
        night_of(None, "manual__x")


def test_without_connections_nothing_is_sent_and_one_line_is_logged(no_connections, caplog):
    n = notify.Notice("failed", "map_surface", RUN_ID, "map_surface__x", "rate_sample[1]")
    with caplog.at_level(logging.INFO, logger=notify.__name__):
        assert notify.send(n) == []
    lines = [r.getMessage() for r in caplog.records if r.name == notify.__name__]
    assert lines == [f"notification not sent (no connection workbench_smtp or workbench_webhook): {n.title()}"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_failed_channel_is_logged_without_secrets_and_the_other_still_sends(monkeypatch, caplog):
    """The webhook's URL path, basic-auth password and header token are secrets: the receiver gets
    them as credentials, and neither the message nor any log line holds them."""
    secret_path, password, token = "services/T0/B0/s3cr3t-path", "pw-s3cr3t", "tok-s3cr3t"
    n = notify.Notice("unconverged", "rate_peak", RUN_ID, "rate_peak__x", "verdict", 1600.0, "s3://workbench/x")
    with WebhookReceiver(status=500) as hook:
        monkeypatch.setenv("AIRFLOW_CONN_WORKBENCH_WEBHOOK", hook.conn_env(
            secret_path, login="bot", password=password, extra={"headers": {"X-Token": token}}))
        monkeypatch.setenv("AIRFLOW_CONN_WORKBENCH_SMTP", smtp_conn_env(_closed_port()))   # nobody listens there
        with caplog.at_level(logging.INFO, logger=notify.__name__):
            assert notify.send(n) == []                          # refused, and HTTP 500
            hook.status = 200
            assert notify.send(n) == ["webhook via workbench_webhook (HTTP 200)"]
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == notify.__name__)
    assert "notification by e-mail (workbench_smtp) failed: ConnectionRefusedError" in logged
    assert "notification by webhook (workbench_webhook) failed: HTTPError 500" in logged
    assert not any(s in logged for s in (secret_path, password, token, "s3cr3t"))
    path, headers, payload = hook.posts[-1]
    assert path == f"/{secret_path}" and headers["X-Token"] == token
    assert base64.b64decode(headers["Authorization"].split()[1]).decode() == f"bot:{password}"
    assert "s3cr3t" not in str(payload)


def test_the_webhook_url_follows_the_connection_uri():
    from airflow.sdk import Connection
    conn = Connection.from_uri("https://bot:pw@hooks.example.org:8443/services/T1/B2", conn_id="workbench_webhook")
    assert notify.webhook_url(conn) == "https://hooks.example.org:8443/services/T1/B2"
    plain = Connection(conn_id="w", conn_type="http", host="127.0.0.1", port=9000)
    assert notify.webhook_url(plain) == "http://127.0.0.1:9000/"


def test_an_smtp_connection_without_recipients_is_named_in_the_log(monkeypatch, caplog):
    monkeypatch.setenv("AIRFLOW_CONN_WORKBENCH_SMTP", smtp_conn_env(_closed_port(), to=""))
    monkeypatch.delenv("AIRFLOW_CONN_WORKBENCH_WEBHOOK", raising=False)
    with caplog.at_level(logging.INFO, logger=notify.__name__):
        assert notify.send(notify.Notice("failed", "rate_peak", RUN_ID, "r", "provision")) == []
    assert "failed: ValueError: connection workbench_smtp has no extra 'to' (the recipients)" in caplog.text
