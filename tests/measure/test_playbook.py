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


def test_stats_come_from_the_recap_event(tmp_path, monkeypatch):
    """The handler keeps no event files, from which ansible-runner's Runner.stats would read the
    recap: the run's stats are the playbook_on_stats event's counters."""
    import types

    import ansible_runner

    from workbench.measure.playbook import ansible_runner_run

    def fake_run(**kw):
        for ev in ({"event": "playbook_on_task_start", "event_data": {"task": "t"}, "stdout": "TASK [t]"},
                   {"event": "playbook_on_stats", "event_data": {"changed": {"sut1": 2}, "ok": {"sut1": 5},
                                                                 "failures": {}}}):
            assert kw["event_handler"](ev) is False
        return types.SimpleNamespace(status="successful", rc=0, stats=None)

    monkeypatch.setattr(ansible_runner, "run", fake_run)
    run = ansible_runner_run(tmp_path / "p.yml", {}, inventory=tmp_path / "hosts.yml",
                             private_data_dir=tmp_path / "pd", log_path=tmp_path / "ansible.log")
    assert run.ok and run.stats["changed"] == {"sut1": 2} and run.stats["ok"] == {"sut1": 5}
    assert run.stats["failures"] == {} and run.stats["dark"] == {}
