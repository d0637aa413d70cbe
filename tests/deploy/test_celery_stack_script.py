"""scripts/celery-stack.sh without starting the stack: --help makes no state, `status` after `down`
prints no line for a missing pid file, the slot leases are the stack's Postgres and a host-local lease
store is refused for several workers."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "celery-stack.sh"


def _stack(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    import os
    return subprocess.run([str(SCRIPT), *argv], capture_output=True, text=True, timeout=60,
                          env={**{k: v for k, v in os.environ.items() if k != "WB_LEASE_STORE"}, **(env or {})})


def test_help_prints_the_usage_and_makes_no_state(tmp_path):
    d = tmp_path / "stack"
    for argv in (["--help"], ["-h"], ["help"], ["up", "--help", "--dir", str(d)], ["status", "-h"]):
        out = _stack(*argv, "--dir", str(d))
        assert out.returncode == 0, out.stderr
        assert "celery-stack.sh up     [--dir D]" in out.stdout and "celery-stack.sh env" in out.stdout
    bad = _stack("bogus", "--dir", str(d))
    assert bad.returncode == 1 and "unknown action 'bogus'" in bad.stderr
    assert not d.exists()


def test_status_after_down_prints_only_real_lines(tmp_path):
    d = tmp_path / "stack"
    d.mkdir(mode=0o700)
    (d / "env").write_text("WB_PG_PORT=1\nWB_PG_DATA=/nonexistent/wb\nWB_REDIS_PORT=1\nWB_API_PORT=8090\n")
    out = _stack("status", "--dir", str(d))
    assert out.returncode == 1
    assert out.stdout.splitlines() == ["postgres: DOWN", "redis: DOWN", "ui: http://127.0.0.1:8090"], out.stdout


def test_the_leases_are_in_the_stack_s_postgres_and_a_local_store_is_refused_for_several_workers(tmp_path):
    d = tmp_path / "stack"
    refused = _stack("up", "--dir", str(d), "--workers", "2", env={"WB_LEASE_STORE": "file"})
    assert refused.returncode == 1
    assert "WB_LEASE_STORE=file: a host-local lease store cannot serve 2 workers" in refused.stderr
    assert not list(d.glob("*.pid")) and not (d / "airflow").exists()        # nothing started
    env = dict(line.split("=", 1) for line in _stack("env", "--dir", str(d)).stdout.splitlines())
    stack_env = dict(line.split("=", 1) for line in (d / "env").read_text().splitlines())
    assert env["WB_LEASE_STORE"] == (f"postgresql://airflow:{stack_env['WB_PG_PASSWORD']}@127.0.0.1:"
                                     f"{stack_env['WB_PG_PORT']}/workbench")
    assert env["AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT"] == "30"
    assert int(env["AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL"]) <= 10
    # the UI/API login: admin and viewer, passwords generated into D/passwords.json (0600), none printed
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS"] == "False"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == "admin:admin,viewer:viewer"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] == str(d / "passwords.json")
    assert (d / "passwords.json").stat().st_mode & 0o777 == 0o600
    passwords = json.loads((d / "passwords.json").read_text())
    assert sorted(passwords) == ["admin", "viewer"] and all(len(p) >= 20 for p in passwords.values())
    assert not any(p in refused.stdout + refused.stderr for p in passwords.values())
