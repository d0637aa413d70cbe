"""The results store against a real MinIO (scripts/minio.sh, started by the minio_server fixture)."""
from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest_store import MINIO_SH, free_ports

from workbench.pipeline.s3store import NotFound, ResultsStore, S3Config, StoreError

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


def test_trial_keys_are_deterministic_and_rewrite_is_idempotent(store):
    rid = "rate_peak__manual__2026-11-22T05.00.00"
    first = dict(TRIALS[0], decision="first attempt")
    k1 = store.put_trial(rid, 0, first)
    assert k1 == f"ratings/{rid}/trials/00000.json" == store.trial_key(rid, 0)
    k2 = store.put_trial(rid, 0, dict(TRIALS[0], decision="retry"))
    assert k2 == k1
    assert store.list_keys(f"ratings/{rid}/trials/") == [k1]
    assert store.get_json(k1)["decision"] == "retry"
    assert store.get_json(k1)["raw"] == TRIALS[0]["raw"]
    with pytest.raises(ValueError, match="n=0"):
        store.put_trial(rid, 3, TRIALS[0])  # record says n=0


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
        store.put_trial(rid, rec["n"], dict(rec, raw=raw))
    df = store.trials_df(rid)
    assert list(df["n"]) == [0, 1, 2]
    assert df["host_steal_pct"].iloc[1] == 2.5 and df["host_steal_pct"].iloc[[0, 2]].isna().all()
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


def test_link_between_reports_is_relative():
    night, rating = "nightly/2026-11-22/report.html", "ratings/nightly-web-1/report.html"
    assert ResultsStore.link(night, rating) == "../../ratings/nightly-web-1/report.html"
    assert ResultsStore.link("surfaces/sw1/report.html", "surfaces/sw1/plots/a.png") == "plots/a.png"
    assert ResultsStore.link("top.html", "ratings/r/report.html") == "ratings/r/report.html"
    with pytest.raises(ValueError, match="bad object name"):
        ResultsStore.link(night, "../etc/passwd")


def test_unreachable_endpoint_fails_fast(minio_server):
    (port,) = free_ports(1)  # nothing listens there
    cfg = dataclasses.replace(minio_server, endpoint=f"127.0.0.1:{port}", bucket="wb-nowhere")
    s = ResultsStore(cfg)  # constructing does not touch the network
    for op in (s.ensure_bucket, lambda: s.put_json("x.json", {}), lambda: s.get_json("x.json", None)):
        t0 = time.monotonic()
        with pytest.raises(StoreError) as e:
            op()
        assert time.monotonic() - t0 < 5
        assert f"127.0.0.1:{port}" in str(e.value) and "wb-nowhere" in str(e.value)
        assert not isinstance(e.value, NotFound)


def test_wrong_credentials(minio_server):
    cfg = dataclasses.replace(minio_server, secret_key="not-the-secret")
    s = ResultsStore(cfg)
    with pytest.raises(StoreError, match="rejected the credentials") as e:
        s.ensure_bucket()
    assert minio_server.endpoint in str(e.value) and "not-the-secret" not in str(e.value)
    with pytest.raises(StoreError, match="rejected the credentials"):
        s.get_json("x.json", None)  # a default does not hide an auth failure
    assert "not-the-secret" not in repr(cfg)


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
from workbench.pipeline.s3store import S3Config, StoreError
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

