"""The results store against a real MinIO (scripts/minio.sh, started by the minio_server fixture)."""
from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest
from conftest_store import MINIO_SH, free_ports

from workbench.store.base import TrialConflict
from workbench.store.local import LocalStore
from workbench.store.s3 import NotFound, ResultsStore, S3Config, StoreError, rating_at_url

DATA = Path(__file__).resolve().parents[1] / "data"
TRIALS = [json.loads(line) for line in (DATA / "store_trials.jsonl").read_text().splitlines()]
SPEC = json.loads((DATA / "store_spec.json").read_text())
RESULT = json.loads((DATA / "store_result.json").read_text())


def _content_type(store: ResultsStore, key: str) -> str:
    return store._client.stat_object(store.bucket, key).content_type


def test_json_bytes_file_round_trip(store, tmp_path):
    obj = {"z": 1, "a": [1.5, None, True], "name": "λ* ≈ 899"}
    key = store.put_json("misc/x.json", obj)
    assert key == "misc/x.json"
    assert store.get_json(key) == obj
    raw = store.get_bytes(key).decode("utf-8")
    assert raw.index('"a"') < raw.index('"name"') < raw.index('"z"')  # sorted keys
    assert "λ* ≈ 899" in raw  # UTF-8, not \u escapes
    assert _content_type(store, key) == "application/json"

    blob = bytes(range(256)) * 10
    store.put_bytes("misc/b.bin", blob, "application/x-test")
    assert store.get_bytes("misc/b.bin") == blob
    assert _content_type(store, "misc/b.bin") == "application/x-test"

    page = tmp_path / "report.html"
    page.write_text("<html>ok</html>")
    store.put_file("misc/report.html", page)
    assert store.get_bytes("misc/report.html") == b"<html>ok</html>"
    assert _content_type(store, "misc/report.html") == "text/html"

    assert store.exists(key) and not store.exists("misc/nope.json")
    assert store.list_keys("misc/") == ["misc/b.bin", "misc/report.html", "misc/x.json"]
    assert store.url(key) == f"s3://{store.bucket}/misc/x.json"


def test_missing_objects(store):
    with pytest.raises(KeyError, match="nope.json"):
        store.get_json("ratings/r1/nope.json")
    with pytest.raises(NotFound):
        store.get_bytes("nope")
    assert store.get_json("nope.json", None) is None
    assert store.get_json("nope.json", {"d": 1}) == {"d": 1}
    assert store.list_keys("nothing/") == []


@pytest.fixture(params=["s3", "local"])
def any_store(request, tmp_path):
    """Both backends: the session MinIO's fresh bucket, and a LocalStore."""
    if request.param == "local":
        return LocalStore(tmp_path / "store")
    return request.getfixturevalue("store")


def test_trial_objects_are_written_once(any_store, caplog):
    """The same record again (a retried write) is success; a different one is refused, logged in
    one line, and the stored record stands and is handed back."""
    store = any_store
    rid = "rate_peak__manual__2026-11-22T05.00.00"
    first = dict(TRIALS[0], decision="first attempt")
    k1 = store.put_trial(rid, 0, first)
    assert k1 == f"ratings/{rid}/trials/00000.json" == store.trial_key(rid, 0)
    stored = store.get_bytes(k1)
    assert store.put_trial(rid, 0, dict(first)) == k1             # identical: fine, nothing rewritten
    assert store.get_bytes(k1) == stored
    with caplog.at_level("ERROR", logger="workbench.store"):
        with pytest.raises(TrialConflict) as e:
            store.put_trial(rid, 0, dict(TRIALS[0], decision="retry"))
    assert isinstance(e.value, StoreError) and e.value.key == k1
    assert e.value.stored == {**first, "n": 0} and e.value.record["decision"] == "retry"
    assert store.get_bytes(k1) == stored and store.list_keys(f"ratings/{rid}/trials/") == [k1]
    lines = [r.getMessage() for r in caplog.records if r.name == "workbench.store"]
    assert len(lines) == 1 and "\n" not in lines[0] and "trial 0 of" in lines[0] and "decision" in lines[0]
    # a single changed number deep inside raw is a different record too (nothing is ignored)
    raw = json.loads(json.dumps(first["raw"]))
    raw["ops"]["read"]["count"] += 1
    with pytest.raises(TrialConflict, match="differs in raw"):
        store.put_trial(rid, 0, dict(first, raw=raw))
    with pytest.raises(ValueError, match="n=0"):
        store.put_trial(rid, 3, TRIALS[0])  # record says n=0


