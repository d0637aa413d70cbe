"""One validation pass before any host changes, for every entry point (issue 13).

A table of malformed inputs across the entry points — rate_peak Params (``validation.checked_plan``),
``workbench rate --check`` argv (in process, ``cli.main``), map_surface sweeps
(``sweep.start_sweep``), nightly configurations (``nightly.start_night``), inventories and workload
files — each refused in one line naming the field, and nothing on the machine changed: the
network namespaces, /proc/mounts, the ganesha/fstress processes and the slot leases are the same
before and after, and the only program the pass started is ``bin/fstress check``. A few valid
inputs pass. Everything runs in process but ``fstress check``: the whole file takes seconds.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest

from workbench import cli
from workbench.config.paths import FSTRESS, REPO
from workbench.lease import leases
from workbench.measure import ansible
from workbench.params import validation
from workbench.params.plan import ParamError
from workbench.pipeline import nightly, sweep
from workbench.store.local import LocalStore

NCPU = os.cpu_count() or 1
LEASES = Path("/tmp/workbench/leases")
EXTERNAL_INVENTORY = REPO / "inventory" / "external" / "hosts.yml"

pytestmark = pytest.mark.skipif(not FSTRESS.is_file(), reason="needs bin/fstress (make fstress)")


# --- what must not change ---------------------------------------------------------------------

def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def machine_state() -> dict[str, Any]:
    """Network namespaces, mounts, ganesha/fstress processes (pid → parent, command line; not this
    one) and slot leases."""
    if shutil.which("ip"):
        netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    else:
        netns = sorted(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else []
    procs = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                cmd = Path(f"/proc/{d}/cmdline").read_bytes()
            except OSError:
                continue
            if b"ganesha" in cmd or b"fstress" in cmd:
                procs[int(d)] = (_ppid(int(d)), cmd)
    lease_files = set()
    for p in LEASES.iterdir() if LEASES.is_dir() else []:
        try:
            lease_files.add((p.name, p.stat().st_mtime_ns, p.read_bytes()))
        except FileNotFoundError:       # another test's lease write (its temporary file renamed away)
            continue
    return {"netns": netns, "mounts": Path("/proc/mounts").read_text(), "procs": procs, "leases": lease_files}


def _ours(pid: int) -> bool:
    """Started by this test, or a daemon (parent 1: a Ganesha forks away from whoever started it)."""
    seen = set()
    while pid and pid not in seen:
        seen.add(pid)
        if pid == os.getpid():
            return True
        parent = _ppid(pid)
        if parent in (None, 0):
            return False
        if parent == 1:
            return len(seen) == 1
        pid = parent
    return False


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs. Another session's ratings on this machine start and end their own fstress and
    Ansible processes all the time: a process that appeared counts only if it descends from this
    test or is a daemon, one that vanished only if it was a daemon (nothing here may kill)."""
    out = [k for k in ("netns", "mounts", "leases") if before[k] != after[k]]
    b, a = before["procs"], after["procs"]
    appeared = [pid for pid in a.keys() - b.keys() if _ours(pid)]
    vanished = [pid for pid in b.keys() - a.keys() if b[pid][0] == 1]
    if appeared or vanished:
        out.append(f"procs (appeared {[a[p][1][:80] for p in appeared]}, vanished {[b[p][1][:80] for p in vanished]})")
    return out


