"""Shared fixtures: paths, the fstress binary and a real Ganesha server slot."""
from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest_plugins = ["conftest_store"]      # minio_server / store fixtures (real MinIO)

# Airflow reads AIRFLOW_HOME once, at its first import: fix it for the whole session before any
# test imports airflow (the DAG tests run dag.test() in-process on this home's SQLite database).
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="wb-test-airflow-"))
os.environ["AIRFLOW_HOME"] = str(_AIRFLOW_HOME)
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(Path(__file__).resolve().parent.parent / "dags")

REPO = Path(__file__).resolve().parent.parent
FSTRESS = REPO / "bin" / "fstress"
SLOT_SCRIPT = REPO / "scripts" / "ganesha-slot.sh"


@dataclass(frozen=True)
class GaneshaSlot:
    """A running Ganesha in its own network namespace; commands reach it via `exec_argv`."""

    name: str
    ns: str
    server: str
    mount_port: int
    export: str
    export_dir: Path
    pid: int
    log: Path

    def exec_argv(self, *argv: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns, *argv]

    def fstress(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        """Run bin/fstress inside the slot's namespace (traffic stays on its loopback)."""
        return subprocess.run(
            self.exec_argv(str(FSTRESS), *args), capture_output=True, text=True, timeout=timeout
        )

    def connect_args(self) -> list[str]:
        return ["--server", self.server, "--mount-port", str(self.mount_port), "--export", self.export]


def start_slot(name: str, *extra: str, cgroup_procs: tuple[str, ...] = ()) -> GaneshaSlot:
    """Start slot `name` (ganesha-slot.sh up); its processes start in the cgroups whose
    cgroup.procs files `cgroup_procs` names."""
    enter = ["sh", "-c", 'for f in $WB_PROCS; do echo $$ >"$f"; done; exec "$@"', "sh"] if cgroup_procs else []
    out = subprocess.run(
        [*enter, str(SLOT_SCRIPT), "up", name, *extra], capture_output=True, text=True, timeout=60,
        env={**os.environ, "WB_PROCS": " ".join(cgroup_procs)},
    )
    if out.returncode != 0:
        raise RuntimeError(f"ganesha-slot up {name} failed: {out.stderr.strip()}")
    env = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    return GaneshaSlot(
        name=name,
        ns=env["SLOT_NS"],
        server=env["NFS_SERVER"],
        mount_port=int(env["MOUNT_PORT"]),
        export=env["EXPORT"],
        export_dir=Path(env["EXPORT_DIR"]),
        pid=int(env["GANESHA_PID"]),
        log=Path(env["GANESHA_LOG"]),
    )


def stop_slot(name: str) -> None:
    subprocess.run([str(SLOT_SCRIPT), "down", name, "--purge"], check=True, timeout=60)


@pytest.fixture(scope="session")
def fstress_bin() -> Path:
    assert FSTRESS.is_file(), f"{FSTRESS} missing: run `make fstress` (make test builds it)"
    return FSTRESS


@pytest.fixture(scope="session")
def ganesha(fstress_bin) -> GaneshaSlot:
    """One real Ganesha for the session, in slot 'itest' (own netns + rpcbind)."""
    name = f"it{os.getpid() % 100000}"
    stop_slot(name)
    slot = start_slot(name)
    try:
        yield slot
    finally:
        stop_slot(name)


@pytest.fixture
def notify_receivers(monkeypatch):
    """A local SMTP receiver and a local HTTP receiver, wired as the workbench_smtp and
    workbench_webhook connections (AIRFLOW_CONN_*) for the test: yields (smtp, webhook)."""
    from helpers import SmtpReceiver, WebhookReceiver
    with SmtpReceiver() as smtp, WebhookReceiver() as hook:
        monkeypatch.setenv("AIRFLOW_CONN_WORKBENCH_SMTP", smtp.conn_env())
        monkeypatch.setenv("AIRFLOW_CONN_WORKBENCH_WEBHOOK", hook.conn_env())
        yield smtp, hook


@pytest.hookimpl(trylast=True)           # after xdist's worker hook, which tags grouped node ids
def pytest_collection_modifyitems(config, items):
    """Under --dist loadgroup a test of an xdist_group must carry its group in its node id, or two
    workers would share a slot (pytest 9.2 + xdist 3.8 drop the tag silently: pytest-xdist#1386).
    Integration tests are collected first: xdist hands out work units in collection order, so the
    slot groups and the long single tests start at once, and the unit tests (minutes of CPU) fill
    the workers' tails instead of slowing the trials."""
    if not (hasattr(config, "workerinput") and getattr(config.option, "loadgroup", False)):
        return                  # a worker of --dist loadgroup (xdist sets its dist to "no")

    def group(item):
        mark = item.get_closest_marker("xdist_group")
        return mark and (mark.args[0] if mark.args else mark.kwargs.get("name"))

    long_groups = {group(i) for i in items if i.get_closest_marker("integration")} - {None}
    items.sort(key=lambda i: not (i.get_closest_marker("integration") or group(i) in long_groups))   # stable
    lost = [i.nodeid for i in items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
    if lost:
        raise pytest.UsageError(f"xdist_group ignored for {len(lost)} test(s), e.g. {lost[0]}: "
                                "pin pytest/pytest-xdist versions that group (see pyproject.toml)")
