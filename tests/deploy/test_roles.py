"""Roles netns, nfs_server, sysinfo and the playbooks provision_sut.yml / teardown.yml, on real
Ansible (ansible-playbook subprocesses) and real NFS-Ganesha in network namespaces.

The tests use their own inventory (slots rslot7 and rslot8, hosts rsut7/rload7, rsut8/rload8) so
that they never touch the slots of the default local inventory that other tests or a running
`workbench rate` may be using.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jinja2
import pytest

from workbench.measure.playbook import strategy_env

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
PLAYBOOK = VENV_BIN / "ansible-playbook"
FSTRESS = REPO / "bin" / "fstress"
SLOTS = {"rslot7": 7, "rslot8": 8}

# every test here uses the slots rslot7/rslot8: under xdist they run on one worker, in order
pytestmark = pytest.mark.xdist_group("roles")

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (netns, loop devices, mounts)")
needs_tools = pytest.mark.skipif(
    not (PLAYBOOK.exists() and shutil.which("ganesha.nfsd") and shutil.which("mkfs.btrfs")
         and shutil.which("mkfs.xfs") and FSTRESS.exists()),
    reason="needs the venv, nfs-ganesha, xfsprogs, btrfs-progs and bin/fstress (make setup)",
)


def sut(slot: str) -> str:
    return f"rsut{SLOTS[slot]}"


def load(slot: str) -> str:
    return f"rload{SLOTS[slot]}"


def addr(slot: str, end: int) -> str:
    return f"10.251.{200 + SLOTS[slot]}.{end}"


@pytest.fixture(scope="module")
def inventory(tmp_path_factory) -> Path:
    """A local inventory of the same shape as inventory/local/hosts.yml, with two test slots."""
    slots = {}
    for slot in SLOTS:
        slots[slot] = {"hosts": {
            sut(slot): {"wb_netns": f"wb-{sut(slot)}", "wb_addr": addr(slot, 1),
                        "wb_peer_netns": f"wb-{load(slot)}", "wb_peer_addr": addr(slot, 2)},
            load(slot): {"wb_netns": f"wb-{load(slot)}", "wb_addr": addr(slot, 2),
                         "wb_sut_addr": addr(slot, 1),
                         "wb_peer_netns": f"wb-{sut(slot)}", "wb_peer_addr": addr(slot, 1)},
        }}
    inv = {"all": {
        "vars": {"ansible_connection": "local",
                 "ansible_python_interpreter": "{{ ansible_playbook_python }}"},
        "children": {
            "sut": {"hosts": {sut(s): None for s in SLOTS}},
            "loadgen": {"hosts": {load(s): None for s in SLOTS}},
            **slots,
        },
    }}
    path = tmp_path_factory.mktemp("inv") / "hosts.yml"
    path.write_text(json.dumps(inv))  # JSON is YAML
    return path


def playbook(inventory: Path, name: str, slot: str, timeout: float = 180, path: str | None = None,
             **extra) -> subprocess.CompletedProcess:
    env = dict(os.environ, **strategy_env(name), ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", PATH=path or f"{VENV_BIN}:{os.environ.get('PATH', '')}")
    extra_vars = {"slot": slot, **extra}
    return subprocess.run(
        [str(PLAYBOOK), "-i", str(inventory), str(REPO / "playbooks" / name),  # name may be absolute
         "-e", json.dumps(extra_vars)],
        capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env,
    )


def recap(out: str) -> dict[str, dict[str, int]]:
    hosts = {}
    for m in re.finditer(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$", out, re.M):
        hosts[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return hosts


def ok(res: subprocess.CompletedProcess) -> dict[str, dict[str, int]]:
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    return recap(res.stdout)


def netns_list() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def state_dir(host: str) -> Path:
    return Path("/tmp/workbench/hosts") / host


def loop_devices(host: str) -> list[str]:
    out = subprocess.run(["losetup", "-n", "-l", "-O", "NAME,BACK-FILE"], capture_output=True, text=True).stdout
    prefix = f"{state_dir(host)}/"
    return [line.split()[0] for line in out.splitlines() if len(line.split()) > 1 and line.split()[1].startswith(prefix)]


def cgroups(host: str) -> list[Path]:
    return [p for c in ("memory", "blkio") if (p := Path(f"/sys/fs/cgroup/{c}/workbench/{host}")).exists()]


def assert_clean(slot: str) -> None:
    """Nothing of the slot is left: namespaces, loop devices, cgroups, state, processes."""
    for host in (sut(slot), load(slot)):
        assert f"wb-{host}" not in netns_list()
        assert loop_devices(host) == []
        assert cgroups(host) == []
    assert not state_dir(sut(slot)).exists()


def teardown(inventory: Path, slot: str) -> None:
    ok(playbook(inventory, "teardown.yml", slot))


def ganesha_pid(slot: str) -> int:
    return int((state_dir(sut(slot)) / "ganesha.pid").read_text().strip())


PROBE_DIR = Path(tempfile.gettempdir()) / f"wb-test-roles-{os.getpid()}"


@pytest.fixture(scope="module", autouse=True)
def _probe_dir():
    PROBE_DIR.mkdir(parents=True, exist_ok=True)
    yield
    shutil.rmtree(PROBE_DIR, ignore_errors=True)


def fstress_probe(slot: str, target_slot: str | None = None, duration: float = 1.0) -> subprocess.CompletedProcess:
    """A short GETATTR run from the slot's load namespace to a server (its own by default).

    Served means: the run completed (exit 0, or 3 = the generator fell behind its schedule on
    this busy 2-core box, which says nothing about the server) with no errors and no timeouts.
    The returned object's returncode is 0 in that case.
    """
    wl = PROBE_DIR / f"probe-{slot}.wl"
    out = wl.with_suffix(".json")
    out.unlink(missing_ok=True)
    wl.write_text("name = probe\nmix = getattr:1\n")
    server = addr(target_slot or slot, 1)
    res = subprocess.run(
        ["ip", "netns", "exec", f"wb-{load(slot)}", str(FSTRESS), "run", "--server", f"{server}:2049",
         "--mount-port", "20048", "--export", "/export", "--workload", str(wl), "--rate", "200",
         "--duration", str(duration), "--warmup", "0.2", "--timeout", "1s", "--lag-bound", "50ms",
         "--json", str(out)],
        capture_output=True, text=True, timeout=60,
    )
    if res.returncode in (0, 3) and out.exists():
        data = json.loads(out.read_text())
        served = data["ops_total"] > 0 and data["errors"] == 0 and data["timeouts"] == 0
        res.returncode = 0 if served else 1
    return res


def provision_and_check(inventory: Path, slot: str, factors: dict, sysinfo_dir: Path) -> None:
    """Provision, check the applied factors, serve NFS, re-run with changed=0."""
    dest = sysinfo_dir / f"{slot}.json"
    host = sut(slot)
    rc = ok(playbook(inventory, "provision_sut.yml", slot, sysinfo_dest=str(dest), **factors))
    assert rc[host]["changed"] > 0 and rc[host]["failed"] == 0
    fs = factors.get("nfs_server_fs_type", "ext4")
    disks = factors.get("nfs_server_disks", 1)
    export = state_dir(host) / "export"
    fstype = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--mountpoint", str(export)],
                            capture_output=True, text=True).stdout.strip()
    assert fstype == fs
    loops = loop_devices(host)
    assert len(loops) == (0 if fs == "tmpfs" else disks)
    options = subprocess.run(["findmnt", "-n", "-o", "OPTIONS", "--mountpoint", str(export)],
                             capture_output=True, text=True).stdout
    compress = factors.get("nfs_server_fs_compress", "none")
    assert (f"compress={compress}" in options) if compress != "none" else ("compress" not in options), options
    if fs == "btrfs":
        show = subprocess.run(["btrfs", "filesystem", "show", str(export)], capture_output=True, text=True).stdout
        assert len(re.findall(r"devid\s+\d+", show)) == disks
        if disks > 1:
            df = subprocess.run(["btrfs", "filesystem", "df", str(export)], capture_output=True, text=True).stdout
            assert re.search(r"Data, RAID0", df), df
    # Ganesha runs in the slot's namespace, in the server's cgroups, pinned, with the config asked for.
    pid = ganesha_pid(slot)
    assert Path(f"/proc/{pid}/comm").read_text().strip() == "ganesha.nfsd"
    assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/wb-{host}").st_ino
    cg = Path(f"/proc/{pid}/cgroup").read_text()
    assert f"memory:/workbench/{host}" in cg and f"blkio:/workbench/{host}" in cg
    conf = (state_dir(host) / "ganesha.conf").read_text()
    assert f"RPC_Ioq_ThrdMax = {factors.get('nfs_server_threads', 16)};" in conf
    assert f"NFS_Commit = {'true' if factors.get('nfs_server_export_sync', True) else 'false'};" in conf
    mem = int(Path(f"/sys/fs/cgroup/memory/workbench/{host}/memory.limit_in_bytes").read_text())
    if factors.get("nfs_server_memory_mb"):
        assert mem == factors["nfs_server_memory_mb"] * 1048576
    else:
        assert mem > 2**62
    riops = factors.get("nfs_server_disk_read_iops", 0)
    rules = Path(f"/sys/fs/cgroup/blkio/workbench/{host}/blkio.throttle.read_iops_device").read_text()
    for dev in loops:
        majmin = subprocess.run(["lsblk", "-dno", "MAJ:MIN", dev], capture_output=True, text=True).stdout.strip()
        assert (f"{majmin} {riops}" in rules) == bool(riops)
    # sysinfo: fetched to the controller with the applied configuration.
    info = json.loads(dest.read_text())
    assert info["server"]["settings"]["nfs_server_fs_type"] == fs
    assert info["server"]["endpoint"] == {"address": addr(slot, 1), "nfs_port": 2049,
                                          "mount_port": 20048, "export": "/export"}
    assert "RPC_Ioq_ThrdMax" in info["server"]["config"]
    assert info["system"]["kernel"]["release"] and info["system"]["cpu"]["count"] >= 1
    assert "nfs-ganesha" in info["system"]["packages"]
    # It serves NFS to its load host over the slot link.
    probe = fstress_probe(slot)
    assert probe.returncode == 0, probe.stderr
    # Idempotent.
    rc = ok(playbook(inventory, "provision_sut.yml", slot, sysinfo_dest=str(dest), **factors))
    assert rc[host]["changed"] == 0, rc
    assert ganesha_pid(slot) == pid
    if compress != "none":      # another level of fs_compress remounts the provisioned btrfs, nothing else
        rc = ok(playbook(inventory, "provision_sut.yml", slot, **{**factors, "nfs_server_fs_compress": "none"}))
        options = subprocess.run(["findmnt", "-n", "-o", "OPTIONS", "--mountpoint", str(export)],
                                 capture_output=True, text=True).stdout
        assert rc[host]["changed"] > 0 and "compress" not in options and ganesha_pid(slot) == pid, options


@needs_root
@needs_tools
@pytest.mark.integration
@pytest.mark.parametrize(
    ("factors_a", "factors_b"),
    [
        pytest.param(
            {"nfs_server_fs_type": "ext4", "nfs_server_memory_mb": 128, "nfs_server_disk_read_iops": 500,
             "nfs_server_threads": 8, "nfs_server_disk_size_mb": 512},
            {"nfs_server_fs_type": "xfs", "nfs_server_export_sync": False, "nfs_server_disk_size_mb": 512},
            id="ext4+xfs"),
        pytest.param(
            {"nfs_server_fs_type": "btrfs", "nfs_server_disks": 2, "nfs_server_disk_size_mb": 512},
            {"nfs_server_fs_type": "btrfs", "nfs_server_disks": 4, "nfs_server_disk_size_mb": 512,
             "nfs_server_disk_write_iops": 300},
            id="btrfs2+btrfs4"),
        pytest.param(
            {"nfs_server_fs_type": "tmpfs", "nfs_server_memory_mb": 256},
            {"nfs_server_fs_type": "btrfs", "nfs_server_disks": 1, "nfs_server_disk_size_mb": 512,
             "nfs_server_fs_compress": "zstd"},
            id="tmpfs+btrfs1"),
    ],
)
def test_two_slots_provision_serve_and_tear_down(inventory, tmp_path, factors_a, factors_b):
    """Two slots provisioned at once; each serves NFS, sees only its own load host, tears down clean."""
    a, b = "rslot7", "rslot8"
    for slot in (a, b):
        teardown(inventory, slot)
    try:
        with ThreadPoolExecutor(2) as pool:
            futs = [pool.submit(provision_and_check, inventory, a, factors_a, tmp_path),
                    pool.submit(provision_and_check, inventory, b, factors_b, tmp_path)]
            for f in futs:
                f.result()
        assert ganesha_pid(a) != ganesha_pid(b)
        # Each server sees only its own traffic: during concurrent runs, the established NFS
        # connections of each server come from its own load host only.
        peers: dict[str, set[str]] = {a: set(), b: set()}
        stop = threading.Event()

        def watch():
            while not stop.is_set():
                for slot in (a, b):
                    out = subprocess.run(
                        ["ip", "netns", "exec", f"wb-{sut(slot)}", "ss", "-Htn", "state", "established",
                         "( sport = :2049 )"], capture_output=True, text=True).stdout
                    peers[slot] |= {line.split()[-1].rsplit(":", 1)[0].strip("[]").removeprefix("::ffff:")
                                    for line in out.splitlines() if line.strip()}
                time.sleep(0.1)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            with ThreadPoolExecutor(2) as pool:
                runs = list(pool.map(lambda s: fstress_probe(s, duration=2.0), (a, b)))
        finally:
            stop.set()
            watcher.join()
        for r in runs:
            assert r.returncode == 0, r.stderr
        assert peers[a] == {addr(a, 2)}, peers
        assert peers[b] == {addr(b, 2)}, peers
        # A load host cannot reach the other slot's server at all.
        cross = fstress_probe(a, target_slot=b, duration=0.5)
        assert cross.returncode != 0
    finally:
        for slot in (a, b):
            teardown(inventory, slot)
    for slot in (a, b):
        assert_clean(slot)
    # Teardown of nothing is a no-op.
    rc = ok(playbook(inventory, "teardown.yml", a))
    assert all(h["changed"] == 0 for h in rc.values()), rc


@needs_root
@needs_tools
@pytest.mark.integration
def test_cache_policies_and_reconfiguration(inventory, tmp_path):
    """tasks_from cache (keep, drop, restart); a config change restarts Ganesha, limits apply live."""
    slot = "rslot7"
    teardown(inventory, slot)
    book = tmp_path / "cache.yml"  # roles_path in ansible.cfg is relative to the config file
    book.write_text(
        "---\n- name: Cache policy\n  hosts: \"sut:&{{ slot }}\"\n  gather_facts: false\n  tasks:\n"
        "    - name: Apply the cache policy\n      ansible.builtin.include_role:\n"
        "        name: nfs_server\n        tasks_from: cache\n"
    )
    running = tmp_path / "start.yml"
    running.write_text(book.read_text().replace("tasks_from: cache", "tasks_from: start"))
    try:
        ok(playbook(inventory, "provision_sut.yml", slot, sysinfo_dest=str(tmp_path / "s.json")))
        pid = ganesha_pid(slot)
        assert fstress_probe(slot).returncode == 0
        rc = ok(playbook(inventory, str(book), slot, nfs_server_cache_policy="keep"))
        assert rc[sut(slot)]["changed"] == 0 and ganesha_pid(slot) == pid
        rc = ok(playbook(inventory, str(book), slot, nfs_server_cache_policy="drop"))
        assert rc[sut(slot)]["changed"] == 1 and ganesha_pid(slot) == pid
        rc = ok(playbook(inventory, str(book), slot, nfs_server_cache_policy="restart"))
        assert rc[sut(slot)]["changed"] == 1 and ganesha_pid(slot) != pid
        assert fstress_probe(slot).returncode == 0
        # A configuration change restarts the server (handler); memory and throttles apply live.
        pid = ganesha_pid(slot)
        rc = ok(playbook(inventory, "provision_sut.yml", slot, sysinfo_dest=str(tmp_path / "s.json"),
                         nfs_server_threads=9, nfs_server_memory_mb=96))
        assert rc[sut(slot)]["changed"] > 0 and ganesha_pid(slot) != pid
        assert "RPC_Ioq_ThrdMax = 9;" in (state_dir(sut(slot)) / "ganesha.conf").read_text()
        assert json.loads((tmp_path / "s.json").read_text())["server"]["settings"]["nfs_server_threads"] == 9
        pid = ganesha_pid(slot)
        rc = ok(playbook(inventory, "provision_sut.yml", slot, sysinfo_dest=str(tmp_path / "s.json"),
                         nfs_server_threads=9, nfs_server_memory_mb=128))
        assert ganesha_pid(slot) == pid
        limit = Path(f"/sys/fs/cgroup/memory/workbench/{sut(slot)}/memory.limit_in_bytes").read_text()
        assert int(limit) == 128 * 1048576
        assert fstress_probe(slot).returncode == 0
        # tasks_from start: no change while it runs, a start after it was killed.
        rc = ok(playbook(inventory, str(running), slot))
        assert rc[sut(slot)]["changed"] == 0 and ganesha_pid(slot) == pid
        os.kill(pid, 9)
        time.sleep(0.3)
        rc = ok(playbook(inventory, str(running), slot))
        assert rc[sut(slot)]["changed"] == 1 and ganesha_pid(slot) != pid
        assert fstress_probe(slot).returncode == 0
        # Another file system on a provisioned slot is refused, naming the way out.
        res = playbook(inventory, "provision_sut.yml", slot, nfs_server_fs_type="xfs")
        assert res.returncode != 0 and "run playbooks/teardown.yml for this slot first" in res.stdout
        assert recap(res.stdout)[sut(slot)]["changed"] == 0
    finally:
        teardown(inventory, slot)
    assert_clean(slot)


@needs_root
@needs_tools
@pytest.mark.parametrize(
    ("factors", "message"),
    [
        ({"nfs_server_fs_type": "zfs"}, "nfs_server_fs_type must be one of: ext4, xfs, btrfs, tmpfs, got: zfs"),
        ({"nfs_server_disks": 0}, "disks must be >= 1, got 0"),
        ({"nfs_server_memory_mb": 16}, "memory_mb must be 0 (unlimited) or >= 96 (floor), got 16"),
        ({"nfs_server_fs_type": "ext4", "nfs_server_disks": 2}, "disks > 1 needs btrfs (raid0), got 2 disks with ext4"),
        ({"nfs_server_backend": "nfsd"}, "nfs_server_backend must be one of: ganesha, knfsd, got: nfsd"),
        ({"nfs_server_threads": 0}, "threads must be >= 1, got 0"),
        ({"nfs_server_fs_compress": "zstd"}, "fs_compress zstd needs btrfs, got ext4"),
    ],
    ids=["fs-type", "disks-0", "memory-floor", "ext4-2-disks", "backend", "threads-0", "ext4-compress"],
)
def test_bad_input_fails_before_any_change(inventory, factors, message):
    slot = "rslot8"
    teardown(inventory, slot)
    res = playbook(inventory, "provision_sut.yml", slot, **factors)
    assert res.returncode != 0
    assert message in res.stdout + res.stderr, res.stdout[-3000:]
    assert recap(res.stdout)[sut(slot)]["changed"] == 0
    assert_clean(slot)


@needs_root
@needs_tools
def test_missing_program_fails_before_any_change(inventory):
    """rpcbind, losetup, blkid and mkfs live in /usr/sbin: without it on PATH, validation names them."""
    slot = "rslot8"
    teardown(inventory, slot)
    res = playbook(inventory, "provision_sut.yml", slot, path=f"{VENV_BIN}:/usr/bin:/bin")
    assert res.returncode != 0
    assert "missing program(s) rpcbind" in res.stdout, res.stdout[-3000:]
    assert recap(res.stdout)[sut(slot)]["changed"] == 0
    assert_clean(slot)


@pytest.mark.skipif(not PLAYBOOK.exists(), reason="needs the venv")
def test_unreachable_host_fails_before_any_change(tmp_path):
    inv = tmp_path / "unreachable.yml"
    ssh_port_1 = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1, "wb_netns": ""}
    inv.write_text(json.dumps({"all": {"children": {
        "sut": {"hosts": {"rsut9": ssh_port_1}}, "loadgen": {"hosts": {"rload9": ssh_port_1}},
        "rslot9": {"hosts": {"rsut9": None, "rload9": None}}}}}))
    res = playbook(inv, "provision_sut.yml", "rslot9", timeout=120)
    assert res.returncode != 0
    assert "UNREACHABLE" in res.stdout, res.stdout[-3000:]
    assert not state_dir("rsut9").exists()


def _render(name: str, **vars_) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(REPO / "roles" / "nfs_server" / "templates"),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["bool"] = lambda v: v if isinstance(v, bool) else str(v).lower() in ("1", "true", "yes", "on")
    base = {"ansible_managed": "Ansible managed", "inventory_hostname": "filer1",
            "nfs_server_state_dir": "/srv/wb", "nfs_server_export_dir": "/srv/wb/export",
            "nfs_server_threads": 16, "nfs_server_export_sync": True,
            "nfs_server_export_clients": ["10.251.1.2", "10.251.1.3"]}
    return env.get_template(name).render(**{**base, **vars_})


@pytest.mark.parametrize("sync", [True, False])
def test_knfsd_templates_render(sync):
    """knfsd backend (real hosts only, not runnable here): exports and nfs.conf render as intended."""
    exports = _render("exports.j2", nfs_server_export_sync=sync, nfs_server_threads=32)
    line = [l for l in exports.splitlines() if l and not l.startswith("#")][0]
    path, *clients = line.split(" ")
    assert path == "/srv/wb/export" and [c[:c.index("(")] for c in clients] == ["10.251.1.2", "10.251.1.3"]
    opts = clients[0][clients[0].index("(") + 1:clients[0].rindex(")")].split(",")
    assert ("sync" if sync else "async") in opts and ("async" if sync else "sync") not in opts
    assert {"rw", "no_root_squash", "no_subtree_check"} <= set(opts)
    conf = _render("nfs.conf.j2", nfs_server_threads=32)
    assert "[nfsd]\nthreads=32\n" in conf and "[mountd]\nport=20048" in conf
    assert "vers3=y" in conf and "vers4.1=y" in conf and "vers4.0=n" in conf    # nfs_version 3 and 4.1


@pytest.mark.parametrize("sync", [True, False])
def test_ganesha_template_renders(sync):
    conf = _render("ganesha.conf.j2", nfs_server_export_sync=sync, nfs_server_threads=24)
    assert "RPC_Ioq_ThrdMax = 24;" in conf
    assert f"NFS_Commit = {'true' if sync else 'false'};" in conf
    assert "Path = /srv/wb/export;" in conf and "Pseudo = /export;" in conf
    assert "Access_Type = None;" in conf and "Clients = 10.251.1.2, 10.251.1.3;" in conf
    assert conf.count("{") == conf.count("}")
    # both versions of the factor nfs_version, one config: NFSv3 and NFSv4.1 at the pseudo path /export
    assert conf.count("Protocols = 3, 4;") == 2 and "Minor_Versions = 1, 2;" in conf


@pytest.mark.skipif(not PLAYBOOK.exists(), reason="needs the venv")
def test_playbooks_syntax_including_knfsd(inventory, tmp_path):
    """Syntax check of the ROLES playbooks and of a knfsd provisioning play against a throwaway inventory."""
    inv = tmp_path / "real.yml"
    inv.write_text(json.dumps({"all": {"children": {
        "sut": {"hosts": {"filer1": {"ansible_host": "192.0.2.10", "ansible_connection": "ssh", "wb_netns": ""}}},
        "slot1": {"hosts": {"filer1": None}}}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    for book in ("provision_sut.yml", "teardown.yml"):
        res = subprocess.run([str(PLAYBOOK), "--syntax-check", "-i", str(inv), str(REPO / "playbooks" / book),
                              "-e", "slot=slot1", "-e", "nfs_server_backend=knfsd"],
                             capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
        assert res.returncode == 0, res.stdout + res.stderr
    listing = subprocess.run([str(PLAYBOOK), "--list-hosts", "-i", str(inv), str(REPO / "playbooks" / "provision_sut.yml"),
                              "-e", "slot=slot1", "-e", "nfs_server_backend=knfsd"],
                             capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    assert listing.returncode == 0 and "filer1" in listing.stdout, listing.stdout + listing.stderr


@pytest.mark.skipif(not (VENV_BIN / "ansible-lint").exists(), reason="needs ansible-lint in the venv")
def test_ansible_lint_production():
    res = subprocess.run(
        [str(VENV_BIN / "ansible-lint"), "--profile", "production", "--nocolor", "roles/", "playbooks/"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
        env=dict(os.environ, PATH=f"{VENV_BIN}:{os.environ.get('PATH', '')}"),
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