def test_create_bytes_has_exactly_one_winner(any_store):
    store = any_store
    assert store.create_bytes("once/a.json", b"1", "application/json") is True
    assert store.create_bytes("once/a.json", b"2", "application/json") is False
    assert store.get_bytes("once/a.json") == b"1"
    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(lambda i: store.create_bytes("once/race.json", str(i).encode()), range(8)))
    assert won.count(True) == 1
    assert store.get_bytes("once/race.json") == str(won.index(True)).encode()
    assert store.list_keys("once/") == ["once/a.json", "once/race.json"]     # no temporary files


def test_trials_ordered_by_n(store):
    rid = "order"
    for n in (2, 10, 1):
        store.put_trial(rid, n, {"decision": f"d{n}", "mean_ms": float(n), "raw": None})
    store.put_json(store.rating_key(rid, "trials/notes.json"), {})  # not a trial
    assert [t["n"] for t in store.trials(rid)] == [1, 2, 10]
    assert [t["decision"] for t in store.trials(rid)] == ["d1", "d2", "d10"]
    assert store.trials("empty") == []


def test_trials_df_and_parquet_round_trip(store):
    rid = "sample"
    steal_pct = {1: 2.5}  # fstress's host_steal_pct; absent from the other two (older fstress)
    for rec in reversed(TRIALS):
        raw = dict(rec["raw"], **({"host_steal_pct": steal_pct[rec["n"]]} if rec["n"] in steal_pct else {}))
        drain = {"drain_s": 0.25} if rec["n"] == 2 else {}      # TrialResult.drain_s; older records lack it
        store.put_trial(rid, rec["n"], dict(rec, raw=raw, **drain))
    df = store.trials_df(rid)
    assert list(df["n"]) == [0, 1, 2]
    assert df["host_steal_pct"].iloc[1] == 2.5 and df["host_steal_pct"].iloc[[0, 2]].isna().all()
    assert df["drain_s"].iloc[2] == 0.25 and df["drain_s"].iloc[[0, 1]].isna().all()
    assert list(df.columns[:2]) == ["n", "decision"]
    assert "raw" not in df.columns
    for col in ("mean_ms", "p95_ms", "achieved_rate", "valid", "load_ops_s", "runlength_s", "errors"):
        assert list(df[col]) == [t[col] for t in TRIALS], col

    ops = store.trials_df(rid, ops=True)
    assert list(ops["op_read_count"]) == [t["raw"]["ops"]["read"]["count"] for t in TRIALS]
    assert not [c for c in ops.columns if "histogram" in c]

    key = store.write_trials_parquet(rid)
    assert key == f"ratings/{rid}/trials.parquet"
    assert _content_type(store, key) == "application/vnd.apache.parquet"
    back = pd.read_parquet(io.BytesIO(store.get_bytes(key)))
    pd.testing.assert_frame_equal(back, df)


def test_ratings_df_two_ratings(store):
    other_spec = dict(SPEC, workload="mail_server", factors={"fs": "xfs", "disks": 4, "threads": 64})
    other = dict(RESULT, peak_rate=1234.5, bracket=[1200.0, 1250.0], peak_rate_ci=[1100.0, 1300.0],
                 converged=False, n_trials=11)
    for rid, res, spec in (("r-a", RESULT, SPEC), ("r-b", other, other_spec)):
        store.put_json(store.rating_key(rid, "result.json"), res)
        store.put_json(store.rating_key(rid, "spec.json"), spec)
        store.put_trial(rid, 0, TRIALS[0])
    store.put_json(store.rating_key("r-unfinished", "spec.json"), SPEC)  # no result: no row

    df = store.ratings_df().set_index("rating_id")
    assert sorted(df.index) == ["r-a", "r-b"]
    a, b = df.loc["r-a"], df.loc["r-b"]
    assert a["peak_rate"] == pytest.approx(RESULT["peak_rate"])
    assert (a["bracket_lo"], a["bracket_hi"]) == tuple(RESULT["bracket"])
    assert (a["ci_lo"], a["ci_hi"]) == tuple(RESULT["peak_rate_ci"])
    assert a["n_trials"] == RESULT["n_trials"] and a["cost_s"] == RESULT["cost_s"]
    assert bool(a["converged"]) and not bool(b["converged"])
    assert (a["workload"], a["fs"], a["disks"], a["memory_mb"]) == ("web_server", "ext4", 1, 128)
    assert (b["workload"], b["fs"], b["disks"], b["threads"]) == ("mail_server", "xfs", 4, 64)
    assert (b["bracket_lo"], b["ci_hi"]) == (1200.0, 1300.0)