class Spy:
    """Every program started, and any step that could touch a host, while the pass runs."""

    def __init__(self) -> None:
        self.started: list[list[str]] = []
        self.touched: list[str] = []

    @contextlib.contextmanager
    def watching(self):
        real_popen, real_system = subprocess.Popen, os.system
        spy = self

        class Popen(real_popen):                    # subprocess.run and friends go through it
            def __init__(self, args, *a, **kw):
                spy.started.append([str(x) for x in (args if isinstance(args, (list, tuple)) else [args])])
                super().__init__(args, *a, **kw)

        def refuse(what):
            def fn(*a, **kw):
                spy.touched.append(what)
                raise AssertionError(f"the validation pass called {what}")
            return fn

        saved = [(subprocess, "Popen", real_popen), (os, "system", real_system), (os, "kill", os.kill),
                 (os, "killpg", os.killpg),
                 (leases, "lease_slot", leases.lease_slot),
                 (ansible, "ansible_runner_run", ansible.ansible_runner_run),
                 (ansible.AnsibleHarness, "__init__", ansible.AnsibleHarness.__init__)]
        subprocess.Popen, os.system = Popen, refuse("os.system")
        os.kill, os.killpg = refuse("os.kill"), refuse("os.killpg")
        leases.lease_slot = refuse("lease_slot")
        ansible.ansible_runner_run = refuse("ansible-runner")
        ansible.AnsibleHarness.__init__ = refuse("AnsibleHarness")
        try:
            yield self
        finally:
            for obj, name, value in saved:
                setattr(obj, name, value)


ATTEMPTS = 8


def run_untouched(call: Callable[[], tuple[bool, str]]) -> tuple[bool, str, Spy]:
    """`call` (→ accepted?, message) with the machine's state compared before and after. Another
    session on this machine may provision or tear down its own slots meanwhile (rarely): a
    difference is retried (the pass is repeatable and cheap), and only one that persists fails.
    One Spy sees every attempt: a retry finds the canned workload's check cached by the first. In the
    suite the other workers' ratings add and delete network namespaces every few seconds (three
    attempts in a row saw one change, 2026-11-27): ATTEMPTS windows. A pass that changed the machine
    itself would show in every one of them."""
    spy = Spy()
    for _attempt in range(ATTEMPTS):
        before = machine_state()
        with spy.watching():
            ok, msg = call()
        changed = changes(before, machine_state())
        if not changed:
            break
    assert not changed, f"the validation pass changed {changed} ({ATTEMPTS} attempts)"
    assert not spy.touched, spy.touched
    others = [argv for argv in spy.started if argv[:2] != [str(FSTRESS), "check"]]
    assert not others, f"the pass started {others}"
    return ok, msg, spy


# --- the entry points, each as (accepted?, one-line message) ------------------------------------

def params(p: dict[str, Any]) -> Callable[[], tuple[bool, str]]:
    def call():
        try:
            validation.checked_plan(p, "r1", store=None)
        except ParamError as e:
            return False, str(e)
        return True, ""
    return call


def rate_check(*argv: str) -> Callable[[], tuple[bool, str]]:
    def call():
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(["rate", "--check", *argv])
        text = err.getvalue() if rc else out.getvalue()
        assert rc in (0, 2), (rc, text)
        assert text.count("\n") == 1, text                      # one line, either way
        return rc == 0, text
    return call


def swept(p: dict[str, Any], store_dir: Path) -> Callable[[], tuple[bool, str]]:
    def call():
        try:
            sweep.start_sweep(LocalStore(store_dir), {"profile": "smoke", **p}, "sw")
        except ParamError as e:
            return False, str(e)
        return True, ""
    return call


def night(path: Path, store_dir: Path, only=None) -> Callable[[], tuple[bool, str]]:
    def call():
        try:
            nightly.start_night(LocalStore(store_dir), str(path), only, "2026-11-03")
        except ParamError as e:
            return False, str(e)
        return True, ""
    return call


