#!/usr/bin/env python3
"""What fstress's written data costs the generator: CPU per WRITE, zeros against real data (issue 52).

    python3 bench/write_data_cost.py [--rates 10000,50000] [--write-size 8K] [--repeats 3]
                                     [--duration S] [--warmup S] [--json OUT]

Python 3 standard library only; the helpers of bench/generator_capacity.py. It builds fstress,
starts `fstress nullserver` on the server core, and on the generator core runs a WRITE-only workload
(--write-size WRITEs in 16 files of 1 MiB) at each rate with each data spec, side by side in one run:
zeros, incompressible unique data (the default), and compress_ratio 2 with 30 % duplicates. CPU per
call is the run's `generator_cpu_s` over the calls it sent (generator_capacity's trial, lag bound
2 ms, quantum 50 µs); the table gives the median of the repeats
and its ratio to zeros at the same rate — the price of writing what a filer's users write.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generator_capacity as gc  # noqa: E402

SPECS = (("zeros", ("--compress-ratio", "zeros")), ("unique 1:1", ()),
         ("2:1, 30 % dup", ("--compress-ratio", "2", "--dedupe-pct", "30")))


def write_workload(tmp: Path, size: str) -> Path:
    wl = tmp / "write_only.wl"
    wl.write_text(f"name = write_only\nmix = write:1\nwrite_size = {size}\nfile_size = 1M\n"
                  "fileset_min_files = 16\nfileset_files_per_ops = 0.0001\n")
    return wl


def trial(a, ctx: dict, rate: int, flags: tuple[str, ...]) -> dict:
    """One run of generator_capacity's trial with these data flags."""
    return gc.fstress_trial(a, ctx["fstress"], ctx["wl"], ctx["port"], ctx["gen"], "50us", rate, ctx["tmp"], extra=flags)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", type=lambda s: [int(float(x)) for x in s.split(",")], default=[10_000, 50_000])
    ap.add_argument("--write-size", default="8K")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--server-core", default="0")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="wdcost-") as td:
        tmp = Path(td)
        fstress, _ = gc.build(tmp)
        port = gc.free_port()
        server = subprocess.Popen(["taskset", "-c", a.server_core, str(fstress), "nullserver", "--listen",
                                   f"127.0.0.1:{port}"], env=dict(os.environ, GOMAXPROCS="1"),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            gen = "1" if a.server_core == "0" else "0"
            ctx = {"fstress": fstress, "wl": write_workload(tmp, a.write_size), "port": port, "tmp": tmp, "gen": gen}
            for rate in a.rates:
                for _ in range(a.repeats):          # the specs interleaved: drift hits them alike
                    rows += [{"spec": name, **trial(a, ctx, rate, flags)} for name, flags in SPECS]
        finally:
            server.kill()
            server.wait()
    print(f"WRITE-only, {a.write_size} WRITEs, one generator core, median of {a.repeats}:")
    for rate in a.rates:
        med = {name: statistics.median(r["cpu_us_per_op"] for r in rows if r["rate"] == rate and r["spec"] == name)
               for name, _ in SPECS}
        sat = sum(r["saturated"] for r in rows if r["rate"] == rate)
        print(f"  {rate:>7,} ops/s: " + "; ".join(f"{n} {v:.2f} us/call ({v / med['zeros']:.2f}x)"
                                              for n, v in med.items()) + f"; {sat} saturated runs")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
