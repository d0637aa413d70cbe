#!/usr/bin/env python3
"""Cost floor of a rating on each validity family (issue 16): how much of the 0.40× bar is left
once a rating has found the crossing and measured only there?

Per server (the families of bench/validity.py, same seeds and spec), with σ = the cv of one
60 s trial at the true λ* (`SimulatedServer.trial_cv`; the wall: `WallServer.effective_cv`, its
AR(1) swing counted at the variance it adds to a mean of consecutive trials):

  n at 90 %    trials at λ* whose mean lies within R_sat ± s with probability 0.90 when σ is
               KNOWN (`stats.intervals.trials_within`, Jain §13.9): the fewest trials at λ* that
               put a rating in the region 90 % of the time, if it knew σ and measured nowhere else
  n at stop    the same at the local policy's stop level (1 − 0.8·(1 − c) = 0.96): what a rating
               that stops on a CI at that level needs once σ̂ ≈ σ (df large)
  opening      the local policy's probe time in its actual rating (trials shorter than 60 s)
  floor        opening + 60 s × n, per server; the table shows medians over the servers

and beside them binsearch's median cost (the old default), the bar (0.40× of it), the local
policy's median cost, and the error of its λ̂*: e = log(R(λ̂*)/R_sat) on the true curve, its median
and its robust sd (1.4826 × the median absolute deviation); the region is e in [log 0.9, log 1.1].
A floor near the bar means that the bar leaves no room for any trial away from λ*, for the
model's own error, or for σ being estimated.

Usage:  nice -n 19 .venv/bin/python bench/cost_floor.py [--servers 200] [--families knee,mm] [--seed 12345]
"""
from __future__ import annotations

import argparse
import math
import multiprocessing
import shlex
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT / "src", ROOT):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench.search_cost import md_table  # noqa: E402
from bench.validity import (DEFAULT_LABEL, NEW_DEFAULT_LABEL, POLICIES, PROCESSES, RUNLENGTH_S,  # noqa: E402
                            rate_family, spec_for)
from workbench.controller.decide import find_peak  # noqa: E402
from workbench.measure.families import FAMILY_NAMES, STUDY_SEED, family_servers, true_region  # noqa: E402
from workbench.stats.intervals import trials_within  # noqa: E402

BAR = 0.40                 # issue 16: median cost ≤ 0.40 × the old default's on the same family
IN_REGION = 0.90           # issue 16: ≥ 90 % of ratings in the true peak-rate region


def _one(args) -> tuple[float, ...]:
    """(σ at λ*, n at 90 %, n at the stop level, opening s, local's cost s, in region, e) of server i."""
    family, n, i, seed = args
    spec = spec_for(POLICIES[NEW_DEFAULT_LABEL], 0.0)
    srv = family_servers(family, n, seed)[i]
    peak = srv.true_peak_rate(spec.r_sat_ms)
    sigma = srv.effective_cv(peak, RUNLENGTH_S) if hasattr(srv, "effective_cv") else srv.trial_cv(peak, RUNLENGTH_S)
    res = find_peak(spec, srv.measure)
    opening = sum(t.runlength_s for t in res.trials if t.runlength_s < spec.runlength_s)
    lo, hi = true_region(srv, spec.r_sat_ms, spec.width)
    past = res.peak_rate >= srv.capacity_ops_s          # past capacity the true mean is unbounded
    err = math.inf if past else math.log(srv.true_mean_ms(res.peak_rate) / spec.r_sat_ms)
    return (sigma, trials_within(sigma, spec.width, IN_REGION), trials_within(sigma, spec.width, spec.policy.fit_confidence(spec.confidence)),
            opening, res.cost_s, lo <= res.peak_rate <= hi, err)


def family_floor(family: str, n: int, seed: int, pool) -> dict:
    rows = pool.map(_one, [(family, n, i, seed) for i in range(n)], chunksize=4)
    sigma, n90, nstop, opening, cost, ok, err = (np.array(c, float) for c in zip(*rows))
    ref = rate_family(family, spec_for(POLICIES[DEFAULT_LABEL], 0.0), n, pool, seed)["median_cost_s"]
    med = lambda a: float(np.median(a))  # noqa: E731
    return {"family": family, "ref": ref, "bar": BAR * ref, "sigma": med(sigma),
            "n90": med(n90), "floor90": med(opening + RUNLENGTH_S * n90),
            "nstop": med(nstop), "floorstop": med(opening + RUNLENGTH_S * nstop),
            "opening": med(opening), "cost": med(cost), "in_region": 100.0 * ok.mean(),
            "x90": med(opening + RUNLENGTH_S * n90) / ref, "xstop": med(opening + RUNLENGTH_S * nstop) / ref,
            "xcost": med(cost) / ref, "err": med(err),
            "err_sd": 1.4826 * float(np.median(np.abs(err - np.median(err))))}   # robust sd: 1.4826·MAD


COLS = [("family", "family"), (f"{DEFAULT_LABEL} median cost (s)", "ref"), (f"bar {BAR:g}× (s)", "bar"),
        ("median σ at λ*", "sigma"), ("n at 90 %", "n90"), ("floor at 90 % (s)", "floor90"), ("× ref (90 %)", "x90"),
        ("n at stop level", "nstop"), ("floor at stop level (s)", "floorstop"), ("× ref (stop level)", "xstop"),
        ("local opening (s)", "opening"), ("local median cost (s)", "cost"), ("× ref (local)", "xcost"),
        ("local in region %", "in_region"), ("local median e", "err"), ("local robust sd of e", "err_sd")]
FMT = {"ref": "{:.0f}", "bar": "{:.0f}", "sigma": "{:.3f}", "n90": "{:.1f}", "floor90": "{:.0f}", "x90": "{:.2f}",
       "nstop": "{:.1f}", "floorstop": "{:.0f}", "xstop": "{:.2f}", "opening": "{:.0f}", "cost": "{:.0f}",
       "xcost": "{:.2f}", "in_region": "{:.1f}", "err": "{:+.4f}", "err_sd": "{:.4f}"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", type=int, default=200, help="servers per family (fixed seeds)")
    ap.add_argument("--families", default=",".join(FAMILY_NAMES))
    ap.add_argument("--seed", type=int, default=STUDY_SEED, help=f"seed of the server draws (default {STUDY_SEED})")
    args = ap.parse_args(argv)
    families = [f for f in args.families.split(",") if f]
    bad = [f for f in families if f not in FAMILY_NAMES]
    if bad:
        ap.error(f"unknown families {bad}: choose from {', '.join(FAMILY_NAMES)}")
    print("$ python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *(argv if argv is not None else sys.argv[1:])]))
    t0 = time.perf_counter()
    with multiprocessing.Pool(PROCESSES) as pool:
        rows = []
        for fam in families:
            rows.append(family_floor(fam, args.servers, args.seed, pool))
            print(f"  {fam}: floor at 90 % {rows[-1]['x90']:.2f}×, at the stop level {rows[-1]['xstop']:.2f}×, "
                  f"local {rows[-1]['xcost']:.2f}× ({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"\n## cost floor ({args.servers} servers per family, server seed {args.seed}; "
          f"× ref = median / {DEFAULT_LABEL}'s median cost)\n")
    print(md_table(rows, COLS, FMT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
