"""Where things are: the repository's folders, the fstress binary, the workbench's state directory.

Everything else derives its paths from these names; the state directory follows ``WB_WORKDIR``.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
FSTRESS = REPO / "bin" / "fstress"
PLAYBOOKS = REPO / "playbooks"
DAGS = REPO / "dags"
DEFAULT_INVENTORY = REPO / "inventory" / "local" / "hosts.yml"

WORKDIR = Path(os.environ.get("WB_WORKDIR", "/tmp/workbench"))   # local state of this workbench
LEASES = WORKDIR / "leases"                                       # one lease file per SUT slot
MINIO_ENV_FILE = Path("/tmp/workbench/minio/env")                 # written by scripts/minio.sh


def rating_dir(rating_id: str) -> Path:
    """A rating's local working directory: playbook runs, fstress JSON, the report's copy."""
    return WORKDIR / "ratings" / rating_id
