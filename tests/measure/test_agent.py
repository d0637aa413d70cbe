"""The resident fstress agents (measure/agent.py) and AnsibleHarness's agent path: the protocol against
a fake agent (tests/measure/fake_agent.py), a dead or silent agent as a harness failure, the stale
agent replaced through --pid-file (also with the real `fstress agent`), the flags agreeing with the
role and run_trial.yml; and (integration, slot3) a deployment whose trials run through the agents."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO, FakeRunner

from workbench.measure import agent as agents
from workbench.measure import agent_process
from workbench.measure.ansible import AnsibleHarness

FAKE = Path(__file__).resolve().parent / "fake_agent.py"
FSTRESS = REPO / "bin" / "fstress"


def fake_spec(host: str, mode: str = "ok", pid_file: Path | None = None) -> dict:
    return {"host": host, "prefix": [sys.executable, str(FAKE), mode],
            "run_args": ["--server", "10.0.0.1:2049", "--export", "/export", "--workload", "web_server"],
            "pid_file": str(pid_file) if pid_file else "", "connection": "local"}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:                               # a zombie (our own unreaped child) is gone too
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


@pytest.fixture(autouse=True)
def _no_fleets_left():
    yield
    agents.close_all()


# ------------------------------------------------------------------ one definition with the playbooks
def test_the_seed_is_run_trial_ymls():
    text = (REPO / "playbooks" / "run_trial.yml").read_text()
    expr = re.search(r"fstress_trial_seed: \"\{\{(.*?)\}\}\"", text, re.S).group(1)
    assert "(0 if (warmup_trial | default(false) | bool) else (trial_id | default(0) | int) + 1)" in expr
    assert f"+ {agent_process.SEED_CLIENT_STRIDE} * (fstress_trial_client_id | int)" in " ".join(expr.split())
    assert agents.trial_seed(4, 0) == 5 and agents.trial_seed(4, 2) == 5 + 2 * 1000003
    assert agents.trial_seed(9, 1, warmup_trial=True) == 1000003


def test_the_trial_flags_are_the_roles():
    """run.yml passes the deploy-time _fstress_run_args plus exactly these trial flags (and --json)."""
    run = (REPO / "roles" / "fstress" / "tasks" / "run.yml").read_text()
    assert "_fstress_prefix + ['run'] + _fstress_run_args" in run
    args = agents.trial_args({"run_args": ["--server", "s:1"]}, rate=250, runlength_s=10, warmup_s=2,
                             client_id=1, seed=7, start_at=1700000000.25)
    assert args == ["--server", "s:1", "--rate", "250.000000", "--duration", "10.0", "--warmup", "2.0",
                    "--client-id", "1", "--seed", "7", "--start-at", "1700000000.250"]
    for f in [a for a in args[2:] if a.startswith("--")]:
        assert f"'{f}'" in run, f
    assert "_fstress_run_args:" in (REPO / "roles" / "fstress" / "tasks" / "common.yml").read_text()


def test_agent_argv_local_and_ssh():
    spec = {"host": "h", "prefix": ["ip", "netns", "exec", "wb-load3", "/x/fstress"], "pid_file": "/x/agent.pid",
            "connection": "local"}
    assert agents.agent_argv(spec, "d1") == ["ip", "netns", "exec", "wb-load3", "/x/fstress", "agent",
                                             "--deployment", "d1", "--pid-file", "/x/agent.pid"]
    ssh = agents.agent_argv({**spec, "prefix": ["/x/fstress"], "connection": "ssh", "ssh_host": "10.0.0.5",
                             "ssh_user": "wb", "ssh_port": 2222}, "d1")
    assert ssh[:2] == ["ssh", "-T"] and ssh[-2:] == ["wb@10.0.0.5", "/x/fstress agent --deployment d1 --pid-file /x/agent.pid"]
    assert ssh[ssh.index("-p") + 1] == "2222"


# ------------------------------------------------------------------ the protocol
def test_a_fleet_runs_every_host_and_keeps_its_agents(tmp_path):
    fleet = agents.Fleet([fake_spec("a"), fake_spec("b")], log_dir=tmp_path)
    pids = [a.pid for a in fleet.agents]
    for k in range(2):
        res = fleet.run([["--rate", "250", "--duration", "5", "--seed", str(k), "--client-id", str(i),
                          "--start-at", "1"] for i in range(2)], timeout_s=10)
        assert [(r.host, r.ok, r.exit, r.result["offered_rate"], r.result["client_id"]) for r in res] == [
            ("a", True, 0, 250.0, 0), ("b", True, 0, 250.0, 1)]
        assert [r.reused for r in res] == [k > 0] * 2
    assert [a.pid for a in fleet.agents] == pids
    fleet.close()
    assert not any(alive(p) for p in pids)


def test_an_agent_killed_mid_trial_fails_at_once(tmp_path):
    fleet = agents.Fleet([fake_spec("a", "die")])
    t0 = time.monotonic()
    with pytest.raises(agents.AgentError, match="output ended"):
        fleet.run([["--rate", "1"]], timeout_s=60)
    assert time.monotonic() - t0 < 5


def test_a_silent_agent_fails_at_the_bound(tmp_path):
    fleet = agents.Fleet([fake_spec("a", "silent")])
    t0 = time.monotonic()
    with pytest.raises(agents.AgentError, match="no reply"):
        fleet.run([["--rate", "1"]], timeout_s=0.5)
    assert 0.4 < time.monotonic() - t0 < 5
    fleet.kill()
    assert not alive(fleet.agents[0].proc.pid)


def test_an_agent_without_hello_does_not_start():
    with pytest.raises(agents.AgentError, match="output ended"):
        agents.Fleet([fake_spec("a", "nohello")], hello_timeout_s=5)


def test_a_failed_run_is_reported_not_raised():
    fleet = agents.Fleet([fake_spec("a", "fail")])
    (r,) = fleet.run([["--rate", "1"]], timeout_s=10)
    assert not r.ok and r.exit == 4 and "drain" in r.error


@pytest.mark.parametrize("prefix", ["fake", "fstress"])
def test_a_stale_agent_of_an_earlier_deployment_is_replaced(tmp_path, prefix):
    pid_file = tmp_path / "agent.pid"
    spec = fake_spec("a", pid_file=pid_file)
    if prefix == "fstress":                     # the real agent: no server needed to start it
        spec["prefix"] = [str(FSTRESS)]
    old = agents.Fleet([spec], deployment="dep-1")
    old_pid = old.agents[0].pid
    assert int(pid_file.read_text()) == old_pid
    new = agents.Fleet([spec], deployment="dep-2")
    assert new.agents[0].hello.get("deployment") == "dep-2"
    deadline = time.monotonic() + 10
    while alive(old_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(old_pid)
    assert int(pid_file.read_text()) == new.agents[0].pid
    new_pid = new.agents[0].pid
    new.close()
    old.kill()
    assert not alive(new_pid) and not pid_file.exists()


# ------------------------------------------------------------------ AnsibleHarness's agent path
class DeployingRunner(FakeRunner):
    """FakeRunner whose deploy writes the agent spec of load1 (the local inventory's slot1)."""

    def __init__(self, mode="ok", **kw):
        super().__init__(**kw)
        self.mode = mode

    def __call__(self, playbook, extravars, **kw):
        if Path(playbook).name == "deploy_loadgen.yml" and extravars.get("fstress_agent_spec_dir"):
            d = Path(extravars["fstress_agent_spec_dir"])
            (d / "load1.json").write_text(json.dumps(fake_spec("load1", self.mode, d / "agent.pid")))
        return super().__call__(playbook, extravars, **kw)


def _merge_copy(parts, out):
    out.write_text(parts[0].read_text())
    return ""


def agent_harness(tmp_path, runner, monkeypatch, **kw):
    monkeypatch.setattr(agents, "merge", _merge_copy)
    return AnsibleHarness(slot="slot1", workload="web_server", results_dir=tmp_path, runner=runner,
                          warmup_s=1.0, agent=True, **kw)


def test_the_agent_path_is_off_unless_asked(tmp_path, monkeypatch):
    monkeypatch.delenv("WB_FSTRESS_AGENT", raising=False)
    assert not AnsibleHarness(slot="slot1", results_dir=tmp_path, runner=FakeRunner()).agent
    with agents.enable():
        assert AnsibleHarness(slot="slot1", results_dir=tmp_path, runner=FakeRunner()).agent
    assert not AnsibleHarness(slot="slot1", results_dir=tmp_path, runner=FakeRunner()).agent
    monkeypatch.setenv("WB_FSTRESS_AGENT", "1")
    assert AnsibleHarness(slot="slot1", results_dir=tmp_path, runner=FakeRunner()).agent
    monkeypatch.setenv("WB_FSTRESS_AGENT", "0")
    with agents.enable():           # not told: in_process_default(), which the variable turns off
        assert not AnsibleHarness(slot="slot1", results_dir=tmp_path, runner=FakeRunner()).agent
    with agents.enable(True):
        assert AnsibleHarness(slot="slot1", results_dir=tmp_path, runner=FakeRunner()).agent


def test_trials_run_through_the_agents_after_the_server_check(tmp_path, monkeypatch):
    r = DeployingRunner()
    h = agent_harness(tmp_path, r, monkeypatch)
    h.deploy()
    assert (tmp_path / "agent" / "load1.json").is_file()
    t0 = h.measure(500, 5)                                # first trial: the playbook checks the server
    t1 = h.measure(500, 5)
    t2 = h.measure(400, 5)
    assert [c[0] for c in r.calls] == ["deploy_loadgen.yml", "run_trial.yml"]
    assert [x["path"] for x in h.timings] == ["playbook", "agent", "agent"]
    assert t0.valid and t1.valid and t2.valid, (t1.reason, t2.reason)
    assert t2.raw["offered_rate"] == 400.0 and t2.raw["seed"] == 3      # trial 2, client 0: run_trial's seed
    assert t2.raw["per_host"][0]["host"] == "load1"
    assert "--fileset-rate" not in t2.raw["args"]        # the spec's run_args, then the trial's
    assert t2.raw["args"][:2] == ["--server", "10.0.0.1:2049"]
    fleet = agents._FLEETS[(str(h.inventory), "slot1")]
    pid = fleet.agents[0].pid
    # a harness re-created per step in the same process (run_rating) finds the same agents
    h2 = agent_harness(tmp_path, r, monkeypatch)
    assert h2.measure(500, 5, trial_id=3, check_server=False).valid
    assert agents._FLEETS[(str(h.inventory), "slot1")].agents[0].pid == pid
    h2.teardown()
    assert not alive(pid) and (str(h.inventory), "slot1") not in agents._FLEETS


def test_a_dead_agent_is_a_harness_failure_and_is_restarted(tmp_path, monkeypatch):
    r = DeployingRunner(mode="die")
    h = agent_harness(tmp_path, r, monkeypatch)
    h.deploy()
    t = h.measure(500, 5, check_server=False)
    assert not t.valid and t.harness_failure and "agent" in t.reason and "output ended" in t.reason, t.reason
    assert (str(h.inventory), "slot1") not in agents._FLEETS             # dropped: the next trial starts anew
    (tmp_path / "agent" / "load1.json").write_text(json.dumps(fake_spec("load1", "ok")))
    t = h.measure(500, 5, check_server=False)
    assert t.valid and h.timings[-1]["path"] == "agent"


def test_a_not_drained_agent_run_is_a_harness_failure(tmp_path, monkeypatch):
    h = agent_harness(tmp_path, DeployingRunner(mode="fail"), monkeypatch)
    h.deploy()
    t = h.measure(500, 5, check_server=False)
    assert t.harness_failure and "exit 4" in t.reason and "drain" in t.reason, t.reason


def test_a_deploy_whose_agents_do_not_start_fails(tmp_path, monkeypatch):
    from workbench.measure.ansible import HarnessError
    h = agent_harness(tmp_path, DeployingRunner(mode="nohello"), monkeypatch)
    with pytest.raises(HarnessError, match="agents did not start"):
        h.deploy()


@pytest.mark.parametrize("what", ["cache policy", "background tenant"])
def test_what_the_agents_cannot_do_takes_the_playbook(tmp_path, monkeypatch, what):
    r = DeployingRunner()
    h = agent_harness(tmp_path, r, monkeypatch,
                      **({"extravars": {"nfs_server_cache_policy": "drop"}} if what == "cache policy" else {}))
    h.deploy()
    if what == "background tenant":
        h.background = {"ops_s": 100.0, "workload": "web_server", "load_hosts": 1}
    h.measure(500, 5, check_server=False)
    assert h.timings[-1]["path"] == "playbook"


# ------------------------------------------------------------------ integration: slot3
def _valid_agent_trial(h: AnsibleHarness, tries: int = 3):
    """A valid 2 s trial at 200 ops/s through the agent.  On a loaded 2-core machine the generator
    may lag past the 10 ms bound (CI of 25c7ac9: p99 22 ms): that trial is invalid and named so,
    and is measured again, as the controller would; any other failure fails the test."""
    for _ in range(tries):
        t = h.measure(200, 2.0, check_server=False)
        assert not t.harness_failure and h.timings[-1]["path"] == "agent", (t.reason, h.timings[-1])
        if t.valid:
            return t
        assert t.reason.startswith("generator saturated"), t.reason
    raise AssertionError(f"{tries} agent trials in a row saturated the generator: {t.reason}")


@pytest.mark.integration
@pytest.mark.xdist_group("slot3")
@pytest.mark.timeout(300)
def test_trials_through_the_agents_on_a_real_slot(tmp_path):
    """slot3: provision, deploy (the agent starts), trials through it under 1.5 s of overhead, an
    agent killed mid-trial → a harness failure and a new agent for the next trial, a second
    deployment's agent replaces the first's, and teardown leaves no agent."""
    from helpers import renumbered_inventory
    inv = renumbered_inventory(tmp_path / "hosts.yml", {1: 3})
    h = AnsibleHarness(slot="slot3", inventory=inv, factors={"fs": "tmpfs"}, workload="web_server",
                       results_dir=tmp_path / "r", warmup_s=0.5, fileset_rate=300,
                       extravars={"fstress_lag_bound": "10ms"}, agent=True)
    key = (str(h.inventory), "slot3")
    other = None
    try:
        h.provision()
        h.deploy()
        pid = agents._FLEETS[key].agents[0].pid
        h.warm_up(200, 1.0)                                  # no server check after deploy: the agent
        for _ in range(3):
            _valid_agent_trial(h)
        ag = [x for x in h.timings if x["path"] == "agent"]
        assert len(ag) >= 3 and max(x["overhead_s"] for x in ag) < 1.5, h.timings
        assert agents._FLEETS[key].agents[0].pid == pid      # one agent served them all
        # an agent killed mid-trial: that trial is a harness failure, the next one a new agent's
        killer = subprocess.Popen(["sh", "-c", f"sleep 1.2; kill -KILL {pid}"])
        t = h.measure(200, 2.0, check_server=False)
        killer.wait()
        assert t.harness_failure and "output ended" in t.reason, t.reason
        _valid_agent_trial(h)
        pid2 = agents._FLEETS[key].agents[0].pid
        assert pid2 != pid
        # a new deployment's agent replaces the earlier one's (its pid file)
        spec = json.loads((h.agent_spec_dir / "load3.json").read_text())
        other = agents.Fleet([spec], deployment="another")
        deadline = time.monotonic() + 10
        while alive(pid2) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(pid2)
        # `other` is no fleet of the harness: teardown.yml must find it by its pid file
    finally:
        run = h.teardown()
    left = subprocess.run(["pgrep", "-af", "fstress agent"], capture_output=True, text=True).stdout
    if other is not None:
        other.kill()
    assert run.ok, run.message()
    assert "load3" not in left, left


@pytest.mark.integration
@pytest.mark.xdist_group("slot3")
@pytest.mark.timeout(300)
def test_a_rating_through_the_agents_stores_every_trial(tmp_path, capsys):
    """`workbench rate --agent on` (smoke, 6 trials) on slot3: every trial stored, the agent trials
    under 1.5 s of overhead (median), the agent killed mid-trial (the first agent trial from trial 2
    on: a trial after an invalid one goes through the playbook) → a harness failure named for the
    signal, re-run; teardown leaves no agent."""
    from helpers import rating_files, renumbered_inventory

    from workbench import cli
    inv = renumbered_inventory(tmp_path / "hosts.yml", {1: 3})
    kills: list[tuple[int, int | None]] = []     # (trial, agent pid)

    class Killing(AnsibleHarness):
        def _agent_trial(self, n, load_ops_s, runlength_s, out):
            th = None
            if not kills and isinstance(n, int) and n >= 2:
                fleet = agents._FLEETS.get((str(self.inventory), self.slot))
                pid = fleet.agents[0].pid if fleet else None
                th = subprocess.Popen(["sh", "-c", f"sleep {self.warmup_s + runlength_s / 2}; kill -KILL {pid}"]) \
                    if pid else None
                kills.append((n, pid))
            run = super()._agent_trial(n, load_ops_s, runlength_s, out)
            if th is not None:
                th.wait()
            return run

    args = cli._parser().parse_args(["rate", "--workload", "web_server", "--inventory", str(inv), "--slot", "slot3",
                                     "--profile", "smoke", "--max-trials", "6", "--agent", "on", "--quiet",
                                     "--compress-ratio", "4",
                                     "--out", str(tmp_path / "out")])
    cli.cmd_rate(args, harness_factory=Killing)
    res, trials, rating = rating_files(tmp_path / "out")
    assert kills and kills[0][1] is not None, (kills, [(t["n"], t["valid"], t["reason"]) for t in trials])
    killed = kills[0][0]
    assert len(trials) == res["n_trials"] == 6 and [t["n"] for t in trials] == list(range(6))
    # the agents' runs write what the workload factor says, as the playbook's do
    datas = {t["raw"]["data"] for t in trials if t.get("raw")}
    assert datas == {"compress_ratio=4 dedupe_pct=0 data_unit=4096"}, datas
    assert trials[killed]["outcome"] == "harness" and "killed by signal 9" in trials[killed]["reason"], trials[killed]
    warmup = json.loads((rating / "spec.json").read_text())["warmup_s"]
    # agent trials: not one after an invalid trial (the playbook checks the server); trial 0 too when the
    # warm-up was valid, but it is left out here
    ag = [t["wall_s"] - t["runlength_s"] - warmup for i, t in enumerate(trials)
          if i > 0 and trials[i - 1]["valid"] and i != killed]
    assert len(ag) >= 2 and sorted(ag)[len(ag) // 2] < 1.5, ag
    left = subprocess.run(["pgrep", "-af", "fstress agent"], capture_output=True, text=True).stdout
    assert "load3" not in left, left


def test_an_agent_reply_line_over_the_limit_is_a_failed_reply_and_the_next_is_read():
    """Issue 53: reply lines are read at most MAX_REPLY_BYTES at a time; a longer one (a broken
    agent) is read past and becomes a failed reply, not a line held whole in memory."""
    import io
    from workbench.measure.agent_process import MAX_REPLY_BYTES, _reply
    out = io.BytesIO(b"x" * 2500 + b"\n" + b'{"ok": true, "id": "t1"}\n' + b"[1]\n" + b"{oops\n")
    assert _reply(out.readline(1000), out, 1000) == {"ok": False, "error": "reply line over 1000 bytes"}
    assert _reply(out.readline(1000), out, 1000) == {"ok": True, "id": "t1"}
    assert _reply(out.readline(1000), out, 1000) == {"ok": False, "error": "reply is not an object"}
    assert _reply(out.readline(1000), out, 1000)["error"].startswith("unreadable reply line: b'{oops")
    assert MAX_REPLY_BYTES == 64 << 20