# --- the inputs ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("inputs")
    out: dict[str, Path] = {"dir": d, "none": d / "none.yml"}
    os.mkfifo(d / "fifo")
    out["fifo_raw"] = d / "fifo"
    (d / "adir").mkdir()
    (d / "sizes.dist").write_text("4K:3\n64K:1\n")

    def wl(name: str, text: str, mix: str = "mix = getattr:50, read:50\n") -> None:
        (d / f"{name}.wl").write_text(mix + text + "\n")
        out[name] = d / f"{name}.wl"

    wl("good", "file_size = @sizes.dist\nfiles_per_dir = 10")
    wl("fpd0", "files_per_dir = 0")
    wl("devzero", "file_size = @/dev/zero")
    wl("inf", "file_size = 1e308K")
    wl("huge", "fileset_files_per_ops = 10000")
    wl("missing", "file_size = @missing.dist")
    wl("adir", "file_size = @adir")
    wl("fifo", "read_size = @fifo")
    wl("deep", "max_depth = 100")
    wl("bigio", "read_size = 1G")
    wl("pareto", "file_size = pareto:1.2,1K")
    wl("garbage", "this is not a workload")
    wl("bigdata", "file_size = 1T\nfileset_min_files = 2")

    local = (REPO / "inventory" / "local" / "hosts.yml").read_text()

    def inv(name: str, text: str) -> None:
        (d / f"{name}.yml").write_text(text)
        out[name] = d / f"{name}.yml"

    inv("inv_list", "- slot1\n- slot2\n")
    inv("inv_badyaml", "all: [unclosed\n")
    inv("inv_children", "all:\n  children:\n    loadgen: {hosts: {load1: {ansible_connection: local}}}\n"
        "    sut: {hosts: {sut1: {ansible_connection: local}}}\n"
        "    pair:\n      children:\n        loadgen:\n        sut:\n")
    inv("inv_cpus", local.replace('fstress_cpus: "1"', f'fstress_cpus: "{NCPU}"'))
    inv("inv_srvcpus", local.replace('nfs_server_cpus: "0"', 'nfs_server_cpus: "zero"'))
    inv("inv_rtprio", local.replace("fstress_rt_priority: 1", "fstress_rt_priority: 200"))
    inv("inv_conns", local.replace("fstress_rt_priority: 1", "fstress_rt_priority: 1\n        fstress_conns: 0"))
    inv("inv_lag", local.replace("fstress_rt_priority: 1", 'fstress_rt_priority: 1\n        fstress_lag_bound: "soon"'))
    inv("inv_nosut", "all:\n  children:\n    sut: {hosts: {}}\n    loadgen: {hosts: {load1:}}\n"
        "    slot1: {hosts: {load1: {ansible_connection: local}}}\n")
    inv("inv_cycle", "all:\n  children:\n    g:\n      children:\n        g:\n")   # (aliases: load_yaml refuses them)
    inv("inv_hostslist", "all:\n  children:\n    loadgen:\n      hosts: [load1]\n")

    def cfg(name: str, text: str) -> None:
        (d / f"{name}.yml").write_text(text)
        out[name] = d / f"{name}.yml"

    ok = "  - name: web\n    params: {workload: web_server, profile: smoke}\n"
    cfg("n_tol", "tolerance: 1.5\nbaselines:\n" + ok)
    cfg("n_conf", "confidence: 0.3\nbaselines:\n" + ok)
    cfg("n_dup", "baselines:\n" + ok + ok)
    cfg("n_unsafe", "baselines:\n  - name: a/b\n    params: {}\n")
    cfg("n_disks", "baselines:\n  - name: x\n    params: {disks: 0}\n")
    cfg("n_tmpfs", "baselines:\n  - name: x\n    params: {fs: tmpfs}\n")
    cfg("n_key", "tolerence: 0.1\nbaselines:\n" + ok)
    cfg("n_empty", "baselines: []\n")
    cfg("n_list", "- web\n")
    cfg("n_params", "baselines:\n  - name: x\n    params: [1, 2]\n")
    cfg("n_seed", "seed_trials: 50\nbaselines:\n" + ok)
    cfg("n_slot", "baselines:\n  - name: x\n    params: {slot: sut}\n")
    cfg("n_ok", "baselines:\n" + ok)
    custom = ("  - name: custom\n    params:\n      profile: smoke\n      zipf_alpha: 0.6\n      workload_text: |\n"
              "        base = web_server\n        read_size = {size}\n")
    cfg("n_custom", "baselines:\n" + ok + custom.format(size="4K"))
    cfg("n_custom_bad", "baselines:\n" + custom.format(size="64M"))
    return out


