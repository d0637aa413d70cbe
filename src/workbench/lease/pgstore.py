"""Leases in Postgres: one row per slot of ``workbench_leases`` in the database the deployment
    shares.

The row keeps the lease (JSON; NULL when the slot is free), the heartbeat (the database's clock, so
hosts whose clocks differ agree on a heartbeat's age) and the slot's fencing sequence. `locked`
opens a transaction holding the advisory lock of (slot, lock name) — taken with
``pg_try_advisory_xact_lock`` in a bounded loop, released by the commit or by the connection's end
if the holder dies — and the operations inside the block run in that transaction; outside a block,
each runs on its own.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg2

LOCK_WAIT_S = 30.0  # as lease.store (which imports this module)

CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_MS = 30_000
# A connection whose route is lost fails within about 10 s instead of blocking its call for the
# kernel's 15-minute retransmission limit (libpq's keepalives and TCP_USER_TIMEOUT, in ms);
# statement_timeout only bounds what the server sees.
TCP_OPTIONS: dict[str, Any] = dict(
    keepalives=1,
    keepalives_idle=5,
    keepalives_interval=2,
    keepalives_count=3,
    tcp_user_timeout=10_000,
)
SCHEMA = """CREATE TABLE IF NOT EXISTS workbench_leases (
  slot text PRIMARY KEY, lease jsonb, heartbeat timestamptz, seq bigint NOT NULL DEFAULT 0)"""


class PgStore:
    shared = True

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._local = threading.local()  # this thread's open lock transactions, innermost last
        self._ready = False

    def where(self, slot: str) -> str:
        # no password in messages: neither the user's part nor a ?password= parameter
        host = self.dsn.split("://", 1)[-1].rsplit("@", 1)[-1].split("?", 1)[0]
        return f"postgresql://…@{host} workbench_leases[{slot}]"

    def _connect(self) -> Any:
        conn = psycopg2.connect(
            self.dsn,
            connect_timeout=CONNECT_TIMEOUT_S,
            options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
            **TCP_OPTIONS,
        )
        if not self._ready:
            with conn, conn.cursor() as cur:
                # one creator
                cur.execute("SELECT pg_advisory_xact_lock(hashtext('workbench_leases'))")
                cur.execute(SCHEMA)
            self._ready = True
        return conn

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[Any]:
        stack = getattr(self._local, "stack", [])
        if stack:  # inside `locked`: its transaction
            with stack[-1].cursor() as cur:
                yield cur
            return
        conn = self._connect()
        try:
            with conn, conn.cursor() as cur:
                yield cur
        finally:
            conn.close()

    @contextlib.contextmanager
    def locked(self, slot: str, lock: str = "lock", wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
        conn = self._connect()
        deadline = time.monotonic() + wait_s
        try:
            with conn:
                with conn.cursor() as cur:
                    while True:
                        cur.execute(
                            "SELECT pg_try_advisory_xact_lock(hashtext('workbench'), hashtext(%s))",
                            (f"{slot}.{lock}",),
                        )
                        if cur.fetchone()[0]:
                            break
                        if time.monotonic() > deadline:
                            raise TimeoutError(
                                f"{self.where(slot)} ({lock}) still locked after {wait_s:g} s"
                            )
                        time.sleep(0.05)
                self._local.stack = [*getattr(self._local, "stack", []), conn]
                try:
                    yield
                finally:
                    self._local.stack = self._local.stack[:-1]
        finally:
            conn.close()

    def read(self, slot: str) -> dict[str, Any] | None:
        with self._cursor() as cur:
            cur.execute(
                "SELECT lease, extract(epoch FROM clock_timestamp() - heartbeat) FROM "
                "workbench_leases WHERE slot = %s AND lease IS NOT NULL",
                (slot,),
            )
            row = cur.fetchone()
        if row is None:
            return None
        lease = row[0] if isinstance(row[0], dict) else json.loads(row[0])
        return {**lease, "heartbeat_unix": time.time() - float(row[1])}

    def write(self, slot: str, lease: dict[str, Any]) -> None:
        body = json.dumps({k: v for k, v in lease.items() if k != "heartbeat_unix"})
        with self._cursor() as cur:
            cur.execute(
                "INSERT INTO workbench_leases (slot, lease, heartbeat) VALUES (%s, %s, "
                "clock_timestamp()) ON CONFLICT (slot) DO UPDATE SET lease = EXCLUDED.lease, "
                "heartbeat = EXCLUDED.heartbeat",
                (slot, body),
            )

    def delete(self, slot: str) -> None:
        with self._cursor() as cur:
            cur.execute("UPDATE workbench_leases SET lease = NULL WHERE slot = %s", (slot,))

    def next_token(self, slot: str) -> int:
        with self._cursor() as cur:
            cur.execute(
                "INSERT INTO workbench_leases (slot, seq) VALUES (%s, 1) ON CONFLICT (slot) "
                "DO UPDATE SET seq = workbench_leases.seq + 1 RETURNING seq",
                (slot,),
            )
            return int(cur.fetchone()[0])

    def touch(self, slot: str) -> None:
        with self._cursor() as cur:
            cur.execute(
                "UPDATE workbench_leases SET heartbeat = clock_timestamp() WHERE slot = %s", (slot,)
            )
