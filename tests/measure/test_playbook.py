"""The failing task's message from ansible-runner events."""
from __future__ import annotations

from workbench.measure.playbook import _event_failure


def test_event_failure_message():
    ev = {"event": "runner_on_failed", "event_data": {
        "host": "load1", "task": "Run fstress",
        "res": {"msg": "non-zero return code", "rc": 1,
                "stderr": "fstress: server unreachable\nfstress: warning: --start-at is 0.1s in the past"}}}
    assert _event_failure(ev) == "load1: Run fstress failed: non-zero return code (rc 1): fstress: server unreachable"
    ev2 = {"event": "runner_on_failed", "event_data": {"host": "load1", "task": "Run fstress",
           "res": {"msg": "non-zero return code", "rc": -9, "stderr": ""}}}
    assert _event_failure(ev2) == "load1: Run fstress failed: non-zero return code (killed by signal 9)"
    assert _event_failure({"event": "runner_on_ok"}) is None
    ev["event_data"]["ignore_errors"] = True
    assert _event_failure(ev) is None