F = "@"       # a case argument "@name": the path of files[name]


def _arg(files: dict[str, Path], a: Any) -> Any:
    if isinstance(a, str) and a.startswith(F):
        return str(files[a[1:]])
    if isinstance(a, dict):
        return {k: _arg(files, v) for k, v in a.items()}
    return a


# (id, entry point, its input, substring the one-line refusal must contain)
BAD: list[tuple[str, str, Any, str]] = [
    # rate_peak Params (validation.checked_plan: plan_from_params + the pass)
    ("params-workload", "params", {"workload": "nosuch"}, "workload: 'nosuch' is not one of"),
    ("params-memory-floor", "params", {"memory_mb": 50}, "memory_mb"),
    ("params-tmpfs-too-small", "params", {"fs": "tmpfs"}, "fs: a tmpfs export of 128 MiB"),
    ("params-tmpfs-p2p", "params", {"fs": "tmpfs", "memory_mb": 0, "workload": "p2p"}, "fs: a tmpfs export of 1024 MiB"),
    ("params-disk-full", "params", {"workload": "db_tp"}, "disk_size_mb: 1 disk(s) of 1024 MiB have room"),
    ("params-disk-floor", "params", {"disk_size_mb": 100}, "disk_size_mb: 100 is too small for fs=ext4"),
    ("params-disks-total", "params", {"fs": "btrfs", "disks": 8, "disk_size_mb": 65536}, "disk_size_mb: disks × disk_size_mb"),
    ("params-disk-max", "params", {"disk_size_mb": 70000}, "disk_size_mb: 70000 is out of range"),
    ("params-budget-one-trial", "params", {"budget_s": 20, "runlength_s": 30}, "budget_s: 20 s does not pay for one trial"),
    ("params-runlength-nan", "params", {"runlength_s": float("nan")}, "runlength_s: must be finite"),
    ("params-rsat-inf", "params", {"r_sat_ms": float("inf")}, "r_sat_ms: must be finite"),
    ("params-server-cpus-syntax", "params", {"server_cpus": "0-"}, "server_cpus: '0-' is not a taskset CPU list"),
    ("params-server-cpus-absent", "params", {"server_cpus": str(NCPU)}, f"server_cpus: '{NCPU}' (SUT sut1 of slot slot1) names CPU"),
    ("params-server-cpus-range", "params", {"server_cpus": "3-1"}, "server_cpus: range '3-1'"),
    ("params-max-trials", "params", {"max_trials": 0}, "max_trials: 0 is out of range"),
    ("params-slot-sut", "params", {"slot": "sut"}, "slot: 'sut' is not one of auto"),
    ("params-seed-load-missing", "params", {"seed_source": "load"}, "seed_load: required"),
    ("params-seed-load-unused", "params", {"seed_load": 5}, "seed_load: only used"),
    ("params-load-hosts", "params", {"load_hosts": 2}, "load_hosts: the rating needs 2 load hosts"),
    ("params-unknown", "params", {"bogus": 1}, "unknown parameter(s): bogus"),
    ("params-threads-bool", "params", {"threads": True}, "threads: expected integer"),
    ("params-external-factor", "params", {"server_address": "10.0.0.1", "server_export": "/x", "fs": "xfs"}, "fs=xfs"),
    # workbench rate --check (in process)
    ("cli-slot-all", "cli", ["--slot", "all"], "slot: 'all' is not a slot of"),
    ("cli-slot-sut", "cli", ["--slot", "sut"], "slot: 'sut' is not a slot of"),
    ("cli-slot-loadgen", "cli", ["--slot", "loadgen"], "slot: 'loadgen' is not a slot of"),
    ("cli-slot-unknown", "cli", ["--slot", "slot9"], "slots: slot1, slot2"),
    ("cli-fstress-cpus-absent", "cli", ["--fstress-cpus", str(NCPU)], f"fstress_cpus: '{NCPU}' (load host load1"),
    ("cli-fstress-cpus-range", "cli", ["--fstress-cpus", "1-0"], "fstress_cpus: range '1-0'"),
    ("cli-fstress-cpus-syntax", "cli", ["--fstress-cpus", "one"], "fstress_cpus: 'one' is not a taskset CPU list"),
    ("cli-fstress-cpus-huge", "cli", ["--fstress-cpus", "0-99999"], "fstress_cpus: range '0-99999'"),
    ("cli-fileset-rate-0", "cli", ["--fileset-rate", "0"], "fileset_rate: 0.0 is not allowed"),
    ("cli-fileset-rate-nan", "cli", ["--fileset-rate", "nan"], "fileset_rate: nan"),
    ("cli-fileset-rate-huge", "cli", ["--fileset-rate", "1e9"], "fileset_rate: 1000000000.0 is not allowed"),
    ("cli-warmup-negative", "cli", ["--warmup-s", "-1"], "warmup_s: -1.0 is not allowed"),
    ("cli-warmup-inf", "cli", ["--warmup-s", "inf"], "warmup_s: inf"),
    ("cli-first-load-0", "cli", ["--first-load", "0"], "first_load: 0.0 is not allowed"),
    ("cli-first-load-nan", "cli", ["--first-load", "nan"], "first_load: nan is not allowed"),
    ("cli-load-hosts-0", "cli", ["--load-hosts", "0"], "load_hosts: 0 is out of range"),
    ("cli-budget-one-trial", "cli", ["--budget-s", "12", "--runlength-s", "30"], "budget_s: 12 s does not pay"),
    ("cli-confidence", "cli", ["--confidence", "1.5"], "confidence: 1.5 is out of range"),
    ("cli-inventory-missing", "cli", ["--inventory", "@none"], "inventory: cannot read"),
    ("cli-inventory-devzero", "cli", ["--inventory", "/dev/zero"], "inventory: /dev/zero is not a regular file"),
    ("cli-inventory-dir", "cli", ["--inventory", "@dir"], "is not a regular file"),
    # workload files (through fstress check)
    ("wl-files-per-dir-0", "cli", ["--workload", "@fpd0"], "files_per_dir: must be ≥ 1 on average, got 0"),
    ("wl-dev-zero", "cli", ["--workload", "@devzero"], "file_size: /dev/zero is a device"),
    ("wl-1e308K", "cli", ["--workload", "@inf"], "file_size: value \"1e308K\" is not a finite number"),
    ("wl-huge-fileset", "cli", ["--workload", "@huge"], "huge.wl: file set: 80000000 files"),
    ("wl-huge-fileset-names", "cli", ["--workload", "@huge", "--fileset-rate", "8000"], "at most 10000000"),
    ("wl-missing-dist", "cli", ["--workload", "@missing"], "file_size: cannot read"),
    ("wl-dist-is-dir", "cli", ["--workload", "@adir"], "is a directory"),
    ("wl-dist-is-fifo", "cli", ["--workload", "@fifo"], "read_size: "),
    ("wl-itself-fifo", "cli", ["--workload", "@fifo_raw"], "workload: '"),
    ("wl-max-depth", "cli", ["--workload", "@deep"], "max_depth: \"100\" is not an integer in [0, 64]"),
    ("wl-read-size", "cli", ["--workload", "@bigio"], "read_size: value 1G is too large; at most 16M"),
    ("wl-unbounded-pareto", "cli", ["--workload", "@pareto"], "file_size: unbounded"),
    ("wl-not-a-workload", "cli", ["--workload", "@garbage"], "expected key = value"),
    ("wl-1TiB-of-data", "cli", ["--workload", "@bigdata"], "of data"),
    ("inv-lag-bound", "cli", ["--inventory", "@inv_lag", "--profile", "standard"], "fstress_lag_bound: "),
    # inventories
    ("inv-a-list", "cli", ["--inventory", "@inv_list"], "inventory: "),
    ("inv-bad-yaml", "cli", ["--inventory", "@inv_badyaml"], "inventory: cannot read"),
    ("inv-group-of-groups", "cli", ["--inventory", "@inv_children", "--slot", "pair"], "slot: 'pair' is not a slot"),
    ("inv-fstress-cpus-absent", "cli", ["--inventory", "@inv_cpus"], f"fstress_cpus: '{NCPU}' (load host load1"),
    ("inv-server-cpus-syntax", "cli", ["--inventory", "@inv_srvcpus"], "nfs_server_cpus: 'zero' is not a taskset CPU list"),
    ("inv-rt-priority", "cli", ["--inventory", "@inv_rtprio"], "fstress_rt_priority: 200 (load host load1 of slot slot1)"),
    ("inv-conns", "cli", ["--inventory", "@inv_conns"], "fstress_conns: 0"),
    ("inv-no-sut", "cli", ["--inventory", "@inv_nosut"], "slot: slot slot1 of"),
    ("inv-cycle", "cli", ["--inventory", "@inv_cycle"], "is its own descendant"),
    ("inv-hosts-a-list", "cli", ["--inventory", "@inv_hostslist"], "hosts is a list; want a mapping"),
    # map_surface sweeps (sweep.start_sweep: nothing stored before the pass)
    ("sweep-null-level", "sweep", {"factors": {"memory_mb": [128, None]}}, "factors.memory_mb: a level is null"),
    ("sweep-empty-levels", "sweep", {"factors": {"memory_mb": []}}, "factors.memory_mb: give a list of at least 2"),
    ("sweep-duplicate-level", "sweep", {"factors": {"memory_mb": [128, 256, 128]}}, "factors.memory_mb: level 128 is given twice"),
    ("sweep-grid-cap", "sweep", {"factors": {"threads": list(range(1, 17)), "memory_mb": list(range(128, 144)),
                                             "read_iops": list(range(10, 27))}},
     "factors: the full grid has 4352 points (threads 16 × memory_mb 16 × read_iops 17); at most 4096"),
    ("sweep-dopt-grid-cap", "sweep", {"design": "dopt", "n_samples": 10, "factors": {
        "threads": list(range(1, 65)), "read_iops": list(range(1, 65)), "sync": [True, False]}}, "full grid has 8192 points"),
    ("sweep-unknown-factor", "sweep", {"factors": {"colour": [1, 2]}}, "factors: unknown factor 'colour'"),
    ("sweep-bad-level", "sweep", {"factors": {"fs": ["ext4", "zfs"]}}, "fs: 'zfs' is not one of"),
    ("sweep-level-float", "sweep", {"factors": {"memory_mb": [128, 256.5]}}, "memory_mb: expected integer"),
    ("sweep-level-below-floor", "sweep", {"factors": {"memory_mb": [128, 50]}}, "memory_mb"),
    ("sweep-too-many-levels", "sweep", {"factors": {"read_iops": list(range(65))}}, "factors.read_iops: 65 levels; at most 64"),
    ("sweep-design", "sweep", {"design": "grid", "factors": {"memory_mb": [128, 256]}}, "design: 'grid' is not one of"),
    ("sweep-n-samples-str", "sweep", {"design": "dopt", "n_samples": "3", "factors": {"memory_mb": [128, 256]}}, "n_samples: '3'"),
    ("sweep-n-samples-big", "sweep", {"design": "lhs", "n_samples": 1000, "factors": {"memory_mb": [128, 256]}}, "n_samples: 1000"),
    ("sweep-seeding", "sweep", {"seeding": "yes", "factors": {"memory_mb": [128, 256]}}, "seeding: 'yes'"),
    ("sweep-unknown-key", "sweep", {"levels": {}, "factors": {"memory_mb": [128, 256]}}, "unknown sweep parameter(s): levels"),
    ("sweep-fixed-clash", "sweep", {"factors": {"memory_mb": [128, 256]}, "fixed": {"memory_mb": 512}}, "fixed: memory_mb also varied"),
    ("sweep-tmpfs-sample", "sweep", {"factors": {"memory_mb": [128, 256]}, "fixed": {"fs": "tmpfs"}}, "fs: a tmpfs export of 128 MiB"),
    ("sweep-zipf-level", "sweep", {"factors": {"zipf_alpha": [0.5, 9]}}, "zipf_alpha: 9 is out of range"),
    # custom workloads and workload factors (rendered text through fstress check)
    ("params-workload-text-key", "params", {"workload_text": "mix = read:1\nfile_sise = 4K\n"},
     "workload_text: line 2 'file_sise = 4K': unknown key \"file_sise\""),
    ("params-workload-text-base-second", "params", {"workload_text": "name = mine\nbase = web_server\n"},
     "workload_text: line 2 'base = web_server': base must be the first key"),
    ("params-workload-text-file", "params", {"workload_text": "mix = read:1\nfile_size = @/dev/zero\n"},
     "workload_text line 2: '@/dev/zero' names a file"),
    ("params-mix-share-alone", "params", {"workload_text": "mix = read:1\n", "mix_read_pct": 50},
     "mix_read_pct: mix_share: the shares sum to 50 % and the mix has no other operation"),
    ("cli-zipf-on-a-file", "cli", ["--workload", "@good", "--zipf-alpha", "1"], "zipf_alpha: workload factors apply"),
    # nightly configurations (nightly.start_night: nothing stored before the pass)
    ("night-tolerance", "night", "@n_tol", "tolerance: 1.5 is not allowed"),
    ("night-confidence", "night", "@n_conf", "confidence: 0.3 is not allowed"),
    ("night-duplicate-name", "night", "@n_dup", "baselines[1].name: 'web' is given twice"),
    ("night-unsafe-name", "night", "@n_unsafe", "baselines[0].name: 'a/b' is not store-safe"),
    ("night-bad-params", "night", "@n_disks", "disks: 0 is out of range"),
    ("night-tmpfs-baseline", "night", "@n_tmpfs", "fs: a tmpfs export"),
    ("night-unknown-key", "night", "@n_key", "unknown key(s) tolerence"),
    ("night-no-baselines", "night", "@n_empty", "baselines: "),
    ("night-a-list", "night", "@n_list", "config_path: "),
    ("night-params-list", "night", "@n_params", "baselines[0].params (x)"),
    ("night-seed-trials", "night", "@n_seed", "seed_trials must be an integer in [2, 20]"),
    ("night-slot", "night", "@n_slot", "slot: 'sut' is not one of"),
    ("night-config-dir", "night", "@dir", "config_path: "),
    ("night-config-devzero", "night", "/dev/zero", "config_path: /dev/zero is not a regular file"),
    ("night-custom-workload", "night", "@n_custom_bad",
     "workload_text: line 2 'read_size = 64M': read_size: value 64M is too large; at most 16M (in baseline"),
    ("night-only-unknown", "night-only", ("@n_ok", ["nosuch"]), "only: unknown baseline(s) nosuch; baselines: web"),
]

