"""Where things are: the repository's folders, the fstress binary, the workbench's state directory.

Everything else derives its paths from these names; the state directory follows ``WB_WORKDIR``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
FSTRESS = REPO / "bin" / "fstress"
CANNED_WORKLOADS_DIR = REPO / "loadgen" / "internal" / "workload" / "canned"  # embedded in fstress
PLAYBOOKS = REPO / "playbooks"
DAGS = REPO / "dags"
DEFAULT_INVENTORY = REPO / "inventory" / "local" / "hosts.yml"

WORKDIR = Path(os.environ.get("WB_WORKDIR", "/tmp/workbench"))  # local state of this workbench
LEASES = WORKDIR / "leases"  # one lease file per SUT slot
MINIO_ENV_FILE = Path("/tmp/workbench/minio/env")  # written by scripts/minio.sh
# What this host's deployment announces to every entry point (scripts/celery-stack.sh): the lease
# store its workers use. Under /run: gone with the stack at a reboot.
HOST_STATE = Path(os.environ.get("WB_HOST_STATE", "/run/workbench"))
HOST_LEASE_STORE = HOST_STATE / "lease-store"


def private_dir(path: Path) -> Path:
    """`path` made if missing (mode 0700) and checked: a real directory owned by this user, then
    0700. Root runs playbooks and reads credentials under the state directory, so one that another
    user made first (e.g. under world-writable /tmp) is refused (PermissionError naming why)."""
    if path.is_symlink():
        raise PermissionError(f"refusing state directory {path}: it is a symbolic link")
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise PermissionError(
            f"refusing state directory {path}: owned by uid {st.st_uid}, not by us "
            f"({os.geteuid()}), or not a directory"
        )
    if stat.S_IMODE(st.st_mode) != 0o700:
        path.chmod(0o700)
    return path


def state_dir() -> Path:
    """WORKDIR, checked by private_dir (everything of the workbench's local state is beneath it)."""
    return private_dir(WORKDIR)


def rating_dir(rating_id: str) -> Path:
    """A rating's local working directory: playbook runs, fstress JSON, the report's copy."""
    return WORKDIR / "ratings" / rating_id
