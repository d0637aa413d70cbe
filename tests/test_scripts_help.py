"""`scripts/X.sh --help` prints the script's header and exits 0, doing nothing else: no state
directory, no log directory, no command that acts (each one on PATH is a stub that leaves a mark).

airflow-env.sh and minio-env.sh are only sourced (they take no arguments).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SKIP = {"airflow-env.sh", "minio-env.sh"}
SCRIPTS = sorted(p.name for p in (REPO / "scripts").glob("*.sh") if p.name not in SKIP)
# commands a script acts with: any of them running under --help is a failure
ACTORS = ("mkdir", "chmod", "ip", "mount", "losetup", "apt-get", "dpkg", "podman", "curl", "airflow", "python",
          "python3", "rpcbind", "ganesha.nfsd", "sshd", "ssh-keygen", "tee", "go", "make", "rm", "touch")


@pytest.fixture
def stubs(tmp_path) -> tuple[Path, Path]:
    bin_dir, marks = tmp_path / "bin", tmp_path / "marks"
    bin_dir.mkdir()
    marks.mkdir()
    for name in ACTORS:
        stub = bin_dir / name
        stub.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marks}/ran\nexit 1\n")
        stub.chmod(0o755)
    return bin_dir, marks


def test_every_action_script_is_listed():
    assert {"ganesha-slot.sh", "minio.sh", "ssh-hosts.sh", "main-job.sh", "ui.sh", "test-compose.sh",
            "celery-stack.sh"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_and_does_nothing(script, flag, stubs, tmp_path):
    bin_dir, marks = stubs
    state, cwd = tmp_path / "state", tmp_path / "cwd"
    cwd.mkdir()
    before = sorted(os.listdir(REPO))
    shell = "sh" if (REPO / "scripts" / script).read_text().startswith("#!/bin/sh") else "bash"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "WB_STATE_DIR": str(state),
           "WB_COMPOSE_STATE": str(state), "AIRFLOW_HOME": str(state / "airflow")}
    out = subprocess.run([shell, str(REPO / "scripts" / script), flag], capture_output=True, text=True, timeout=30,
                         cwd=cwd, env=env)
    assert out.returncode == 0 and not out.stderr, (script, out.returncode, out.stderr[-400:])
    first = out.stdout.splitlines()[0] if out.stdout else ""
    assert len(first) > 20 and not first.startswith(("#", "!")), (script, out.stdout[:200])
    assert not (marks / "ran").exists(), f"{script} {flag} ran {(marks / 'ran').read_text()}"
    assert not state.exists() and not any(cwd.iterdir()), f"{script} {flag} made state"
    assert sorted(os.listdir(REPO)) == before, f"{script} {flag} changed the checkout"
