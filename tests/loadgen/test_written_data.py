"""What fstress writes, read back from a real Ganesha's backing directory (issue 52).

The files Ganesha stored compress (zstd, as a compressing filer would) to the chosen ratio within
10 %, repeat 4 KiB units in the chosen share within 5 points, and the default is neither zeros nor
compressible beyond 1.05:1. The run's WRITEs carry the same data as the file set's first content.
"""
from __future__ import annotations

import hashlib
import json
import struct
import subprocess
from pathlib import Path

import pytest

# one session Ganesha (conftest `ganesha`) serves them all: under xdist they share a worker
pytestmark = pytest.mark.xdist_group("ganesha")

UNIT = 4096
HEADER = struct.Struct("<4sIQQQ")  # magic, file, unit offset, generation, tag (loadgen/internal/content)
MAGIC = b"fSt1"
RATE_OPS_S = 100  # 32 files (fileset_min_files): 8 MiB, written in a second on loopback


def workload_file(tmp_path: Path, name: str, *data_keys: str) -> Path:
    """A workload of 32 files of 256 KiB, WRITEs of 64 KiB only."""
    path = tmp_path / f"{name}.wl"
    path.write_text("\n".join([
        f"name = {name}", "files_per_dir = 32", "file_size = 256K", "fileset_min_files = 32",
        "fileset_files_per_ops = 0.01", "mix = write:100", "write_size = 64K", *data_keys,
    ]) + "\n")
    return path


def stored_files(slot, name: str) -> list[Path]:
    """The files of workload `name`'s file set as Ganesha stored them."""
    [base] = slot.export_dir.glob(f"fstress-{name}-*")
    files = sorted(p for p in base.rglob("*") if p.is_file())
    assert len(files) == 32, files
    return files


def zstd_ratio(files: list[Path]) -> float:
    """Bytes stored over bytes after `zstd -3`, file by file."""
    raw = packed = 0
    for f in files:
        raw += f.stat().st_size
        packed += len(subprocess.run(["zstd", "-3", "-q", "-c", str(f)], capture_output=True,
                                     check=True, timeout=60).stdout)
    return raw / packed


def units(files: list[Path]) -> list[bytes]:
    return [b[i:i + UNIT] for f in files for b in [f.read_bytes()] for i in range(0, len(b), UNIT)]


def duplicate_share(blocks: list[bytes]) -> float:
    """1 − distinct units / units: what a deduplicating filer saves."""
    return 1 - len({hashlib.sha256(b).digest() for b in blocks}) / len(blocks)


def build(slot, wl: Path, *flags: str) -> None:
    out = slot.fstress("fileset", *slot.connect_args(), "--workload", str(wl), "--rate", str(RATE_OPS_S), *flags)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("ratio", ["1", "2", "4"])
def test_the_stored_files_compress_to_the_chosen_ratio(ganesha, tmp_path, ratio):
    name = f"wd_ratio{ratio}"
    build(ganesha, workload_file(tmp_path, name), "--compress-ratio", ratio)
    got = zstd_ratio(stored_files(ganesha, name))
    assert abs(got / float(ratio) - 1) <= 0.10, f"compress_ratio {ratio}: zstd stored them at {got:.3f}:1"


def test_the_default_is_neither_zeros_nor_compressible(ganesha, tmp_path):
    build(ganesha, workload_file(tmp_path, "wd_default"))
    files = stored_files(ganesha, "wd_default")
    got = zstd_ratio(files)
    blocks = units(files)
    assert got <= 1.05, f"the default data compressed {got:.3f}:1"
    assert not any(b == bytes(UNIT) for b in blocks), "a unit of zeros in the default data"
    assert duplicate_share(blocks) == 0


def test_zeros_are_what_a_zero_detecting_filer_skips(ganesha, tmp_path):
    build(ganesha, workload_file(tmp_path, "wd_zeros", "compress_ratio = zeros"))
    assert all(b == bytes(UNIT) for b in units(stored_files(ganesha, "wd_zeros")))


def test_a_run_writes_the_chosen_duplicate_share_with_its_own_generations(ganesha, tmp_path):
    name = "wd_dedupe"
    wl = workload_file(tmp_path, name, "dedupe_pct = 30", "data_unit = 4K", "compress_ratio = 2")
    build(ganesha, wl)
    out = tmp_path / "run.json"
    proc = ganesha.fstress("run", *ganesha.connect_args(), "--workload", str(wl), "--rate", str(RATE_OPS_S),
                           "--duration", "2", "--warmup", "0.5", "--lag-bound", "50ms", "--json", str(out))
    assert proc.returncode in (0, 3), proc.stderr          # 3: a send-lag stall of this shared VM
    result = json.loads(out.read_text())
    assert result["data"] == "compress_ratio=2 dedupe_pct=30 data_unit=4096"
    assert result["errors"] == 0 and result["ops_total"] > 0
    blocks = units(stored_files(ganesha, name))
    share = 100 * duplicate_share(blocks)
    assert abs(share - 30) <= 5, f"{share:.1f} % of the 4 KiB units repeat another; chose 30"
    headers = [HEADER.unpack_from(b) for b in blocks]
    assert all(h[0] == MAGIC for h in headers), "a unit without fstress's header"
    rewritten = sum(1 for h in headers if h[1] != 0xFFFFFFFF and h[3] != 0)
    assert rewritten > len(blocks) // 10, f"only {rewritten} of {len(blocks)} units carry a run's generation"
