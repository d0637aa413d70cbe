"""The environment a child process inherits: this process's, less the credentials a child that does
not need them must never hold (issue 53: the fstress agents and the detached teardown inherited the
Postgres password, the S3 secret and Airflow's Fernet key)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

# Names that carry a credential: secrets, passwords, keys, tokens, and the connection strings that
# embed one (Airflow's database and Celery's broker and backend, Airflow connections, the lease
# store's Postgres address).
SECRET_NAME = re.compile(
    r"SECRET|PASSW(OR)?D|TOKEN|FERNET|_KEY$|SQL_ALCHEMY_CONN|RESULT_BACKEND|BROKER_URL"
    r"|^AIRFLOW_CONN_|^WB_LEASE_STORE$"
)


def child_env(keep: Iterable[str] = (), env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) without the names SECRET_NAME matches, but those in `keep`
    (what this child needs, e.g. the detached teardown's WB_LEASE_STORE)."""
    kept = set(keep)
    src = os.environ if env is None else env
    return {k: v for k, v in src.items() if k in kept or not SECRET_NAME.search(k)}
