"""scripts/airflow_auth.py without Airflow: the passwords file of the UI/API users (admin, viewer) is
made once with mode 0600, keeps the passwords it has, and is never a symbolic link; its command line
prints no password."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "airflow_auth.py"


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=30)


def test_passwords_are_generated_once_private_and_never_printed(tmp_path):
    f = tmp_path / "passwords.json"
    out = _run("passwords", str(f))
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    assert f.stat().st_mode & 0o777 == 0o600
    first = json.loads(f.read_text())
    assert sorted(first) == ["admin", "viewer"] and first["admin"] != first["viewer"]
    f.chmod(0o644)
    assert _run("passwords", str(f)).returncode == 0
    assert json.loads(f.read_text()) == first and f.stat().st_mode & 0o777 == 0o600   # kept, made private again
    f.write_text(json.dumps({"admin": first["admin"]}))                                # a user missing
    assert _run("passwords", str(f)).returncode == 0
    again = json.loads(f.read_text())
    assert again["admin"] == first["admin"] and again["viewer"] and again["viewer"] != first["viewer"]
    env = dict(line.split("=", 1) for line in _run("env", str(f)).stdout.splitlines())
    assert env == {"AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
                   "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,viewer:viewer",
                   "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(f)}


def test_a_symbolic_link_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("{}")
    (tmp_path / "passwords.json").symlink_to(target)
    out = _run("passwords", str(tmp_path / "passwords.json"))
    assert out.returncode == 1 and "symbolic link" in out.stderr
    assert target.read_text() == "{}"


@pytest.mark.parametrize("argv", [["--help"], ["-h"]])
def test_help(argv):
    out = _run(*argv)
    assert out.returncode == 0 and "airflow_auth.py token URL FILE [USER]" in out.stdout


def test_a_bad_call_prints_the_usage():
    out = _run("token")
    assert out.returncode == 2 and "airflow_auth.py passwords FILE" in out.stderr and not out.stdout
