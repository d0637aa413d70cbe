"""scripts/celery-stack.sh without starting the stack: --help makes no state, `status` after `down`
prints no line for a missing pid file, the slot leases are the stack's Postgres and a host-local lease
store is refused for several workers; the supervisor, on stub processes, restarts a killed one."""
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


def test_the_supervisor_restarts_a_killed_worker_gives_up_on_a_crashing_process_and_stops_first(tmp_path):
    """`supervise` on a copy of the script whose `airflow` is a stub (a sleep; the triggerer exits at
    once): the processes without a pid file are started, a SIGKILLed worker is restarted under a new
    pid, the crashing triggerer is given up after the bounded restarts; `status` shows the supervisor;
    `down` stops the supervisor first, then every stub, and nothing is started again."""
    import os
    import shutil
    import signal
    import sys
    import time

    import psutil

    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("celery-stack.sh", "private-dir.sh", "minio-env.sh", "airflow_auth.py"):
        shutil.copy2(REPO / "scripts" / name, repo / "scripts" / name)
    venv_bin = repo / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(sys.executable)
    (venv_bin / "airflow").write_text('#!/bin/sh\ncase $1 in triggerer) echo "stub triggerer fails"; exit 3 ;; esac\n'
                                      'exec sleep 300\n')
    (venv_bin / "airflow").chmod(0o755)
    d = tmp_path / "stack"
    d.mkdir(mode=0o700)
    (d / "env").write_text("WB_PG_PORT=1\nWB_PG_PASSWORD=pw\nWB_PG_DATA=/nonexistent/wb\nWB_REDIS_PORT=1\n"
                           "WB_REDIS_PASSWORD=pw\nWB_API_PORT=8090\nWB_TRIGGER_LOG_PORT=1\n")
    script = str(repo / "scripts" / "celery-stack.sh")
    env = {**{k: v for k, v in os.environ.items() if k != "WB_LEASE_STORE" and not k.startswith("AIRFLOW")},
           "WB_SUPERVISE_INTERVAL_S": "1", "WB_SUPERVISE_MAX_RESTARTS": "2", "WB_SUPERVISE_WINDOW_S": "600"}
    names = ("api-server", "scheduler", "dag-processor", "worker1")

    def pid(name: str) -> int | None:
        try:
            p, start = (d / f"{name}.pid").read_text().split()
        except (FileNotFoundError, ValueError):
            return None
        try:
            proc = psutil.Process(int(p))
            return int(p) if proc.status() != psutil.STATUS_ZOMBIE else None
        except psutil.NoSuchProcess:
            return None

    def wait_for(cond, what: str, timeout_s: float = 20):
        deadline = time.monotonic() + timeout_s
        while not cond():
            assert time.monotonic() < deadline, f"{what} within {timeout_s} s; log:\n{(d / 'supervisor.log').read_text()}"
            time.sleep(0.2)

    with open(d / "supervisor.log", "ab") as log:
        sup = subprocess.Popen([script, "supervise", "--dir", str(d), "--workers", "1"], env=env, stdout=log,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    started: list[int] = []
    try:
        wait_for(lambda: all(pid(n) for n in names), "every stub started")
        started = [pid(n) for n in names]
        wait_for(lambda: "triggerer: down again after 2 restarts in 600 s: giving up" in
                 (d / "supervisor.log").read_text(), "the crashing triggerer given up")
        victim = pid("worker1")
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: pid("worker1") not in (None, victim), "the killed worker restarted", timeout_s=10)
        started.append(pid("worker1"))
        assert [pid(n) for n in names[:3]] == started[:3]          # the live ones left alone
        status = _stack("status", "--dir", str(d))
        lines = status.stdout.splitlines()
        assert status.returncode == 1 and f"supervisor: running, pid {sup.pid}" in lines, status.stdout
        assert f"worker1: running, pid {started[-1]}" in lines and any(x.startswith("triggerer: DOWN") for x in lines)
        log_text = (d / "supervisor.log").read_text()
        assert log_text.count("triggerer: down; restarted") == 2 and "worker1: down; restarted" in log_text, log_text
        down = subprocess.run([script, "down", "--dir", str(d)], env=env, capture_output=True, text=True, timeout=60)
        assert down.returncode == 0, down.stderr
        assert sup.wait(timeout=10) == 0
        time.sleep(2)                                                # nothing restarted after down
        assert not [p for p in started if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        assert not list(d.glob("*.pid")), list(d.glob("*.pid"))
        assert (d / "supervisor.log").read_text().rstrip().endswith("stopped")
    finally:
        if sup.poll() is None:
            os.killpg(sup.pid, signal.SIGKILL)
        for p in started:
            try:
                os.killpg(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def test_minio_s_credentials_are_exported_as_written_never_evaluated(tmp_path):
    """Issue 53: airflow-env.sh and celery-stack.sh evaluated minio.sh's output (`eval "$(… | sed
    's/^/export /')"`), so a credential holding `$(…)` ran as a command. minio_env_export takes each
    WB_S3_* value literally and refuses any other line."""
    fake = tmp_path / "repo" / "scripts" / "minio.sh"
    fake.parent.mkdir(parents=True)
    pwned = tmp_path / "pwned"
    hostile = f'$(touch {pwned})`touch {pwned}` "a b"; touch {pwned}'
    fake.write_text(f"#!/bin/sh\ncat <<'EOF'\nWB_S3_ENDPOINT=127.0.0.1:9000\nWB_S3_SECRET_KEY={hostile}\nEOF\n")
    fake.chmod(0o755)
    probe = (f'REPO={tmp_path / "repo"}; source {REPO / "scripts" / "minio-env.sh"}; '
             'minio_env_export && printf "%s|%s" "$WB_S3_ENDPOINT" "$WB_S3_SECRET_KEY"')
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout == f"127.0.0.1:9000|{hostile}", out
    assert not pwned.exists()
    fake.write_text("#!/bin/sh\necho WB_S3_ENDPOINT=127.0.0.1:9000\necho PATH=/nowhere\n")
    out = subprocess.run(["bash", "-c", probe + '; echo "PATH=$PATH"'], capture_output=True, text=True, timeout=30)
    assert out.returncode != 0 or "PATH=/nowhere" not in out.stdout
    assert "unexpected line from minio.sh: PATH" in out.stderr
    for script in ("airflow-env.sh", "celery-stack.sh"):
        assert "eval" not in (REPO / "scripts" / script).read_text(), script
