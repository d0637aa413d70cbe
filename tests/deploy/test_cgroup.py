"""roles/nfs_server/files/wb-cgroup.sh on fake cgroup trees (WB_CGROUP_ROOT): the v2 path
(memory.max, io.max, subtree_control) and the errors for a missing controller. This machine is
cgroup v1 (hybrid); the v1 path runs for real in test_roles.py."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "roles" / "nfs_server" / "files" / "wb-cgroup.sh"
MIB_128 = 128 * 1048576


def _run(root: Path, *args: object) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "WB_CGROUP_ROOT": str(root)})


@pytest.fixture
def v2(tmp_path) -> Path:
    """A cgroup v2 root as the kernel shows it: cgroup.controllers and an empty subtree_control."""
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma misc\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    return tmp_path


def test_v2_apply_sets_memory_max_and_io_max_and_is_idempotent(v2):
    first = _run(v2, "apply", "sut1", MIB_128, 100, 0, 0, 5000000, "7:3")
    assert first.returncode == 0 and first.stdout.strip() == "CHANGED", first.stderr
    srv = v2 / "workbench" / "sut1"
    assert (srv / "memory.max").read_text().strip() == str(MIB_128)
    assert (srv / "io.max").read_text().strip() == "7:3 rbps=max wbps=5000000 riops=100 wiops=max"
    for d in (v2, v2 / "workbench"):             # the controllers reach the server's cgroup
        assert set((d / "cgroup.subtree_control").read_text().split()) >= {"+memory", "+io"}
    again = _run(v2, "apply", "sut1", MIB_128, 100, 0, 0, 5000000, "7:3")
    assert again.returncode == 0 and again.stdout == "", (again.stdout, again.stderr)
    unlimited = _run(v2, "apply", "sut1", 0, 100, 0, 0, 5000000, "7:3")
    assert unlimited.stdout.strip() == "CHANGED" and (srv / "memory.max").read_text().strip() == "max"


def test_v2_procs_drop_and_remove(v2):
    assert _run(v2, "apply", "sut2", MIB_128, 0, 0, 0, 0).returncode == 0
    procs = _run(v2, "procs", "sut2").stdout.split()
    assert procs == [str(v2 / "workbench" / "sut2" / "cgroup.procs")]      # one cgroup for both
    assert _run(v2, "drop", "sut2").returncode == 0
    assert (v2 / "workbench" / "sut2" / "memory.reclaim").read_text().strip() == "1T"
    (v2 / "workbench" / "gone").mkdir()      # the kernel removes a cgroup's control files with it
    out = _run(v2, "remove", "gone")
    assert out.returncode == 0 and out.stdout.strip() == "CHANGED" and not (v2 / "workbench" / "gone").exists()


def test_v2_refuses_a_factor_whose_controller_is_missing(v2):
    (v2 / "cgroup.controllers").write_text("cpu pids\n")
    mem = _run(v2, "apply", "sut1", MIB_128, 0, 0, 0, 0)
    assert mem.returncode == 3 and "memory_mb" in mem.stderr and "'memory' controller" in mem.stderr
    io = _run(v2, "apply", "sut1", 0, 100, 0, 0, 0, "7:3")
    assert io.returncode == 3 and "read_iops" in io.stderr and "'io' controller" in io.stderr
    assert not (v2 / "workbench").exists()                 # refused before anything was made
    assert _run(v2, "apply", "sut1", 0, 0, 0, 0, 0).returncode == 0    # no limits: no controller needed


def test_v1_layout_and_missing_controller(tmp_path):
    (tmp_path / "blkio").mkdir()                              # v1 without the memory hierarchy
    assert _run(tmp_path, "procs", "sut1").stdout.split() == [
        str(tmp_path / "memory" / "workbench" / "sut1" / "cgroup.procs"),
        str(tmp_path / "blkio" / "workbench" / "sut1" / "cgroup.procs")]
    out = _run(tmp_path, "apply", "sut1", MIB_128, 0, 0, 0, 0)
    assert out.returncode == 3 and "memory_mb" in out.stderr and "cgroup v1 'memory'" in out.stderr
