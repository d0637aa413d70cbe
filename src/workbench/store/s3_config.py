"""Where the S3/MinIO results store lives (`S3Config`: endpoint, credentials, bucket, TLS): from an
Airflow connection, the environment (WB_S3_*) or the local MinIO's env file."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.config.paths import MINIO_ENV_FILE
from workbench.store.base import StoreError


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
    def from_env(cls, env: Mapping[str, str] = os.environ) -> S3Config:
        """From WB_S3_ENDPOINT, WB_S3_ACCESS_KEY, WB_S3_SECRET_KEY [, WB_S3_BUCKET,
        WB_S3_SECURE]."""
        need = ["WB_S3_ENDPOINT", "WB_S3_ACCESS_KEY", "WB_S3_SECRET_KEY"]
        missing = [k for k in need if not env.get(k)]
        if missing:
            raise StoreError(f"results store not configured: {', '.join(missing)} not set")
        return cls(
            endpoint=env["WB_S3_ENDPOINT"],
            access_key=env["WB_S3_ACCESS_KEY"],
            secret_key=env["WB_S3_SECRET_KEY"],
            bucket=env.get("WB_S3_BUCKET") or "workbench",
            secure=_truthy(env.get("WB_S3_SECURE", "")),
        )

    @classmethod
    def from_env_file(cls, path: str | Path = MINIO_ENV_FILE) -> S3Config:
        """From a KEY=VALUE file as written by scripts/minio.sh."""
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise StoreError(f"cannot read the MinIO env file {path}: {e.strerror}") from None
        env = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        return cls.from_env({k.strip().removeprefix("export "): v.strip() for k, v in env.items()})

    @classmethod
    def from_airflow(cls, conn_id: str = "workbench_s3") -> S3Config:
        """From an Airflow connection (host, port, login, password, extra {bucket, secure})."""
        try:
            try:
                from airflow.sdk import BaseHook
            except ImportError:  # Airflow 2's place, which the pinned Airflow 3's stubs lack
                from airflow.hooks.base import BaseHook  # type: ignore[attr-defined,no-redef]
            conn = BaseHook.get_connection(conn_id)
        except Exception as e:  # not installed, not defined, no metadata DB ...
            raise StoreError(f"Airflow connection {conn_id!r} unavailable: {e}") from None
        extra = conn.extra_dejson or {}
        host = re.sub(r"^https?://", "", conn.host or "").rstrip("/")
        if not host or not conn.login or not conn.password:
            raise StoreError(f"Airflow connection {conn_id!r} needs host, login and password")
        secure = _truthy(extra.get("secure", False))
        return cls(
            endpoint=f"{host}:{conn.port}" if conn.port else host,
            access_key=conn.login,
            secret_key=conn.password,
            bucket=extra.get("bucket") or "workbench",
            secure=secure,
        )

    @classmethod
    def resolve(
        cls,
        conn_id: str | None = "workbench_s3",
        env: Mapping[str, str] = os.environ,
        env_file: str | Path = MINIO_ENV_FILE,
    ) -> S3Config:
        """The Airflow connection if defined, else WB_S3_* from env, else the local MinIO's env
        file.

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
        raise StoreError(
            "no results store configured (run scripts/minio.sh up): " + "; ".join(errors)
        )