GOOD: list[tuple[str, str, Any]] = [
    ("cli-defaults", "cli", []),
    ("cli-workload-file", "cli", ["--workload", "@good", "--fileset-rate", "1000"]),
    ("cli-slot2-all-cpus", "cli", ["--slot", "slot2", "--fstress-cpus", f"0-{NCPU - 1}"]),
    ("cli-tmpfs-big-enough", "cli", ["--fs", "tmpfs", "--memory-mb", "1024"]),
    ("cli-external-filer", "cli", ["--inventory", str(EXTERNAL_INVENTORY), "--slot", "filer1",
                                   "--server-address", "10.251.11.1", "--server-export", "/export"]),
    ("params-smoke", "params", {"profile": "smoke", "slot": "slot2"}),
    ("sweep-2x2", "sweep", {"factors": {"memory_mb": [128, 256], "read_iops": [100, 200]}}),
    ("sweep-zipf", "sweep", {"factors": {"zipf_alpha": [0.6, 0.9]}, "workload_text": "base = web_server\n"}),
    ("params-custom-text", "params", {"profile": "smoke", "slot": "slot2", "workload_text": "base = mail\nread_size = 4K\n"}),
    ("cli-genomics-factors", "cli", ["--workload", "genomics", "--zipf-alpha", "0.5", "--mix-read-pct", "50"]),
    ("night-repo-config", "night", str(REPO / "config" / "nightly.yml")),
    ("night-custom-workload", "night", "@n_custom"),
]


