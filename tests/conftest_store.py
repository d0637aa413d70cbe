"""Store fixtures: a real MinIO (scripts/minio.sh) per session, a fresh bucket per test.

Registered from tests/conftest.py with `pytest_plugins = ["conftest_store"]`.
"""
from __future__ import annotations

import dataclasses
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

from workbench.store.s3 import ResultsStore, S3Config

MINIO_SH = Path(__file__).resolve().parent.parent / "scripts" / "minio.sh"

__all__ = ["MINIO_SH", "free_ports", "minio_dir", "minio_server", "store"]


def free_ports(k: int) -> list[int]:
    """k distinct TCP ports that are free on 127.0.0.1 right now."""
    socks = []
    try:
        for _ in range(k):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@pytest.fixture(scope="session")
def minio_dir(tmp_path_factory) -> Path:
    """The --dir of the session's MinIO (data/, env, minio.log, minio.pid)."""
    return tmp_path_factory.mktemp("minio")


@pytest.fixture(scope="session")
def minio_server(minio_dir) -> S3Config:
    """A real MinIO on 127.0.0.1 (free port, temp data dir) for the whole session."""
    d = minio_dir
    port, console = free_ports(2)
    out = subprocess.run([str(MINIO_SH), "up", "--dir", str(d), "--port", str(port),
                          "--console-port", str(console)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"minio.sh up failed: {out.stderr.strip()}"
    env = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    try:
        yield S3Config.from_env(env)
    finally:
        subprocess.run([str(MINIO_SH), "down", "--dir", str(d)], capture_output=True, timeout=30)


@pytest.fixture
def store(minio_server) -> ResultsStore:
    """A ResultsStore on a fresh, existing bucket of the session's MinIO."""
    cfg = dataclasses.replace(minio_server, bucket=f"wb-test-{uuid.uuid4().hex[:12]}")
    s = ResultsStore(cfg)
    s.ensure_bucket()
    return s
