"""The S3/MinIO backend of the results store: credentials from an Airflow connection, the
environment or the local MinIO's env file; client errors turned into StoreError naming where."""
from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

import urllib3
from minio import Minio
from minio.deleteobjects import DeleteObject
from minio.error import MinioException, S3Error

from workbench.config.paths import MINIO_ENV_FILE
from workbench.pipeline.store import MISSING, NotFound, Store, StoreError, check_key

_AUTH_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken"}
_MISSING_CODES = {"NoSuchKey", "NoSuchBucket", "NoSuchObject"}


def _truthy(v: Any) -> bool:
    return str(v).strip().lower() in {"1", "true", "yes", "on"}


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
    def from_env_file(cls, path: str | Path = MINIO_ENV_FILE) -> "S3Config":
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
                env_file: str | Path = MINIO_ENV_FILE) -> "S3Config":
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


class ResultsStore(Store):
    """Objects of one bucket on S3/MinIO. No network until first use."""

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

    # -- objects ---------------------------------------------------------------------------
    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        """Write (or overwrite) one object; creates the bucket on first need. Returns the key."""
        check_key(key)
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



def open_store() -> ResultsStore:
    """The results store: Airflow connection `workbench_s3`, else WB_S3_*, else the local MinIO."""
    store = ResultsStore(S3Config.resolve())
    store.ensure_bucket()          # fails fast, naming endpoint and bucket, when MinIO is down
    return store
