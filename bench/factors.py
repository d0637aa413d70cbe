#!/usr/bin/env python3
"""Are the harness's resource factors real? Rate the same sample with one factor changed, on real Ganesha.

    .venv/bin/python bench/factors.py [--slot slot1] [--only memory|disks]

(a) memory: web_server (cache-friendly, read-only) with the server's memory cgroup at 1024 MiB
    (the ~150 MiB file set fits in its page cache) vs 128 MiB (it does not; misses go to a disk
    throttled to 100 read IOPS). Expect λ* to fall with memory.
(b) disks: db_tp (random 8 KB reads in 256 MiB of files, 128 MiB memory) on btrfs raid0 over 1 vs 4
    loop disks, each throttled to 100 read IOPS. Expect λ* to rise with disks.
Each rating is `workbench rate --profile quick` (budget raised so both sides converge); prints
λ*, bracket, CI, trials and the ratio within each pair.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from workbench.output.console import fmt_num
from workbench.store.local import LocalStore

REPO = Path(__file__).resolve().parent.parent
WORKBENCH = REPO / ".venv" / "bin" / "workbench"

PAIRS = {
    "memory": [
        ("web_server, memory 1024 MiB", ["--workload", "web_server", "--memory-mb", "1024"]),
        ("web_server, memory 128 MiB", ["--workload", "web_server", "--memory-mb", "128"]),
    ],
    "disks": [
        ("db_tp, btrfs, 1 disk", ["--workload", "db_tp", "--fs", "btrfs", "--disks", "1",
                                  "--memory-mb", "128", "--fileset-rate", "1000"]),
        ("db_tp, btrfs, 4 disks", ["--workload", "db_tp", "--fs", "btrfs", "--disks", "4",
                                   "--memory-mb", "128", "--fileset-rate", "1000"]),
    ],
}


def rate(slot: str, args: list[str], out: Path) -> dict:
    argv = [str(WORKBENCH), "rate", "--profile", "quick", "--slot", slot, "--budget-s", "900",
            "--read-iops", "100", "--quiet", "--results", str(out), *args]
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    store = LocalStore(out)
    res_file = Path(store.url(store.result_key(out.name)))      # the rating's id is its directory's name
    if not res_file.exists():
        raise RuntimeError(f"{' '.join(argv)} failed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}")
    r = json.loads(res_file.read_text())
    r["wall_s"] = time.monotonic() - t0
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slot", default="slot1")
    ap.add_argument("--only", choices=sorted(PAIRS))
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "factors")
    a = ap.parse_args()
    rows = []
    for factor, pair in PAIRS.items():
        if a.only and factor != a.only:
            continue
        first = None
        for label, args in pair:
            print(f"rating {label} ...", file=sys.stderr, flush=True)
            r = rate(a.slot, args, a.out / label.replace(", ", "_").replace(" ", "-"))
            first = first or r["peak_rate"]
            rows.append((factor, label, r, (r["peak_rate"] or float("nan")) / (first or float("nan"))))
    print(f"{'factor':7} {'sample':28} {'λ* ops/s':>9} {'bracket':>17} {'λ* CI':>19} {'trials':>6} "
          f"{'conv':>5} {'wall s':>6} {'× first':>7}")
    for factor, label, r, ratio in rows:
        bracket, ci = (f"[{fmt_num(lo, '.0f')}, {fmt_num(hi, '.0f')}]"
                       for lo, hi in (r["bracket"], r["peak_rate_ci"] or (None, None)))
        print(f"{factor:7} {label:28} {fmt_num(r['peak_rate'], '.0f'):>9} {bracket:>17} {ci:>19} {r['n_trials']:6d} "
              f"{str(r['converged']):>5} {r['wall_s']:6.0f} {ratio:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
