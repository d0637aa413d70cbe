#!/usr/bin/env python3
"""λ* of a write-heavy workload on a compressing filer, zeros against incompressible data (issue 52).

    .venv/bin/python bench/compressing_filer.py [--slot slot1] [--inventory FILE] [--profile quick]
        [--fs-compress zstd] [--out bench/out/compressing_filer] [--rate-args "--memory-mb 1024 --read-iops 0"]

Rates the slot's Ganesha on btrfs mounted with compress=<fs-compress> twice, one rating after the
other, with one workload that differs only in what its WRITEs carry: `compress_ratio = zeros` (what
fstress wrote before issue 52) and `compress_ratio = 1` (incompressible, today's default). The
workload is db_tp with 60 % WRITEs (four 64 MiB files: the file set sized for 1000 ops/s; random
8 KiB I/O, log writes with COMMIT).
Prints each rating's λ*, its interval and the ratio λ*(zeros) / λ*(incompressible): how much faster
a generator that writes zeros makes a compressing filer look. --rate-args adds `workbench rate` flags
(e.g. a server whose page cache holds the file set and whose disk reads are not throttled, so that
the write path, not read IOPS, sets λ*).
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# bench/ (this script's folder, first on sys.path) holds bottleneck.py, which pandas would take for
# the optional `bottleneck` package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
WORKLOAD = "base = db_tp\nname = db_tp_w60_{tag}\nmix_share = write:60\ncompress_ratio = {data}\n"


def rate(a: argparse.Namespace, data: str) -> dict:
    from workbench import cli

    tag = "zeros" if data == "zeros" else f"r{data}"
    wl = a.out / f"db_tp_w60_{tag}.wl"
    wl.write_text(WORKLOAD.format(tag=tag, data=data))
    results = a.out / f"rating_{tag}"
    argv = ["rate", "--workload", str(wl), "--slot", a.slot, "--profile", a.profile, "--fs", "btrfs",
            "--fs-compress", a.fs_compress, "--fileset-rate", "1000", "--results", str(results), "--quiet"]
    if a.inventory:
        argv += ["--inventory", a.inventory]
    argv += shlex.split(a.rate_args)
    t0 = time.monotonic()
    rc = cli.main(argv)
    res = json.loads((results / "ratings" / results.name / "result.json").read_text())
    return {"data": data, "rc": rc, "peak_rate": res.get("peak_rate"), "peak_rate_ci": res.get("peak_rate_ci"),
            "converged": res.get("converged"), "n_trials": res.get("n_trials"),
            "wall_s": round(time.monotonic() - t0), "bottleneck": (res.get("bottleneck") or {}).get("line")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slot", default="slot1")
    ap.add_argument("--inventory", help="inventory file (default: the local workbench's)")
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--fs-compress", default="zstd", choices=("zstd", "lzo", "zlib"))
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "compressing_filer")
    ap.add_argument("--rate-args", default="", help="more `workbench rate` flags, e.g. \"--memory-mb 1024\"")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    rows = [rate(a, data) for data in ("zeros", "1")]
    for r in rows:
        print(json.dumps(r))
    zeros, real = (r["peak_rate"] for r in rows)
    if zeros and real:
        print(f"btrfs compress={a.fs_compress}, db_tp with 60 % WRITEs: "
              f"λ*(zeros) / λ*(incompressible) = {zeros / real:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
