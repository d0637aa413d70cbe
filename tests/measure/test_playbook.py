"""ansible-runner runs: the failing task's message, the recap, the environment and the strategy."""
from __future__ import annotations

from pathlib import Path

from workbench.config.paths import REPO
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

    from workbench.measure import playbook
    from workbench.measure.playbook import ansible_runner_run

    def fake_run(**kw):
        for ev in ({"event": "playbook_on_task_start", "event_data": {"task": "t"}, "stdout": "TASK [t]"},
                   {"event": "playbook_on_stats", "event_data": {"changed": {"sut1": 2}, "ok": {"sut1": 5},
                                                                 "failures": {}}}):
            assert kw["event_handler"](ev) is False
        return types.SimpleNamespace(status="successful", rc=0, stats=None)

    monkeypatch.setattr(playbook, "_run_scrubbed", fake_run)
    run = ansible_runner_run(tmp_path / "p.yml", {}, inventory=tmp_path / "hosts.yml",
                             private_data_dir=tmp_path / "pd", log_path=tmp_path / "ansible.log")
    assert run.ok and run.stats["changed"] == {"sut1": 2} and run.stats["ok"] == {"sut1": 5}
    assert run.stats["failures"] == {} and run.stats["dark"] == {}


def test_no_credential_reaches_the_playbook_or_the_runner_artifacts(tmp_path, monkeypatch):
    """A real ansible-runner run with a secret in this process's environment: the playbook does not
    see it, and no file of the runner's directory or the log holds it."""
    from workbench.measure.playbook import ansible_runner_run
    secret = "wb-test-secret-0f9c2d"
    monkeypatch.setenv("WB_S3_SECRET_KEY", secret)
    monkeypatch.setenv("AIRFLOW__CORE__FERNET_KEY", secret + "-fernet")
    book = tmp_path / "env.yml"
    book.write_text("""- hosts: localhost
  gather_facts: false
  tasks:
    - name: The playbook sees PATH but no credential
      ansible.builtin.assert:
        that:
          - lookup('ansible.builtin.env', 'PATH') | length > 0
          - lookup('ansible.builtin.env', 'WB_S3_SECRET_KEY') == ''
          - lookup('ansible.builtin.env', 'AIRFLOW__CORE__FERNET_KEY') == ''
""")
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
                   "      ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n")
    run = ansible_runner_run(book, {"x": 1}, inventory=inv, private_data_dir=tmp_path / "pd",
                             log_path=tmp_path / "ansible.log")
    assert run.ok, run.message()
    files = [f for f in tmp_path.rglob("*") if f.is_file()]
    assert any(f.name == "command" for f in files)            # the artifact that dumps the env
    assert not [f for f in files if secret.encode() in f.read_bytes()]


def test_provisioning_runs_under_mitogen_unless_the_user_names_another_strategy(tmp_path, monkeypatch):
    """A real run of a playbook named provision_sut.yml runs its module in Mitogen's interpreter kept
    per connection (its process title says `mitogen:`); with the user's ANSIBLE_STRATEGY=linear, and
    for every other playbook (run_trial.yml's load hosts must start at once), in a Python of its own."""
    from workbench.measure.playbook import ansible_runner_run, strategy_env
    assert (Path(strategy_env("provision_sut.yml", {})["ANSIBLE_STRATEGY_PLUGINS"]) / "mitogen_linear.py").is_file()
    assert strategy_env("provision_sut.yml", {"ANSIBLE_STRATEGY": "linear"}) == {}
    assert [strategy_env(REPO / "playbooks" / p, {}) for p in ("run_trial.yml", "deploy_loadgen.yml")] == [{}, {}]
    book = tmp_path / "provision_sut.yml"
    book.write_text(r"""- hosts: localhost
  gather_facts: false
  tasks:
    - name: The module's parent process
      ansible.builtin.shell: tr '\0' ' ' < /proc/$PPID/cmdline
      register: parent
    - name: Its command line
      ansible.builtin.debug:
        msg: "parent {{ parent.stdout }}"
""")
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
                   "      ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n")
    titles = {}
    for strategy in ("mitogen_linear", "linear"):
        if strategy == "linear":
            monkeypatch.setenv("ANSIBLE_STRATEGY", "linear")
        log = tmp_path / f"{strategy}.log"
        run = ansible_runner_run(book, {}, inventory=inv, private_data_dir=tmp_path / strategy, log_path=log)
        assert run.ok, run.message()
        titles[strategy] = log.read_text()
    assert "(mitogen:" in titles["mitogen_linear"] and "(mitogen:" not in titles["linear"], titles
