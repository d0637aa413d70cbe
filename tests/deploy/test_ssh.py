"""The SSH workbench: wb-netns.sh's bridge mode, the netns role on a bridge, and a short rating
over SSH (scripts/ssh-hosts.sh, inventory/ssh/hosts.yml) from provision to teardown.

Names used here only: namespaces wb-ssh*, bridges wbssh1 (the SSH slot) and wbssh9 (the bridge
tests), addresses 10.251.31.0/24, slot and lease name sshslot1.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from helpers import REPO, send_lag_only

from workbench.measure.ansible import AnsibleHarness
from workbench.measure.playbook import strategy_env

pytestmark = pytest.mark.xdist_group("ssh")

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces, bridges)")
VENV_BIN = REPO / ".venv" / "bin"
NETNS_SH = REPO / "roles" / "netns" / "files" / "wb-netns.sh"
SSH_HOSTS = REPO / "scripts" / "ssh-hosts.sh"
SSH_INVENTORY = REPO / "inventory" / "ssh" / "hosts.yml"
SSH_DIR = Path(os.environ.get("WB_STATE_DIR") or "/tmp/workbench") / "ssh"
SSH_SLOT = "sshslot1"
SMOKE_FACTORS = {"fs": "ext4", "disks": 1, "memory_mb": 128, "read_iops": 100}
TEST_BRIDGE = "wbssh9"          # the bridge tests' own bridge and /28, beside the SSH slot's
TEST_NET = "10.251.31.{}"
TEST_PREFIX = 28


def run(*argv: str | Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout)


def netns_sh(*args: str) -> subprocess.CompletedProcess:
    res = run(NETNS_SH, *args)
    assert res.returncode == 0, res.stderr
    return res


def link_exists(name: str) -> bool:
    return run("ip", "link", "show", name).returncode == 0


def netns_list() -> set[str]:
    return {ln.split()[0] for ln in run("ip", "netns", "list").stdout.splitlines() if ln.strip()}


def reachable(src_ns: str | None, dst_ns: str, addr: str) -> bool:
    """A TCP connection from src_ns (None: the root namespace) to a listener in dst_ns on addr.
    Generous timeouts: on this shared box a niced test may wait seconds for a CPU."""
    listener = subprocess.Popen(
        ["ip", "netns", "exec", dst_ns, "python3", "-c",
         "import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); s.listen(1); "
         "print(s.getsockname()[1], flush=True); s.settimeout(60); s.accept()", addr],
        stdout=subprocess.PIPE, text=True)
    try:
        port = int(listener.stdout.readline())
        connect = ["python3", "-c", "import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 30)",
                   addr, str(port)]
        res = run(*(["ip", "netns", "exec", src_ns] if src_ns else []), *connect)
        return res.returncode == 0
    finally:
        listener.kill()
        listener.wait(timeout=30)


@needs_root
def test_netns_bridge_mode_joins_hosts_and_root_and_cleans_up():
    """Bridge mode: two namespaces on one bridge reach each other, the root namespace reaches them
    through the bridge address; a second `up` changes nothing; `down` + `bridge-down` leave nothing.
    A bridge with a port left is kept."""
    hosts = {"wb-sshbr1": TEST_NET.format(193), "wb-sshbr2": TEST_NET.format(194)}
    bridge_addr = f"{TEST_NET.format(206)}/{TEST_PREFIX}"
    try:
        for ns, addr in hosts.items():
            assert "CHANGED" in netns_sh("up", ns, f"{addr}/{TEST_PREFIX}", "--bridge", TEST_BRIDGE, bridge_addr).stdout
        for ns, addr in hosts.items():
            assert netns_sh("up", ns, f"{addr}/{TEST_PREFIX}", "--bridge", TEST_BRIDGE, bridge_addr).stdout == ""
        ports = run("ip", "-o", "link", "show", "master", TEST_BRIDGE).stdout
        assert "wbvsshbr1" in ports and "wbvsshbr2" in ports, ports
        assert reachable("wb-sshbr2", "wb-sshbr1", hosts["wb-sshbr1"])
        assert reachable(None, "wb-sshbr2", hosts["wb-sshbr2"])
        netns_sh("down", "wb-sshbr1")
        res = netns_sh("bridge-down", TEST_BRIDGE)
        assert res.stdout == "" and "still has ports" in res.stderr and link_exists(TEST_BRIDGE)
        netns_sh("down", "wb-sshbr2")
        assert netns_sh("bridge-down", TEST_BRIDGE).stdout == "CHANGED\n"
        assert not link_exists(TEST_BRIDGE) and not set(hosts) & netns_list()
        assert netns_sh("bridge-down", TEST_BRIDGE).stdout == ""        # tolerant: nothing to do
    finally:
        run(NETNS_SH, "down", *hosts)
        run(NETNS_SH, "bridge-down", TEST_BRIDGE)


def bridge_inventory(path: Path) -> Path:
    """A local-connection inventory of one SUT and two load hosts on bridge wbssh9."""
    def host(n: int, ns: str) -> dict:
        return {"wb_netns": ns, "wb_addr": TEST_NET.format(n)}
    inv = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"},
        "children": {
            "sut": {"hosts": {"sshbsut": None}},
            "loadgen": {"hosts": {"sshbload1": None, "sshbload2": None}},
            "sshbslot": {"vars": {"wb_bridge": TEST_BRIDGE, "wb_prefix": TEST_PREFIX,
                                  "wb_bridge_addr": f"{TEST_NET.format(206)}/{TEST_PREFIX}"},
                         "hosts": {"sshbsut": host(193, "wb-sshbsut"), "sshbload1": host(194, "wb-sshbload1"),
                                   "sshbload2": host(195, "wb-sshbload2")}}}}}
    path.write_text(json.dumps(inv))
    return path


def netns_play(inventory: Path, hosts: str, state: str, tmp_path: Path) -> dict:
    """Run the netns role on `hosts`; the PLAY RECAP's changed count per host."""
    book = tmp_path / f"netns-{state}.yml"
    book.write_text(yaml.safe_dump([{"name": "netns", "hosts": hosts, "gather_facts": False,
                                     "roles": [{"role": "netns", "vars": {"netns_state": state}}]}]))
    res = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(book)],
                         capture_output=True, text=True, timeout=300, cwd=REPO,
                         env=dict(os.environ, **strategy_env(book), ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
                                  ANSIBLE_NOCOLOR="1", ANSIBLE_ROLES_PATH=str(REPO / "roles"),
                                  PATH=f"{VENV_BIN}:{os.environ.get('PATH', '')}"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    recap = [ln.split() for ln in res.stdout.splitlines() if " : ok=" in ln]
    return {r[0]: int(next(x for x in r if x.startswith("changed=")).split("=")[1]) for r in recap}


@pytest.mark.integration
@needs_root
@pytest.mark.skipif(not (VENV_BIN / "ansible-playbook").exists(), reason="needs the venv")
@pytest.mark.timeout(600)      # seconds; far longer only on a box busy with other work
def test_netns_role_bridge_slot_of_one_sut_and_two_load_hosts(tmp_path):
    """The netns role in bridge mode, run on the SUT alone (as provision_sut.yml does), makes the
    whole slot: the SUT's and both load hosts' namespaces on the bridge, which carries the
    controller's address; again changes nothing; netns_state absent on the slot removes all."""
    inv = bridge_inventory(tmp_path / "hosts.yml")
    names = {"wb-sshbsut", "wb-sshbload1", "wb-sshbload2"}
    try:
        assert netns_play(inv, "sut", "present", tmp_path) == {"sshbsut": 1}
        assert names <= netns_list()
        assert reachable("wb-sshbload2", "wb-sshbsut", TEST_NET.format(193))
        assert reachable(None, "wb-sshbload1", TEST_NET.format(194))
        assert netns_play(inv, "sut", "present", tmp_path) == {"sshbsut": 0}
        gone = netns_play(inv, "sshbslot", "absent", tmp_path)
        # each host deleted its namespace; one of them (whichever came first) the bridge as well
        assert set(gone) == {"sshbsut", "sshbload1", "sshbload2"} and min(gone.values()) == 1
        assert sum(gone.values()) == 4, gone
        assert not names & netns_list() and not link_exists(TEST_BRIDGE)
    finally:
        run(NETNS_SH, "down", *names)
        run(NETNS_SH, "bridge-down", TEST_BRIDGE)


def changed_total(run_) -> int:
    return sum(run_.stats.get("changed", {}).values())


def logins(host: str) -> int:
    """Logins of the controller (the bridge address) in the host's sshd log."""
    log = SSH_DIR / host / "sshd.log"
    return log.read_text().count("Accepted publickey for root from 10.251.31.254 ") if log.exists() else 0


def sshd_pid(host: str) -> int:
    return int((SSH_DIR / host / "sshd.pid").read_text())


def measure_past_stalls(h: AnsibleHarness, load_ops_s: float, runlength_s: float):
    """One trial, re-run (as the controller does, at most 3 times) while it is invalid for send lag
    alone: this shared VM stalled, not the server."""
    for _ in range(3):
        t = h.measure(load_ops_s, runlength_s)
        if t.valid or not send_lag_only({"valid": t.valid, "reason": t.reason}):
            break
    return t


@pytest.mark.integration
@needs_root
@pytest.mark.skipif(not (shutil.which("ganesha.nfsd") and Path("/usr/sbin/sshd").exists()
                         and (REPO / "bin" / "fstress").exists()),
                    reason="needs nfs-ganesha, openssh-server and bin/fstress (make setup)")
@pytest.mark.timeout(600)      # about a minute; far longer only on a box busy with other work
def test_rating_over_ssh_end_to_end(tmp_path):
    """scripts/ssh-hosts.sh brings sshslot1 up; the harness provisions the smoke profile's server
    (a second time: no change), deploys and runs three 2 s trials over SSH with
    inventory/ssh/hosts.yml, then tears down (no loop device left); the SSH hosts go down in any
    case. Ansible really used SSH: both sshds log the controller's logins, and Ganesha runs in the
    SUT sshd's mount namespace. The trials after the first (which checks the server through
    run_trial.yml) run through the resident `fstress agent` the harness started over `ssh -T`
    (issue 34); teardown leaves no agent on the load host."""
    t0 = time.monotonic()
    run(SSH_HOSTS, "down", SSH_SLOT, timeout=180)   # a fresh sshd (and log) per test run
    up = run(SSH_HOSTS, "up", SSH_SLOT, timeout=180)
    h, agent_pid = None, 0
    try:
        assert up.returncode == 0, up.stderr
        assert "sshsut1: up" in up.stdout and "sshload1: up" in up.stdout, up.stdout
        before = {host: logins(host) for host in ("sshsut1", "sshload1")}
        # the smoke profile's server: an ext4 loop disk (mounted in the SUT sshd's mount namespace),
        # memory and blkio cgroups
        h = AnsibleHarness(slot=SSH_SLOT, inventory=SSH_INVENTORY, factors=SMOKE_FACTORS,
                           results_dir=tmp_path, warmup_s=1, fileset_rate=500,
                           extravars={"fstress_lag_bound": "10ms"}, agent=True)
        first = h.provision()
        assert changed_total(first) > 0, first.stats
        again = h.provision()
        assert again.ok and changed_total(again) == 0, again.stats
        sysinfo = json.loads((tmp_path / "sysinfo.json").read_text())
        assert sysinfo["host"] == "sshsut1" and sysinfo["server"]["endpoint"]["address"] == "10.251.31.1"
        h.deploy()
        for load in (100, 150, 200):
            t = measure_past_stalls(h, load, 2)
            assert t.valid, t.reason
            assert t.ops_total > 0 and t.raw["offered_rate"] == load, t.raw
            # issue 50: the server's sampler ran over ssh -T beside the trial, on the trial's window
            tel = t.raw["telemetry"]["hosts"]["sshsut1"]
            assert tel["n_intervals"] >= 1 and tel["mean"]["server_cpu_cores"] > 0, t.raw["telemetry"]
        paths_ = [x["path"] for x in h.timings]
        assert paths_[0] == "playbook" and paths_[-1] == "agent", h.timings
        agent_pid_file = json.loads((tmp_path / "agent" / "sshload1.json").read_text())["pid_file"]
        agent_pid = int(Path(agent_pid_file).read_text())   # the load host's filesystem is this one's
        assert run("ip", "netns", "identify", str(agent_pid)).stdout.strip() == "wb-sshload1"
        ganesha = int(Path("/tmp/workbench/hosts/sshsut1/ganesha.pid").read_text())
        assert os.readlink(f"/proc/{ganesha}/ns/mnt") == os.readlink(f"/proc/{sshd_pid('sshsut1')}/ns/mnt")
        assert run("ip", "netns", "identify", str(ganesha)).stdout.strip() == "wb-sshsut1"
        for host, n in before.items():
            assert logins(host) > n, (SSH_DIR / host / "sshd.log").read_text()[-2000:]
    finally:
        teardown = h.teardown() if h is not None else None
        down = run(SSH_HOSTS, "down", SSH_SLOT, timeout=180)
    assert teardown is not None and teardown.ok, teardown and teardown.message()
    assert not Path(f"/proc/{agent_pid}").exists(), "teardown left the load host's fstress agent"
    assert down.returncode == 0, down.stderr
    assert not {"wb-sshsut1", "wb-sshload1"} & netns_list() and not link_exists("wbssh1")
    assert not Path("/tmp/workbench/hosts/sshsut1").exists()
    assert "/tmp/workbench/hosts/sshsut1/" not in run("losetup", "-n", "-l", "-O", "BACK-FILE").stdout
    print(f"rating over ssh: {time.monotonic() - t0:.1f} s wall")
