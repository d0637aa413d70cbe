"""The results store: ratings, trials, surfaces and nightly results as objects in MinIO (S3).

Layout (keys follow from validated ids, so a retried task rewrites the same object):
  ratings/<rating_id>/{spec,result,sysinfo,gx}.json, trials/<n:05d>.json, trials.parquet, ...
  surfaces/<sweep_id>/<name>, nightly/<YYYY-MM-DD>/<name>
"""
from __future__ import annotations

import io
import json
import mimetypes
import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

import urllib3
from minio import Minio
from minio.deleteobjects import DeleteObject
from minio.error import MinioException, S3Error

ENV_FILE = Path("/tmp/workbench/minio/env")  # written by scripts/minio.sh
JSON_TYPE = "application/json"
PARQUET_TYPE = "application/vnd.apache.parquet"
_TYPES = {".parquet": PARQUET_TYPE, ".jsonl": "application/x-ndjson", ".json": JSON_TYPE}
_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
_TRIAL = re.compile(r"(\d{5,})\.json")
_AUTH_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken"}
_MISSING_CODES = {"NoSuchKey", "NoSuchBucket", "NoSuchObject"}


class StoreError(RuntimeError):
    """The store cannot be reached or refuses us; the message names endpoint and bucket."""


class NotFound(StoreError, KeyError):
    """No object under that key."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


MISSING: Any = object()


def _truthy(v: Any) -> bool:
    return str(v).strip().lower() in {"1", "true", "yes", "on"}


def check_id(value: str, what: str = "id") -> str:
    """Return `value` if it is a safe id ([A-Za-z0-9._-], 1..128 chars, not . or ..)."""
    if not isinstance(value, str) or not _ID.fullmatch(value) or value in {".", ".."}:
        raise ValueError(f"bad {what} {value!r}: use 1-128 of [A-Za-z0-9._-]")
    return value


def _check_name(name: str) -> str:
    parts = name.split("/")
    if name.startswith("/") or any(p in {".", ".."} for p in parts) or "" in parts[:-1]:
        raise ValueError(f"bad object name {name!r}: relative path without '.', '..' or '//'")
    return name


@dataclass(frozen=True)
class S3Config:
    """Where the store lives: endpoint "host:port", credentials, bucket."""

    endpoint: str
    access_key: str
    secret_key: str
    bucket: str = "workbench"
    secure: bool = False

    def __repr__(self) -> str:  # keep the secret out of logs
        return f"S3Config(endpoint={self.endpoint!r}, bucket={self.bucket!r}, secure={self.secure})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> "S3Config":
        """From WB_S3_ENDPOINT, WB_S3_ACCESS_KEY, WB_S3_SECRET_KEY [, WB_S3_BUCKET, WB_S3_SECURE]."""
        need = ["WB_S3_ENDPOINT", "WB_S3_ACCESS_KEY", "WB_S3_SECRET_KEY"]
        missing = [k for k in need if not env.get(k)]
        if missing:
            raise StoreError(f"results store not configured: {', '.join(missing)} not set")
        return cls(endpoint=env["WB_S3_ENDPOINT"], access_key=env["WB_S3_ACCESS_KEY"],
                   secret_key=env["WB_S3_SECRET_KEY"], bucket=env.get("WB_S3_BUCKET") or "workbench",
                   secure=_truthy(env.get("WB_S3_SECURE", "")))

    @classmethod
    def from_env_file(cls, path: str | Path = ENV_FILE) -> "S3Config":
        """From a KEY=VALUE file as written by scripts/minio.sh."""
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise StoreError(f"cannot read the MinIO env file {path}: {e.strerror}") from None
        env = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        return cls.from_env({k.strip().removeprefix("export "): v.strip() for k, v in env.items()})

    @classmethod
    def from_airflow(cls, conn_id: str = "workbench_s3") -> "S3Config":
        """From an Airflow connection (host, port, login, password, extra {bucket, secure})."""
        try:
            try:
                from airflow.sdk import BaseHook
            except ImportError:
                from airflow.hooks.base import BaseHook
            conn = BaseHook.get_connection(conn_id)
        except Exception as e:  # not installed, not defined, no metadata DB ...
            raise StoreError(f"Airflow connection {conn_id!r} unavailable: {e}") from None
        extra = conn.extra_dejson or {}
        host = re.sub(r"^https?://", "", conn.host or "").rstrip("/")
        if not host or not conn.login or not conn.password:
            raise StoreError(f"Airflow connection {conn_id!r} needs host, login and password")
        secure = _truthy(extra.get("secure", False))
        return cls(endpoint=f"{host}:{conn.port}" if conn.port else host, access_key=conn.login,
                   secret_key=conn.password, bucket=extra.get("bucket") or "workbench", secure=secure)

    @classmethod
    def resolve(cls, conn_id: str | None = "workbench_s3", env: Mapping[str, str] = os.environ,
                env_file: str | Path = ENV_FILE) -> "S3Config":
        """The Airflow connection if defined, else WB_S3_* from env, else the local MinIO's env file.

        conn_id=None skips Airflow (importing it fixes AIRFLOW_HOME for the process)."""
        errors = []
        sources = [lambda: cls.from_env(env), lambda: cls.from_env_file(env_file)]
        if conn_id is not None:
            sources.insert(0, lambda: cls.from_airflow(conn_id))
        for source in sources:
            try:
                return source()
            except StoreError as e:
                errors.append(str(e))
        raise StoreError("no results store configured (run scripts/minio.sh up): " + "; ".join(errors))


def _json_default(o: Any) -> Any:
    if hasattr(o, "tolist"):  # numpy arrays and scalars
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


class ResultsStore:
    """Objects of one bucket; JSON with sorted keys, parquet tables. No network until first use."""

    def __init__(self, config: S3Config, *, timeout_s: float = 10):
        self.config = config
        http = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=min(3.0, timeout_s), read=timeout_s),
            retries=urllib3.Retry(total=2, connect=1, read=1, backoff_factor=0.2,
                                  status_forcelist=(500, 502, 503, 504)),
            maxsize=8)
        self._client = Minio(config.endpoint, access_key=config.access_key,
                             secret_key=config.secret_key, secure=config.secure,
                             region="us-east-1", http_client=http)

    @property
    def bucket(self) -> str:
        return self.config.bucket

    def _where(self) -> str:
        scheme = "https" if self.config.secure else "http"
        return f"S3 endpoint {scheme}://{self.config.endpoint} (bucket {self.bucket!r})"

    @contextmanager
    def _call(self, what: str) -> Iterator[None]:
        """Turn client errors into StoreError / NotFound naming endpoint and bucket."""
        try:
            yield
        except S3Error as e:
            if e.code in _MISSING_CODES:
                raise NotFound(f"{what}: {e.code} at {self._where()}") from None
            if e.code in _AUTH_CODES:
                raise StoreError(f"{what}: {self._where()} rejected the credentials ({e.code}: "
                                 f"{e.message})") from None
            raise StoreError(f"{what}: {self._where()} answered {e.code}: {e.message}") from None
        except (urllib3.exceptions.HTTPError, MinioException, OSError) as e:
            raise StoreError(f"{what}: cannot reach or use {self._where()}: {e}") from None

    def ensure_bucket(self) -> None:
        """Create the bucket if it does not exist."""
        with self._call("ensure bucket"):
            if not self._client.bucket_exists(self.bucket):
                try:
                    self._client.make_bucket(self.bucket)
                except S3Error as e:
                    if e.code not in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
                        raise

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    @staticmethod
    def link(from_key: str, to_key: str) -> str:
        """The href from the object `from_key` (a report) to `to_key`: relative, so it resolves wherever
        the bucket is served or mirrored (`mc mirror`, a MinIO browser path, a local copy)."""
        return posixpath.relpath(_check_name(to_key), posixpath.dirname(_check_name(from_key)) or ".")

    # -- objects ---------------------------------------------------------------------------
    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        """Write (or overwrite) one object; creates the bucket on first need. Returns the key."""
        _check_name(key)
        try:
            with self._call(f"put {key}"):
                self._client.put_object(self.bucket, key, io.BytesIO(data), len(data),
                                        content_type=content_type)
        except NotFound:  # the bucket is missing: create it once and retry
            self.ensure_bucket()
            with self._call(f"put {key}"):
                self._client.put_object(self.bucket, key, io.BytesIO(data), len(data),
                                        content_type=content_type)
        return key

    def put_json(self, key: str, obj: Any) -> str:
        data = json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False, default=_json_default)
        return self.put_bytes(key, data.encode("utf-8"), JSON_TYPE)

    def put_file(self, key: str, path: str | Path, content_type: str | None = None) -> str:
        ctype = (content_type or _TYPES.get(Path(path).suffix)
                 or mimetypes.guess_type(str(path))[0] or "application/octet-stream")
        return self.put_bytes(key, Path(path).read_bytes(), ctype)

    def get_bytes(self, key: str, default: Any = MISSING) -> bytes:
        """The object's content; NotFound (a KeyError) if absent and no default is given."""
        resp = None
        try:
            with self._call(f"get {key}"):
                resp = self._client.get_object(self.bucket, key)
                return resp.read()
        except NotFound:
            if default is MISSING:
                raise
            return default
        finally:
            if resp is not None:
                resp.close()
                resp.release_conn()

    def get_json(self, key: str, default: Any = MISSING) -> Any:
        data = self.get_bytes(key, default=None if default is not MISSING else MISSING)
        if data is None:
            return default
        try:
            return json.loads(data.decode("utf-8"))
        except ValueError as e:
            raise StoreError(f"{self.url(key)} is not valid JSON: {e}") from None

    def exists(self, key: str) -> bool:
        try:
            with self._call(f"stat {key}"):
                self._client.stat_object(self.bucket, key)
            return True
        except NotFound:
            return False

    def list_keys(self, prefix: str = "") -> list[str]:
        """All keys under `prefix`, sorted ([] when the bucket does not exist yet)."""
        try:
            with self._call(f"list {prefix}"):
                return sorted(o.object_name for o in
                              self._client.list_objects(self.bucket, prefix=prefix, recursive=True))
        except NotFound:
            return []

    def delete_prefix(self, prefix: str) -> int:
        """Delete every object under `prefix` (which must not be empty); returns how many."""
        if not prefix:
            raise ValueError("delete_prefix needs a non-empty prefix")
        keys = self.list_keys(prefix)
        with self._call(f"delete {prefix}"):
            errors = list(self._client.remove_objects(self.bucket, (DeleteObject(k) for k in keys)))
        if errors:
            raise StoreError(f"delete {prefix}: {len(errors)} objects not deleted at {self._where()}: "
                             f"{errors[0]}")
        return len(keys)

    # -- layout ----------------------------------------------------------------------------
    def rating_key(self, rating_id: str, name: str) -> str:
        return f"ratings/{check_id(rating_id, 'rating id')}/{_check_name(name)}"

    def surface_key(self, sweep_id: str, name: str) -> str:
        return f"surfaces/{check_id(sweep_id, 'sweep id')}/{_check_name(name)}"

    def nightly_key(self, date_str: str, name: str) -> str:
        return f"nightly/{check_id(date_str, 'date')}/{_check_name(name)}"

    def trial_key(self, rating_id: str, n: int) -> str:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"trial index must be an int >= 0, got {n!r}")
        return self.rating_key(rating_id, f"trials/{n:05d}.json")

    def put_trial(self, rating_id: str, n: int, record: Mapping[str, Any]) -> str:
        """Store trial n of a rating (a retry rewrites the same key). Returns the key."""
        key = self.trial_key(rating_id, n)
        if record.get("n", n) != n:
            raise ValueError(f"trial record says n={record['n']} but is stored as trial {n}")
        return self.put_json(key, {**record, "n": n})

    def trials(self, rating_id: str) -> list[dict]:
        """The rating's trial records ordered by n."""
        prefix = self.rating_key(rating_id, "trials/")
        found = [(int(m.group(1)), k) for k in self.list_keys(prefix)
                 if (m := _TRIAL.fullmatch(k[len(prefix):]))]
        return [self.get_json(k) for _, k in sorted(found)]

    def trials_df(self, rating_id: str, ops: bool = False):
        """One row per trial: the scalar fields (n, decision, mean_ms, ...), `raw` dropped.

        host_steal_pct is fstress's steal share of the load host's CPU time in the measured window
        (the worst load host; None where unknown). With ops=True, per-operation scalars of
        raw["ops"] become columns op_<op>_<field>."""
        import pandas as pd

        rows = []
        for rec in self.trials(rating_id):
            row = {k: v for k, v in rec.items() if k != "raw" and not isinstance(v, (dict, list))}
            raw = rec.get("raw") or {}
            row["host_steal_pct"] = raw.get("host_steal_pct")
            raw_ops = raw.get("ops") or {}
            if ops:
                for op, stats in sorted(raw_ops.items()):
                    row.update({f"op_{op}_{f}": v for f, v in stats.items()
                                if not isinstance(v, (dict, list)) and f != "histogram"})
            rows.append(row)
        df = pd.DataFrame(rows)
        first = [c for c in ("n", "decision") if c in df.columns]
        return df[first + [c for c in df.columns if c not in first]]

    def write_trials_parquet(self, rating_id: str) -> str:
        """trials_df as ratings/<id>/trials.parquet; returns the key."""
        buf = io.BytesIO()
        self.trials_df(rating_id).to_parquet(buf, index=False, engine="pyarrow")
        return self.put_bytes(self.rating_key(rating_id, "trials.parquet"), buf.getvalue(),
                              PARQUET_TYPE)

    def ratings_df(self, prefix: str = "ratings/"):
        """One row per rating with a result.json: its result, workload and spec factors."""
        import pandas as pd

        rows = []
        for key in self.list_keys(prefix):
            rest = key[len(prefix):].split("/")
            if len(rest) != 2 or rest[1] != "result.json":
                continue
            rid = rest[0]
            res = self.get_json(key)
            spec = self.get_json(f"{prefix}{rid}/spec.json", default={}) or {}
            lo, hi = (res.get("bracket") or [None, None])[:2]
            ci_lo, ci_hi = (res.get("peak_rate_ci") or [None, None])[:2]
            row = {"rating_id": rid, "peak_rate": res.get("peak_rate"),
                   "converged": res.get("converged"), "bracket_lo": lo, "bracket_hi": hi,
                   "ci_lo": ci_lo, "ci_hi": ci_hi, "n_trials": res.get("n_trials"),
                   "cost_s": res.get("cost_s"), "mean_ms_at_peak": res.get("mean_ms_at_peak"),
                   "r_sat_ms": res.get("r_sat_ms"), "reason": res.get("reason"),
                   "workload": spec.get("workload"), "profile": spec.get("profile")}
            for f, v in (spec.get("factors") or {}).items():
                row.setdefault(f, v)
            rows.append(row)
        return pd.DataFrame(rows)
