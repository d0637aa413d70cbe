"""Malformed inputs of issue 33 (input validation), table-driven: each is refused in one line that
names the flag or field the user typed, and nothing changes — no results directory, nothing in the
current directory, the repository's results/ or the store, and (``test_validation.run_untouched``)
no namespace, mount, lease or process.

The host the capacity rows meet is fixed (``host``): 20 GiB of memory available, 76 GB of free disk
(the figures of the issue's machine), so the rows do not depend on the machine running them.
"""
from __future__ import annotations

import os
import collections
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from test_validation import night, params, rate_check, run_untouched
from workbench.config import untrusted
from workbench.config.paths import FSTRESS, REPO
from workbench.measure import inventory
from workbench.params import hostcheck

pytestmark = pytest.mark.skipif(not FSTRESS.is_file(), reason="needs bin/fstress (make fstress)")

GiB = 1 << 30
LOCAL = (REPO / "inventory" / "local" / "hosts.yml").read_text()
SSH = (REPO / "inventory" / "ssh" / "hosts.yml").read_text()


def billion_laughs() -> str:
    """An inventory of 10 levels of groups, each level 10 aliases of the one below (10⁹ paths)."""
    lines = ["all:", "  children:", "    l0: &l0 {hosts: {load1: {}}}"]
    for k in range(1, 10):
        kids = ", ".join(f"c{k}{j}: *l{k - 1}" for j in range(10))
        lines.append(f"    l{k}: &l{k} {{children: {{{kids}}}}}")
    return "\n".join(lines) + "\n"