def entry(kind: str, arg: Any, files: dict[str, Path], store_dir: Path) -> Callable[[], tuple[bool, str]]:
    arg = _arg(files, arg) if not isinstance(arg, (list, tuple)) else [_arg(files, a) for a in arg]
    if kind == "params":
        return params(arg)
    if kind == "cli":
        return rate_check(*arg)
    if kind == "sweep":
        return swept(arg, store_dir)
    if kind == "night-only":
        return night(Path(arg[0]), store_dir, arg[1])
    return night(Path(arg), store_dir)


def test_the_table_is_large_and_spans_every_entry_point():
    assert len(BAD) >= 50 and len({c[0] for c in BAD}) == len(BAD)
    assert {c[1] for c in BAD} >= {"params", "cli", "sweep", "night"}


def _as_flag(want: str) -> str:
    """The command line names the flag the user typed: "fstress_cpus: …" is "--fstress-cpus: …" there."""
    field, sep, rest = want.partition(": ")
    return f"--{field.replace('_', '-')}: {rest}" if sep and field.isidentifier() else want


@pytest.mark.parametrize("name,kind,arg,want", BAD, ids=[c[0] for c in BAD])
def test_refused_in_one_line_naming_the_field_and_nothing_changed(name, kind, arg, want, files, tmp_path):
    store_dir = tmp_path / "store"
    ok, msg, _ = run_untouched(entry(kind, arg, files, store_dir))
    assert not ok, f"{name}: accepted"
    assert "\n" not in msg.rstrip("\n") and (want in msg or _as_flag(want) in msg), f"{name}: {msg!r} lacks {want!r}"
    assert not store_dir.exists() or not any(store_dir.rglob("*")), f"{name}: stored before the check"


@pytest.mark.parametrize("name,kind,arg", GOOD, ids=[c[0] for c in GOOD])
def test_valid_inputs_pass_touching_nothing(name, kind, arg, files, tmp_path, monkeypatch):
    monkeypatch.setattr(validation, "_canned_checks", {})       # fstress checks canned ones too
    ok, msg, spy = run_untouched(entry(kind, arg, files, tmp_path / "store"))
    assert ok, f"{name}: refused: {msg}"
    assert spy.started, "the workload was not checked by fstress"
    if kind == "cli":
        assert msg.startswith("workbench rate: inputs OK")


def test_the_drain_bound_is_a_number_of_seconds():
    from workbench.params.plan import ParamError
    from workbench.params.validation import check_fstress_var
    for ok in (0, 30, 60.5):
        check_fstress_var("fstress_drain_timeout_s", ok)
    for bad in (-1, "60", float("nan"), 7200, True):
        with pytest.raises(ParamError, match="fstress_drain_timeout_s"):
            check_fstress_var("fstress_drain_timeout_s", bad)