def test_bucket_is_created(minio_server):
    cfg = dataclasses.replace(minio_server, bucket=f"wb-auto-{os.getpid()}-{time.time_ns() % 10**9}")
    s = ResultsStore(cfg)
    assert s.list_keys("") == []  # no bucket yet: nothing listed, no error
    s.put_json("a.json", {"x": 1})  # first write creates the bucket
    assert s.get_json("a.json") == {"x": 1}
    s2 = ResultsStore(dataclasses.replace(cfg, bucket=cfg.bucket + "-e"))
    s2.ensure_bucket()
    s2.ensure_bucket()  # idempotent
    assert s2._client.bucket_exists(s2.bucket)


@pytest.mark.parametrize("bad", ["", "a/b", "..", "has space", "x" * 129, "ü", "../up"])
def test_bad_ids_rejected(store, bad):
    with pytest.raises(ValueError, match="bad"):
        store.rating_key(bad, "result.json")
    with pytest.raises(ValueError):
        store.put_trial(bad, 0, {})
    with pytest.raises(ValueError):
        store.surface_key(bad, "model.json")


def test_bad_names_and_indices_rejected(store):
    for name in ("../x.json", "/abs", "a//b"):
        with pytest.raises(ValueError, match="bad object name"):
            store.rating_key("ok", name)
    for n in (-1, 1.0, "1", True):
        with pytest.raises(ValueError, match="trial index"):
            store.trial_key("ok", n)
    with pytest.raises(ValueError):
        store.delete_prefix("")
    assert store.rating_key("a.b_c-1", "plots/x.png") == "ratings/a.b_c-1/plots/x.png"
    assert store.surface_key("sw1", "model.json") == "surfaces/sw1/model.json"
    assert store.nightly_key("2026-11-02", "verdicts.json") == "nightly/2026-11-02/verdicts.json"


def test_an_s3_rating_url_names_bucket_and_rating():
    assert rating_at_url("s3://workbench/ratings/rate_peak__x/") == ("workbench", "rate_peak__x")
    assert rating_at_url("s3://my.bucket-1/ratings/r1") == ("my.bucket-1", "r1")
    for bad in ("s3://workbench/surfaces/x/", "s3://workbench/ratings/", "s3://workbench/ratings/a/b", "ratings/r1"):
        assert rating_at_url(bad) is None


def test_link_between_reports_is_relative():
    night, rating = "nightly/2026-11-22/report.html", "ratings/nightly-web-1/report.html"
    assert ResultsStore.link(night, rating) == "../../ratings/nightly-web-1/report.html"
    assert ResultsStore.link("surfaces/sw1/report.html", "surfaces/sw1/plots/a.png") == "plots/a.png"
    assert ResultsStore.link("top.html", "ratings/r/report.html") == "ratings/r/report.html"
    with pytest.raises(ValueError, match="bad object name"):
        ResultsStore.link(night, "../etc/passwd")


def test_unreachable_endpoint_fails_fast_without_retries(minio_server):
    (port,) = free_ports(1)  # nothing listens there
    cfg = dataclasses.replace(minio_server, endpoint=f"127.0.0.1:{port}", bucket="wb-nowhere")
    s = ResultsStore(cfg, retry_s=0)  # constructing does not touch the network
    for op in (s.ensure_bucket, lambda: s.put_json("x.json", {}), lambda: s.get_json("x.json", None)):
        t0 = time.monotonic()
        with pytest.raises(StoreError) as e:
            op()
        assert time.monotonic() - t0 < 5
        assert f"127.0.0.1:{port}" in str(e.value) and "wb-nowhere" in str(e.value)
        assert "1 attempt(s)" in str(e.value) and "Connection refused" in str(e.value)
        assert not isinstance(e.value, NotFound)