def _swap(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


INVENTORIES: dict[str, str] = {
    "laughs": billion_laughs(),
    "shared_netns": _swap(LOCAL, "wb_netns: wb-sut2", "wb_netns: wb-sut1"),
    "bad_addr": _swap(LOCAL, "wb_addr: 10.251.1.1\n", "wb_addr: 10.251.1.300\n"),
    "bad_sut_addr": _swap(LOCAL, "wb_sut_addr: 10.251.2.1", "wb_sut_addr: 10.251.2"),
    "load_in_two": _swap(LOCAL, "        load2:\n          wb_netns: wb-load2",
                         "        load1:\n          wb_netns: wb-load1"),
    "sut_in_two": _swap(LOCAL, "        sut2:\n          wb_netns: wb-sut2", "        sut1:\n          wb_netns: wb-sut1"),
    "same_addr": _swap(LOCAL, "wb_addr: 10.251.2.2", "wb_addr: 10.251.1.2"),
    "anchor": _swap(LOCAL, "    sut:\n      vars:", "    sut:\n      vars: &sutvars"),
    "deep": "all:\n  vars:\n    x: " + "[" * 100 + "]" * 100 + "\n",
    # issue 53: slot 2's SUT is slot 1's machine under another name (its own addresses otherwise)
    "two_names": _swap(_swap(SSH, "    sut:\n      hosts:\n        sshsut1:\n",
                             "    sut:\n      hosts:\n        sshsut1:\n        sshsut2:\n"),
                       "      hosts:\n        sshload1:\n    sshslot1:",
                       "      hosts:\n        sshload1:\n        sshload2:\n    sshslot1:")
    + "    sshslot2:\n      hosts:\n        sshsut2:\n          ansible_host: 10.251.31.1\n"
      "          wb_addr: 10.251.32.1\n        sshload2:\n          ansible_host: 10.251.32.2\n"
      "          wb_addr: 10.251.32.2\n          wb_sut_addr: 10.251.32.1\n          fstress_sut_host: sshsut2\n",
}
NIGHTLY = {"night_laughs": "baselines:\n  - &b {name: web, params: {profile: smoke}}\n  - *b\n"}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("malformed")
    out = {}
    for name, text in {**INVENTORIES, **NIGHTLY}.items():
        out[name] = d / f"{name}.yml"
        out[name].write_text(text)
    out["links"] = d / "links.wl"     # 10⁷ symlinks (within fstress's MaxSymlinks) for 100 files
    out["links"].write_text("mix = getattr:50, readlink:50\nfiles_per_dir = 1\nsymlinks_per_dir = 100000\n"
                            "fileset_min_files = 100\nfileset_files_per_ops = 0.01\n")
    out["spaced"] = d / "my load.wl"
    out["spaced"].write_text("base = web_server\n")
    out["afile"] = d / "afile"
    out["afile"].write_text("")
    return out


# (id, entry point, input, the flag or field the one line must start with after "workbench: ", text)
# "@name" is the path of files[name]; "%/x" a path under this test's own directory.
BAD: list[tuple[str, str, Any, str]] = [
    # the issue's
    ("results-200-chars", "cli", ["--results", "%/" + "a" * 200], "--results: the rating id aaaa"),
    ("results-empty", "cli", ["--results", ""], "--results: '' is empty"),
    ("results-space-names-results", "cli", ["--results", "%/my run"], "--results: the rating id 'my run' holds ' '"),
    ("fstress-cpus-jinja", "cli", ["--fstress-cpus", '{{ lookup("pipe","id") }}'], "--fstress-cpus: "),
    ("backend-knfsd-local", "cli", ["--backend", "knfsd"], "--backend: knfsd runs on real hosts only"),
    ("btrfs-256GiB", "cli", ["--fs", "btrfs", "--disks", "8", "--disk-size-mb", "32768"],
     "--disk-size-mb: 8 disk image(s) of 32768 MiB (256 GiB) do not fit this machine"),
    ("tmpfs-16GiB", "cli", ["--fs", "tmpfs", "--memory-mb", "16384"],
     "--memory-mb: a tmpfs export of 16384 MiB does not fit this machine"),
    ("slots-share-netns", "cli", ["--inventory", "@shared_netns"],
     "--inventory: wb_netns wb-sut1 of host sut2 (slot slot2) is also wb_netns of host sut1 (slot slot1)"),
    ("wb-addr-malformed", "cli", ["--inventory", "@bad_addr"], "--inventory: host sut1 of"),
    ("load-host-in-two-slots", "cli", ["--inventory", "@load_in_two"], "--inventory: load host load1 is in slots slot1 and slot2"),
    ("external-is-other-slots-sut", "cli", ["--server-address", "10.251.2.1", "--server-export", "/export"],
     "--server-address: 10.251.2.1 is the SUT sut2 of slot slot2"),
    ("symlinks-1e7-for-100-files", "cli", ["--workload", "@links"], "--workload: "),
    ("inventory-billion-laughs", "cli", ["--inventory", "@laughs"], "--inventory: cannot read"),
    # our own
    ("results-dot", "cli", ["--results", "."], "--results: '.' is not a rating id"),
    ("results-root", "cli", ["--results", "/"], "--results: '' is not a rating id"),
    ("results-newline", "cli", ["--results", "%/a\nb"], "--results: "),
    ("results-is-a-file", "cli", ["--results", "@afile"], "--results: "),
    ("results-dotdot", "cli", ["--results", "%/x/.."], "--results: '..' is not a rating id"),
    ("results-parent-jinja", "cli", ["--results", "%/{{ lookup('pipe','id') }}/run1"], "--results: "),
    ("slot-jinja", "cli", ["--slot", "{{ 7*7 }}"], "--slot: "),
    ("inventory-path-jinja", "cli", ["--inventory", "/tmp/{{ lookup('env','HOME') }}.yml"], "--inventory: "),
    ("sut-in-two-slots", "cli", ["--inventory", "@sut_in_two"], "--inventory: SUT sut1 is in slots slot1 and slot2"),
    ("two-hosts-one-address", "cli", ["--inventory", "@same_addr"],
     "--inventory: wb_addr 10.251.1.2 of host load2 (slot slot2) is also wb_addr of host load1 (slot slot1)"),
    # issue 53: the local inventory's two slots share the one machine's half (each its quarter)
    ("two-slots-one-half", "cli", ["--fs", "btrfs", "--disks", "8", "--disk-size-mb", "3000"],
     "--disk-size-mb: 8 disk image(s) of 3000 MiB (23 GiB) do not fit this machine"),
    ("one-machine-two-names", "cli", ["--inventory", "@two_names", "--slot", "sshslot1"],
     "--inventory: ansible_host 10.251.31.1:22 of host sshsut2 (slot sshslot2) is also ansible_host of "
     "host sshsut1 (slot sshslot1)"),
    # goals a trial cannot rate against (issue 53)
    ("r-sat-below-a-microsecond", "cli", ["--r-sat-ms", "1e-300"], "--r-sat-ms: 1e-300 ms is below 0.001 ms"),
    ("l-sat-below-r-sat", "cli", ["--r-sat-ms", "40/10"], "--r-sat-ms: the p95 bound 10 ms is below its mean goal 40"),
    ("goal-l-sat-below-its-r-sat", "cli", ["--r-sat-ms", "40,80/50"], "--r-sat-ms: the p95 bound 50 ms is below its"),
    ("r-sat-longer-than-a-trial", "cli", ["--r-sat-ms", "20000/40000"], "--r-sat-ms: 20000 ms is longer than a trial"),
    ("params-l-sat-below-r-sat", "params", {"r_sat_ms": 40, "l_sat_ms": 10}, "l_sat_ms: the p95 bound 10 ms"),
    ("wb-sut-addr-malformed", "cli", ["--inventory", "@bad_sut_addr"], "--inventory: host load2 of"),
    ("inventory-anchor", "cli", ["--inventory", "@anchor"], "--inventory: cannot read"),
    ("inventory-nested-100", "cli", ["--inventory", "@deep"], "--inventory: cannot read"),
    ("tmpfs-default-on-a-small-host", "cli-small", ["--fs", "tmpfs", "--memory-mb", "0"],
     "--memory-mb: a tmpfs export of 1024 MiB does not fit"),
    ("params-description-jinja", "params", {"server_address": "10.0.0.1", "server_export": "/x",
                                            "server_description": "{{ lookup('pipe', 'id') }}"}, "server_description: "),
    ("params-workload-jinja", "params", {"workload": "{% include '/etc/shadow' %}"}, "workload: "),
    ("params-comment-jinja", "params", {"background_workload": "web_server{# x #}"}, "background_workload: "),
    ("params-external-other-sut", "params", {"slot": "slot1", "server_address": "10.251.2.1",
                                             "server_export": "/export"}, "server_address: 10.251.2.1 is the SUT sut2"),
    ("params-knfsd", "params", {"backend": "knfsd"}, "backend: knfsd"),
    ("nightly-aliases", "night", "@night_laughs", "config_path: cannot read"),
]

GOOD: list[tuple[str, str, Any]] = [
    ("results-plain", "cli", ["--results", "%/run-1"]),
    ("workload-file-with-a-space", "cli", ["--workload", "@spaced"]),     # its default results name is made safe
    ("btrfs-within-free-disk", "cli", ["--fs", "btrfs", "--disks", "2", "--disk-size-mb", "4096"]),
    ("tmpfs-within-memory", "cli", ["--fs", "tmpfs", "--memory-mb", "2048"]),
    ("external-own-address", "cli", ["--inventory", str(REPO / "inventory" / "external" / "hosts.yml"), "--slot",
                                     "filer1", "--server-address", "10.251.11.1", "--server-export", "/export"]),
]


def _arg(a: Any, files: dict[str, Path], own: Path) -> Any:
    if isinstance(a, str) and a.startswith("@"):
        return str(files[a[1:]])
    if isinstance(a, str) and a.startswith("%/"):
        return str(own / a[2:])
    if isinstance(a, dict):
        return {k: _arg(v, files, own) for k, v in a.items()}
    return a


@pytest.fixture
def host(monkeypatch):
    """The machine the capacity checks see: 20 GiB available, 76 GB free disk."""
    monkeypatch.setattr(hostcheck, "mem_available_bytes", lambda: 20 * GiB)
    monkeypatch.setattr(hostcheck, "free_disk_bytes", lambda path: 76 * 10**9)


def _call(kind: str, arg: Any, files: dict[str, Path], own: Path, monkeypatch) -> Callable[[], tuple[bool, str]]:
    if kind == "cli-small":
        monkeypatch.setattr(hostcheck, "mem_available_bytes", lambda: 1 * GiB)
    if kind.startswith("cli"):
        return rate_check(*[_arg(a, files, own) for a in arg])
    if kind == "params":
        return params(_arg(arg, files, own))
    return night(Path(_arg(arg, files, own)), own / "store")


def _tree(d: Path) -> list[str]:
    return sorted(str(p) for p in d.rglob("*")) if d.exists() else []


def _alarm(seconds: int):
    def fail(*_):
        raise TimeoutError(f"the check ran {seconds} s (a hang)")
    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    return old


@pytest.mark.parametrize("name,kind,arg,want", BAD, ids=[c[0] for c in BAD])
def test_refused_naming_what_the_user_typed_and_nothing_changed(name, kind, arg, want, files, tmp_path, host,
                                                                monkeypatch):
    own, cwd = tmp_path / "own", tmp_path / "cwd"
    own.mkdir()
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    results_before = _tree(REPO / "results")
    old = _alarm(60)
    try:
        ok, msg, _ = run_untouched(_call(kind, arg, files, own, monkeypatch))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert not ok, f"{name}: accepted: {msg}"
    line = msg.removeprefix("workbench: ").rstrip("\n")
    assert "\n" not in line and line.startswith(want), f"{name}: {msg!r} does not start with {want!r}"
    assert "rating_id" not in line, f"{name}: names rating_id, which the user did not type"
    assert _tree(cwd) == [] and _tree(own) == [], f"{name}: made {_tree(cwd) + _tree(own)}"
    assert _tree(REPO / "results") == results_before, f"{name}: made a results directory"


@pytest.mark.parametrize("name,kind,arg", GOOD, ids=[c[0] for c in GOOD])
def test_near_misses_pass(name, kind, arg, files, tmp_path, host, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ok, msg, _ = run_untouched(_call(kind, arg, files, tmp_path, monkeypatch))
    assert ok and msg.startswith("workbench rate: inputs OK"), f"{name}: {msg}"


def test_the_table_holds_the_issue_and_ours():
    assert len(BAD) >= 13 + 8 and len({c[0] for c in BAD}) == len(BAD)


# --- the pieces on their own -----------------------------------------------------------------------

def test_billion_laughs_is_small_and_refused_fast():
    text = billion_laughs()
    assert len(text) < 2000
    assert yaml.safe_load(text)["all"]["children"]["l9"]["children"]["c90"] is not None   # plain YAML takes it
    with pytest.raises(yaml.YAMLError, match="aliases and anchors are not allowed"):
        untrusted.load_yaml(text)


def test_load_yaml_bounds():
    assert untrusted.load_yaml("a: [1, {b: c}]\n") == {"a": [1, {"b": "c"}]}
    assert untrusted.load_yaml("[" * 60 + "]" * 60) is not None
    with pytest.raises(yaml.YAMLError, match="nested deeper than 64"):
        untrusted.load_yaml("[" * 70 + "]" * 70)
    with pytest.raises(yaml.YAMLError, match="50 bytes; at most 40"):
        untrusted.load_yaml("x: 1\n" * 10, max_bytes=40)
    with pytest.raises(yaml.YAMLError):                     # safe types only
        untrusted.load_yaml("!!python/object/apply:os.system ['true']")


def test_every_shipped_inventory_loads_and_has_no_overlap():
    for inv in sorted((REPO / "inventory").glob("*/hosts.yml")):
        inventory.read_inventory(inv)
        hostcheck.check_slot_overlaps(inv)


def test_refuse_template_markers():
    for ok in ("1", "0-1,3", "web_server", "{ x }", "a{b}", "%", "#"):
        untrusted.refuse_template("f", ok)
    for bad in ("{{x}}", "a{%b", "{#c", ["ok", "{{x}}"], {"k": "{%x"}):
        with pytest.raises(ValueError, match=r"^f[\[.:]"):
            untrusted.refuse_template("f", bad)


def test_host_figures_come_from_the_host(tmp_path, monkeypatch):
    fake = tmp_path / "meminfo"
    fake.write_text("MemTotal:       24000000 kB\nMemAvailable:    1234 kB\n")
    monkeypatch.setattr(hostcheck, "MEMINFO", fake)
    assert hostcheck.mem_available_bytes() == 1234 * 1024
    asked = []                           # (a fixed figure: the disk's real free space moves)

    def disk_usage(path):
        asked.append(path)
        return collections.namedtuple("usage", "total used free")(100 * 10**9, 24 * 10**9, 76 * 10**9)
    monkeypatch.setattr(hostcheck.shutil, "disk_usage", disk_usage)
    assert hostcheck.free_disk_bytes(tmp_path / "not" / "yet") == 76 * 10**9
    assert asked == [tmp_path]                                        # its nearest existing parent


def test_the_state_root_is_the_roles():
    defaults = yaml.safe_load((REPO / "roles" / "nfs_server" / "defaults" / "main.yml").read_text())
    assert defaults["nfs_server_state_root"] == hostcheck.SUT_STATE_ROOT


def test_results_and_rating_ids_named_by_the_flag():
    untrusted.check_results_path("/tmp/x/run-1.b_2")
    untrusted.check_rating_id("a" * untrusted.MAX_RATING_ID)
    for bad in ("", "  ", "/tmp/" + "a" * 129, "x/" * 600 + "y", "/tmp/a b", "/tmp/a\tb", "/tmp/é"):
        with pytest.raises(ValueError, match="^--results: "):
            untrusted.check_results_path(bad)


def test_the_cli_flag_reaches_the_command_line_whole():
    """The refusal of a bad --results, end to end in a fresh process: exit 2, one line, nothing made."""
    cwd = Path(os.environ.get("TMPDIR", "/tmp"))
    out = subprocess.run([sys.executable, "-m", "workbench.cli", "rate", "--check", "--results", ""],
                         capture_output=True, text=True, timeout=120, cwd=cwd,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 2 and out.stderr.startswith("workbench: --results: ''"), out.stderr
    assert out.stderr.count("\n") == 1 and not out.stdout
