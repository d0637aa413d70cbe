#!/usr/bin/env python3
"""Does the server telemetry move λ*? N default ratings with it and N without, alternating (issue 50).

    .venv/bin/python bench/telemetry_cost.py [--ratings 5] [--profile quick] [--slot slot1] [--out DIR]
        [-- <more `workbench rate` flags>]

Each rating is `workbench rate` in its own process (bench/repeatability.py's rate_once: a fresh
provisioning, torn down after), with the samplers on, then with WB_TELEMETRY=off (measure.telemetry:
no sampler runs), on, off, ...: drift of the machine over the hour falls on both sides alike. Prints
each rating's λ*, the two medians and their ratio, and each side's spread (max − min over its
median): the issue's bar is medians within 2 %. Exit 0 when they are. Runs as root (slots).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from repeatability import rate_once

BAR = 0.02            # medians within 2 % (issue 50)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ratings", type=int, default=5, help="ratings per side (default 5)")
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--slot", default="slot1")
    ap.add_argument("--out", type=Path, default=Path("/tmp/wb-telemetry-cost"))
    ap.add_argument("--timeout-s", type=float, default=1800.0, help="per rating")
    ap.add_argument("extra", nargs="*", help="more `workbench rate` flags (after --)")
    a = ap.parse_args(argv)
    if not 1 <= a.ratings <= 20:
        print("telemetry_cost.py: --ratings must be in [1, 20]", file=sys.stderr)
        return 2
    peaks: dict[str, list[float]] = {"on": [], "off": []}
    for i in range(2 * a.ratings):
        side = "on" if i % 2 == 0 else "off"
        os.environ["WB_TELEMETRY"] = side
        res = rate_once(a.out / f"{i:02d}-{side}", a.profile, a.slot, a.extra, a.timeout_s)
        peaks[side].append(float(res["peak_rate"]))
        print(f"{i:2d} telemetry {side:3s}  λ* {res['peak_rate']:9.1f} ops/s  converged {res['converged']}  "
              f"trials {res['n_trials']:3d}  wall {res['wall_s']:4.0f} s", flush=True)
    med = {side: statistics.median(v) for side, v in peaks.items()}
    for side, v in peaks.items():
        print(f"telemetry {side:3s}: median {med[side]:.1f} ops/s, spread (max − min) / median "
              f"{(max(v) - min(v)) / med[side]:.1%}")
    ratio = med["on"] / med["off"]
    ok = abs(ratio - 1) <= BAR
    print(f"median on / off = {ratio:.4f} ({'within' if ok else 'NOT within'} {BAR:.0%})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