def test_unreachable_endpoint_is_retried_for_a_bounded_time_logging_each_retry(minio_server, caplog,
                                                                               monkeypatch):
    (port,) = free_ports(1)
    cfg = dataclasses.replace(minio_server, endpoint=f"127.0.0.1:{port}", bucket="wb-nowhere")
    monkeypatch.setenv("WB_STORE_RETRY_S", "2.5")
    s = ResultsStore(cfg)
    assert s.retry_s == 2.5
    ops = {"put": lambda: s.put_bytes("k/x.json", b"{}"), "get": lambda: s.get_bytes("k/x.json"),
           "list": lambda: s.list_keys("k/"), "stat": lambda: s.exists("k/x.json"),
           "delete": lambda: s.delete_prefix("k/"), "create": lambda: s.put_trial("r", 0, {"a": 1})}
    for name, op in ops.items():
        caplog.clear()
        t0 = time.monotonic()
        with caplog.at_level("WARNING", logger="workbench.store"), pytest.raises(StoreError) as e:
            op()
        took = time.monotonic() - t0
        assert 2.5 <= took < 4.0, (name, took)                   # the budget, plus one attempt
        assert "WB_STORE_RETRY_S=2.5 s" in str(e.value) and not isinstance(e.value, NotFound)
        lines = [r.getMessage() for r in caplog.records if r.name == "workbench.store"]
        assert len(lines) >= 3, (name, lines)
        for i, line in enumerate(lines, 1):
            assert f"attempt {i} failed" in line and f"127.0.0.1:{port}" in line and "wb-nowhere" in line
            assert "Connection refused" in line and "\n" not in line
            assert cfg.secret_key not in line and cfg.access_key not in line
    for bad in ("soon", "-1", "inf", "1e9"):                          # issue 53: bounded (a day)
        monkeypatch.setenv("WB_STORE_RETRY_S", bad)
        with pytest.raises(StoreError, match=f"WB_STORE_RETRY_S='{bad}': give the retry time in seconds, from 0 to 86400"):
            ResultsStore(cfg)


def test_wrong_credentials(minio_server):
    cfg = dataclasses.replace(minio_server, secret_key="not-the-secret")
    s = ResultsStore(cfg, retry_s=60)                   # an auth error is never retried
    t0 = time.monotonic()
    with pytest.raises(StoreError, match="rejected the credentials") as e:
        s.ensure_bucket()
    assert minio_server.endpoint in str(e.value) and "not-the-secret" not in str(e.value)
    with pytest.raises(StoreError, match="rejected the credentials"):
        s.get_json("x.json", None)  # a default does not hide an auth failure
    assert "not-the-secret" not in repr(cfg)
    assert time.monotonic() - t0 < 5


def test_delete_prefix(store):
    for n in range(3):
        store.put_trial("gone", n, {"raw": None})
    store.put_json(store.rating_key("gone", "result.json"), RESULT)
    store.put_json(store.rating_key("gone2", "result.json"), RESULT)
    assert store.delete_prefix("ratings/gone/") == 4
    assert store.list_keys("ratings/") == ["ratings/gone2/result.json"]
    assert store.delete_prefix("ratings/gone/") == 0


