#!/usr/bin/env python3
"""How repeatable is λ*? One configuration rated N times, each from a fresh provisioning (issue 15).

    .venv/bin/python bench/repeatability.py [--ratings 5] [--profile quick] [--slot slot1]
        [--out DIR] [-- <more `workbench rate` flags, e.g. --read-iops 100>]

Each rating is `workbench rate` in its own process with the slot torn down after it (the CLI's
default), so the next one provisions the server, builds the file set and warms up from nothing.
Prints λ*, its CI, the bracket, trials and measured cost per rating, then the median λ*, each
rating's deviation from it, and the issue's two checks: every λ* within ±TOLERANCE of the median,
every rating's CI containing the median, every rating converged with a finite interval, and the
median half-width within HALF_WIDTH of λ* (issue 30). Exit 0 when all hold. Runs as root (slots).
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from workbench.store.local import LocalStore

REPO = Path(__file__).resolve().parent.parent
TOLERANCE = 0.05      # every λ* within ±5 % of the median (issue 15)
HALF_WIDTH = 0.10     # the median interval half-width ≤ 10 % of λ* (issue 30)


def rate_once(out: Path, profile: str, slot: str, extra: list[str], timeout_s: float) -> dict:
    """One rating through the CLI; its result.json (exit 1, unconverged, still has one)."""
    argv = [sys.executable, "-m", "workbench.cli", "rate", "--profile", profile, "--slot", slot,
            "--results", str(out), "--quiet", *extra]
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout_s)
    store = LocalStore(out)
    result = Path(store.url(store.result_key(out.name)))
    if proc.returncode not in (0, 1) or not result.is_file():
        raise RuntimeError(f"workbench rate exit {proc.returncode}: {proc.stderr.strip()[-600:]}")
    res = json.loads(result.read_text())
    res["wall_s"] = time.monotonic() - t0
    return res


def verdict(peaks: list[float], cis: list[list[float | None] | None], converged: list[bool]) -> dict[str, Any]:
    """The checks of issues 15 and 30 on N ratings: the median λ*; every λ* within ±TOLERANCE of
    it; every rating converged with a finite two-sided interval; every interval containing the
    median (an open end — None — contains it on that side); the median half-width ≤ HALF_WIDTH of
    its λ*."""
    med = statistics.median(peaks)
    finite = [ci is not None and ci[0] is not None and ci[1] is not None and 0 < ci[0] <= ci[1] for ci in cis]
    covered = all(ci is not None and (ci[0] is None or ci[0] <= med) and (ci[1] is None or med <= ci[1])
                  for ci in cis)
    halves = [(ci[1] - ci[0]) / 2 / p if f else math.inf for ci, p, f in zip(cis, peaks, finite)]
    return {"median": med, "within": all(abs(p - med) <= TOLERANCE * med for p in peaks),
            "finite": all(finite) and all(converged), "covered": covered,
            "median_half_width": statistics.median(halves),
            "narrow": statistics.median(halves) <= HALF_WIDTH}


def _interval(v) -> str:
    """[lo, hi] of a CI or bracket; an open end (a Fieller interval without bound) as ∞."""
    if not v:
        return "—"
    return (f"{'(−∞' if v[0] is None else f'[{v[0]:.0f}'}, "
            f"{'∞)' if v[1] is None else f'{v[1]:.0f}]'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ratings", type=int, default=5)
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--slot", default="slot1")
    ap.add_argument("--out", type=Path, default=Path("/tmp/workbench/repeatability"))
    ap.add_argument("--timeout-s", type=float, default=1800.0, help="per rating")
    ap.add_argument("extra", nargs="*", help="more `workbench rate` flags (after --)")
    a = ap.parse_args(argv)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    rows = []
    print(f"{a.ratings} ratings, profile {a.profile}, slot {a.slot} {' '.join(a.extra)}".rstrip(), flush=True)
    print(f"{'#':>2} {'λ* ops/s':>9} {'CI':>17} {'bracket':>17} {'trials':>6} {'cost s':>7} {'wall s':>7} converged")
    for i in range(a.ratings):
        res = rate_once(a.out / f"{stamp}-{i}", a.profile, a.slot, a.extra, a.timeout_s)
        rows.append(res)
        print(f"{i:>2} {res['peak_rate']:>9.1f} {_interval(res['peak_rate_ci']):>17} "
              f"{_interval(res['bracket']):>17} {res['n_trials']:>6} {res['cost_s']:>7.0f} "
              f"{res['wall_s']:>7.0f} {res['converged']}", flush=True)
    peaks = [r["peak_rate"] for r in rows]
    v = verdict(peaks, [r.get("peak_rate_ci") for r in rows], [bool(r["converged"]) for r in rows])
    print(f"median λ* {v['median']:.1f} ops/s; deviations " + ", ".join(f"{(p - v['median']) / v['median']:+.1%}" for p in peaks))
    print(f"all within ±{TOLERANCE:.0%} of the median: {v['within']}; every rating converged with a finite "
          f"interval: {v['finite']}; every interval contains the median: {v['covered']}; median half-width "
          f"{v['median_half_width']:.1%} of λ* (≤ {HALF_WIDTH:.0%}: {v['narrow']})")
    return 0 if v["within"] and v["finite"] and v["covered"] and v["narrow"] else 1

if __name__ == "__main__":
    sys.exit(main())
