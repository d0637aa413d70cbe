"""Where leases live: a store every entry point of a deployment shares.

* `FileStore` — one JSON file per slot under ``<WORKDIR>/leases``, every change under an exclusive
  ``flock``: the embedded, single-host default. The directory is this host's own, so it is safe only
  when every rating of the deployment runs on this host (the Celery stack refuses it for several
  workers).
* `PgStore` (lease.pgstore) — one row per slot in the Postgres the deployment already shares (the
  Celery stack's metadata database), changes under a transaction-scoped advisory lock.

`lease_store()` picks one from ``WB_LEASE_STORE``: unset or ``file`` → the file store,
``postgresql://user:password@host:port/db`` → Postgres; unset on a host whose Celery stack is up,
the stack's store (it announces it in ``paths.HOST_LEASE_STORE``), so every entry point of the
host leases in one place. Every store offers the same operations:
`locked` (mutual exclusion of the changes of one slot, waited for a bounded time), `read` (the lease
with ``heartbeat_unix`` on this host's clock, or None), `write` (also a heartbeat), `delete`,
`next_token` (the slot's fencing sequence) and `touch` (the heartbeat).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from workbench.config import paths

LOCK_WAIT_S = 30.0  # a lease's lock is held for a read and a write


class LeaseStore(Protocol):
    shared: bool  # visible to every host of the deployment

    def where(self, slot: str) -> str: ...
    def locked(
        self, slot: str, lock: str = "lock", wait_s: float = LOCK_WAIT_S
    ) -> contextlib.AbstractContextManager[None]: ...
    def read(self, slot: str) -> dict[str, Any] | None: ...
    def write(self, slot: str, lease: dict[str, Any]) -> None: ...
    def delete(self, slot: str) -> None: ...
    def next_token(self, slot: str) -> int: ...
    def touch(self, slot: str) -> None: ...


class FileStore:
    """Leases as files of this host (see the module docstring); `root` follows paths.LEASES."""

    shared = False

    def __init__(self, root: Path | None = None) -> None:
        self._root = root

    @property
    def root(self) -> Path:
        return self._root or paths.LEASES

    def where(self, slot: str) -> str:
        return str(self.root / slot)

    @contextlib.contextmanager
    def locked(self, slot: str, lock: str = "lock", wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
        """An exclusive flock of ``<slot>.<lock>`` (a process's own opens exclude each other too),
        waited for at most `wait_s` (TimeoutError naming the file)."""
        paths.private_dir(self.root.parent)  # the state directory: ours alone, 0700
        self.root.mkdir(parents=True, exist_ok=True)
        f = self.root / f"{slot}.{lock}"
        deadline = time.monotonic() + wait_s
        with open(f, "a") as fh:
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{f} still locked after {wait_s:g} s") from None
                    time.sleep(0.05)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def read(self, slot: str) -> dict[str, Any] | None:
        f = self.root / slot
        try:
            text, mtime = f.read_text(), f.stat().st_mtime
        except FileNotFoundError:
            return None
        try:
            lease = json.loads(text)
        except ValueError:  # a lease of the old text format (rating id, workdir): treat as a holder
            lines = text.splitlines()
            lease = {"rating_id": lines[0].strip() if lines else "", "token": 0, "holder": {}}
        return {**lease, "heartbeat_unix": mtime}

    def _replace(self, name: str, text: str) -> None:
        """`name` under root holds `text`, atomically and on disk (a token must not be reissued
        after a crash)."""
        tmp = self.root / f".{name}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.root / name)

    def write(self, slot: str, lease: dict[str, Any]) -> None:
        self._replace(
            slot, json.dumps({k: v for k, v in lease.items() if k != "heartbeat_unix"}, indent=1)
        )

    def delete(self, slot: str) -> None:
        (self.root / slot).unlink(missing_ok=True)

    def next_token(self, slot: str) -> int:
        seq = self.root / f"{slot}.seq"
        n = int(seq.read_text() or 0) + 1 if seq.exists() else 1
        self._replace(seq.name, str(n))
        return n

    def touch(self, slot: str) -> None:
        os.utime(self.root / slot)


class LeaseConfigError(ValueError):
    """A WB_LEASE_* setting the workbench refuses (the message names the variable)."""


_PG: dict[str, LeaseStore] = {}


def _hidden(spec: str) -> str:
    """A store's address without its password (or anything after the scheme)."""
    return spec.split("://")[0][:20] + "://…" if "://" in spec else repr(spec[:40])


def host_store_spec() -> str:
    """The lease store this host's Celery stack announced (paths.HOST_LEASE_STORE, written by
    `celery-stack.sh up`, removed by `down`), or "" when none; LeaseConfigError when it cannot be
    read (never a silent fall-back to this host's files while the stack leases elsewhere)."""
    f = paths.HOST_LEASE_STORE
    try:
        return f.read_text().strip()
    except FileNotFoundError:
        return ""
    except OSError as e:
        raise LeaseConfigError(
            f"{f}: the lease store of this host's Celery stack cannot be read ({e.strerror}); run "
            "as the stack's user, or set WB_LEASE_STORE to its store"
        ) from None


def store_spec() -> str:
    """The lease store: WB_LEASE_STORE, else the one this host's Celery stack announced
    (host_store_spec), else "" (the file store); a postgresql:// address or "". LeaseConfigError
    naming the variable (never the password) for anything else, and for a WB_LEASE_STORE other
    than the stack's: two stores on one host let two ratings load one slot."""
    given = os.environ.get("WB_LEASE_STORE", "").strip()
    host = host_store_spec()
    if given and host and given != host:
        raise LeaseConfigError(
            f"WB_LEASE_STORE={_hidden(given)} is not the lease store of this host's Celery stack "
            f"({_hidden(host)}, {paths.HOST_LEASE_STORE}): two stores would let two ratings load "
            "one slot; unset WB_LEASE_STORE"
        )
    spec = given or host
    if spec in ("", "file"):
        return ""
    if spec.startswith(("postgresql://", "postgres://")) and len(spec) <= 1000:
        return spec
    raise LeaseConfigError(
        "WB_LEASE_STORE must be 'file' (this host's directory, one host only) or "
        f"postgresql://USER:PASSWORD@HOST:PORT/DB (shared by every host), not {_hidden(spec)}"
    )


def lease_store() -> LeaseStore:
    """The store WB_LEASE_STORE names (module docstring)."""
    spec = store_spec()
    if not spec:
        return FileStore()
    if spec not in _PG:
        from workbench.lease.pgstore import PgStore

        _PG[spec] = PgStore(spec)
    return _PG[spec]