def test_config_from_env_and_env_file(tmp_path):
    env = {"WB_S3_ENDPOINT": "127.0.0.1:9123", "WB_S3_ACCESS_KEY": "ak", "WB_S3_SECRET_KEY": "sk"}
    assert S3Config.from_env(env) == S3Config("127.0.0.1:9123", "ak", "sk", "workbench", False)
    assert S3Config.from_env({**env, "WB_S3_BUCKET": "b2", "WB_S3_SECURE": "true"}) == S3Config(
        "127.0.0.1:9123", "ak", "sk", "b2", True)
    with pytest.raises(StoreError, match="WB_S3_SECRET_KEY"):
        S3Config.from_env({"WB_S3_ENDPOINT": "x:1", "WB_S3_ACCESS_KEY": "ak"})

    f = tmp_path / "env"
    f.write_text("WB_S3_ENDPOINT=127.0.0.1:9124\nWB_S3_ACCESS_KEY=ak2\nWB_S3_SECRET_KEY=s=k\n"
                 "WB_S3_BUCKET=workbench\n")
    assert S3Config.from_env_file(f) == S3Config("127.0.0.1:9124", "ak2", "s=k")
    with pytest.raises(StoreError, match="env file"):
        S3Config.from_env_file(tmp_path / "missing")
    # resolve without Airflow (not imported here: it would fix AIRFLOW_HOME for the session)
    assert S3Config.resolve(conn_id=None, env=env, env_file=f).endpoint == "127.0.0.1:9123"
    assert S3Config.resolve(conn_id=None, env={}, env_file=f).endpoint == "127.0.0.1:9124"
    with pytest.raises(StoreError, match="minio.sh up"):
        S3Config.resolve(conn_id=None, env={}, env_file=tmp_path / "missing")


