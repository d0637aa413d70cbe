"""A child process's environment holds no credential it does not need (issue 53)."""
from __future__ import annotations

import json
import sys

from workbench.config.child_env import child_env

ENV = {
    "PATH": "/usr/bin", "HOME": "/root", "WB_SLOTS": "slot1", "ANSIBLE_CONFIG": "/x/ansible.cfg",
    "WB_S3_ACCESS_KEY": "ak", "WB_S3_SECRET_KEY": "sk", "WB_PG_PASSWORD": "pw",
    "AIRFLOW__CORE__FERNET_KEY": "fk", "AIRFLOW__API_AUTH__JWT_SECRET": "js",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "postgresql://a:pw@h/db",
    "AIRFLOW__CELERY__RESULT_BACKEND": "db+postgresql://a:pw@h/db", "AIRFLOW__CELERY__BROKER_URL": "redis://:pw@h",
    "AIRFLOW_CONN_WORKBENCH_SMTP": "smtp://u:pw@h", "WB_LEASE_STORE": "postgresql://a:pw@h/workbench",
    "GITHUB_TOKEN": "t",
}


def test_credentials_are_not_inherited_unless_kept():
    assert child_env(env=ENV) == {"PATH": "/usr/bin", "HOME": "/root", "WB_SLOTS": "slot1",
                                  "ANSIBLE_CONFIG": "/x/ansible.cfg"}
    kept = child_env(keep=("WB_LEASE_STORE",), env=ENV)
    assert kept["WB_LEASE_STORE"] == ENV["WB_LEASE_STORE"] and "WB_S3_SECRET_KEY" not in kept


def test_an_agent_starts_without_this_process_s_credentials(tmp_path, monkeypatch):
    """The fstress agent's process (here one that writes its environment, then says hello)."""
    from workbench.measure.agent_process import Agent
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    dump = tmp_path / "env.json"
    code = (f"import json, os, sys; json.dump(dict(os.environ), open({str(dump)!r}, 'w')); "
            "print(json.dumps({'event': 'hello', 'ok': True, 'protocol': 1, 'pid': os.getpid()}), flush=True); "
            "sys.stdin.read()")
    a = Agent("h", [sys.executable, "-c", code])
    try:
        a.wait_hello(30)
        got = json.loads(dump.read_text())
    finally:
        a.kill()
    assert got["WB_SLOTS"] == "slot1" and not {k for k in ENV if k not in ("PATH", "HOME", "WB_SLOTS", "ANSIBLE_CONFIG")} & set(got)