def test_config_from_airflow_connection(tmp_path):
    """A real Airflow without a metadata DB, in a subprocess: the connection comes from
    AIRFLOW_CONN_WORKBENCH_S3 and wins in resolve(); an absent one falls back to env, then file."""
    conn = {"conn_type": "aws", "host": "http://10.0.0.5", "port": 9200, "login": "u",
            "password": "p@ss-word", "extra": {"bucket": "bk", "secure": "false"}}
    envfile = tmp_path / "env"
    envfile.write_text("WB_S3_ENDPOINT=127.0.0.1:9124\nWB_S3_ACCESS_KEY=fa\nWB_S3_SECRET_KEY=fs\n")
    code = f"""
from workbench.store.s3 import S3Config, StoreError
show = lambda c: print("RESULT", c.endpoint, c.access_key, c.secret_key, c.bucket, c.secure)
show(S3Config.resolve(env={{}}))
show(S3Config.resolve("wb_absent", env={{"WB_S3_ENDPOINT": "e:1", "WB_S3_ACCESS_KEY": "a",
                                         "WB_S3_SECRET_KEY": "s"}}))
show(S3Config.resolve("wb_absent", env={{}}, env_file={str(envfile)!r}))
try:
    S3Config.from_airflow("wb_absent")
except StoreError as e:
    print("RESULT", "wb_absent" in str(e))
"""
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path), "AIRFLOW_CONN_WORKBENCH_S3": json.dumps(conn)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [line.split()[1:] for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines == [["10.0.0.5:9200", "u", "p@ss-word", "bk", "False"],
                     ["e:1", "a", "s", "workbench", "False"],
                     ["127.0.0.1:9124", "fa", "fs", "workbench", "False"], ["True"]]


def test_minio_sh_up_is_idempotent(minio_server, minio_dir, tmp_path):
    """A second `up` on a running MinIO prints the same env lines; status works; bad args fail."""
    d = minio_dir
    again = subprocess.run([str(MINIO_SH), "up", "--dir", str(d)], capture_output=True, text=True,
                           timeout=60)
    assert again.returncode == 0, again.stderr
    assert S3Config.from_env(dict(l.split("=", 1) for l in again.stdout.splitlines())) == minio_server
    assert oct((d / "env").stat().st_mode & 0o777) == "0o600"
    st = subprocess.run([str(MINIO_SH), "status", "--dir", str(d)], capture_output=True, text=True)
    assert st.returncode == 0 and minio_server.endpoint in st.stdout
    bad = subprocess.run([str(MINIO_SH), "up", "--dir", str(tmp_path), "--port", "x"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "--port" not in bad.stdout and "ports must be" in bad.stderr
    none = subprocess.run([str(MINIO_SH), "status", "--dir", str(tmp_path)], capture_output=True,
                          text=True)
    assert none.returncode != 0 and "not running" in none.stderr



# -- transient failures: a scripted S3 endpoint and a proxy that loses an answer ------------------

def _s3_error(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message>'
            f'<Key>k</Key><BucketName>b</BucketName><Resource>/b/k</Resource><RequestId>1</RequestId>'
            f'<HostId>h</HostId></Error>').encode()


class _Scripted:
    """An HTTP endpoint answering each request with the next (status, body) of `script` (the last
    one repeats), counting requests: what urllib3 sends, not what our loop thinks it sent."""

    def __init__(self, script):
        self.script, self.requests = list(script), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests.append(f"{self.command} {self.path}")
                status, body = outer.script[min(len(outer.requests), len(outer.script)) - 1]
                self.send_response(status)
                self.send_header("Content-Type", "application/xml" if status >= 300 else "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            do_HEAD = do_PUT = do_GET

            def log_message(self, *a):
                pass
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def store(self, **kw) -> ResultsStore:
        cfg = S3Config(f"127.0.0.1:{self.server.server_address[1]}", "AKTEST", "SECRETTEST", bucket="bkt")
        return ResultsStore(cfg, **kw)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("status, code", [(503, "SlowDown"), (503, "XMinioServerNotInitialized"),
                                          (500, "InternalError")])
def test_transient_answers_are_retried_one_request_per_attempt(status, code, caplog):
    srv = _Scripted([(status, _s3_error(code, "not now")), (status, _s3_error(code, "not now")),
                     (200, b"hello")])
    pauses = []
    try:
        s = srv.store(retry_s=30, sleep=pauses.append)
        with caplog.at_level("WARNING", logger="workbench.store"):
            assert s.get_bytes("k") == b"hello"
    finally:
        srv.close()
    assert srv.requests == ["GET /bkt/k"] * 3               # urllib3 retried nothing by itself
    assert len(pauses) == 2 and 0.25 <= pauses[0] <= 0.5 and 0.5 <= pauses[1] <= 1.0   # backoff + jitter
    lines = [r.getMessage() for r in caplog.records if r.name == "workbench.store"]
    assert len(lines) == 2 and all(code in line and "get k" in line for line in lines)
    assert not any("SECRETTEST" in line or "AKTEST" in line for line in lines)


@pytest.mark.parametrize("status, code, exc", [(403, "AccessDenied", StoreError), (404, "NoSuchKey", NotFound),
                                               (403, "SignatureDoesNotMatch", StoreError),
                                               (400, "InvalidArgument", StoreError)])
def test_auth_missing_and_client_errors_are_not_retried(status, code, exc):
    srv = _Scripted([(status, _s3_error(code, "no")), (200, b"never")])
    pauses = []
    try:
        with pytest.raises(exc, match=code):
            srv.store(retry_s=30, sleep=pauses.append).get_bytes("k")
    finally:
        srv.close()
    assert len(srv.requests) == 1 and pauses == []


class _LoseAnswer:
    """A TCP proxy to MinIO that forwards everything, except that the answer to the first PUT is
    awaited (the object is written) and then dropped: the client's connection closes instead."""

    def __init__(self, upstream: str):
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.lost = 0
        self._armed = 1
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._pipe, args=(c,), daemon=True).start()

    def _pipe(self, c):
        u = socket.create_connection(self.upstream)
        drop = threading.Event()

        def up():
            try:
                while data := c.recv(65536):
                    if data.startswith(b"PUT ") and self._armed:
                        self._armed -= 1
                        drop.set()
                    u.sendall(data)
            except OSError:
                pass
        threading.Thread(target=up, daemon=True).start()
        try:
            while data := u.recv(65536):
                if drop.is_set():            # MinIO has answered: the object is there
                    self.lost += 1
                    break
                c.sendall(data)
        except OSError:
            pass
        for s in (c, u):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.sock.close()


def test_a_trial_write_whose_answer_was_lost_is_retried_and_succeeds(store, caplog):
    proxy = _LoseAnswer(store.config.endpoint)
    try:
        via = ResultsStore(dataclasses.replace(store.config, endpoint=f"127.0.0.1:{proxy.port}"), retry_s=20)
        rec = dict(TRIALS[1], decision="bisect")
        with caplog.at_level("WARNING", logger="workbench.store"):
            key = via.put_trial("lost", 1, rec)
    finally:
        proxy.close()
    assert proxy.lost == 1
    assert store.get_json(key) == {**rec, "n": 1} and store.list_keys("ratings/lost/") == [key]
    lines = [r.getMessage() for r in caplog.records if r.name == "workbench.store"]
    assert len(lines) == 1 and "create ratings/lost/trials/00001.json" in lines[0] and "attempt 1" in lines[0]
