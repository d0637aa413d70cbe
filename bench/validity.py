#!/usr/bin/env python3
"""Validity study (issue 16): does a rating's λ* mean what it claims, and at what cost?

For each server family (``workbench.measure.families``: mm, knee, heavy, cold) × policy, rates
``--servers`` seeded simulated servers with the real controller (``find_peak``, the loop around
``decide``) and prints per family × policy:

  in region   share of ratings whose λ* lies in the TRUE peak-rate region
              [λ(R_sat(1 − s)), λ(R_sat(1 + s))] (true mean response at λ* within R_sat ± s·R_sat)
  CI covers   share whose reported λ* CI contains the true λ*
  median cost median over servers of the trial time incl. overhead (PeakResult.cost_s), s
  × default   median cost / the default's (binsearch, inside rule) on the same family

``--frontier P,Q`` adds the in-region / median-cost frontier of policies P, Q when c and a vary.

Usage:  nice -n 19 .venv/bin/python bench/validity.py [--servers 200] [--quick] [--frontier local]
            [--families mm,knee] [--policies binsearch,local] [--overhead-s 0] [--processes 2] [--seed 12345]

"local" is RatingSpec's default since issue 16 (`controller.policy.LocalPolicy`: policy local, stop
rule fit); "binsearch" (the inside rule) was the default before it and is the reference of "× default".
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
from workbench.controller.decide import find_peak  # noqa: E402
from workbench.controller.spec import RatingSpec  # noqa: E402
from workbench.measure.families import FAMILY_NAMES, STUDY_SEED, family_servers, true_region  # noqa: E402

R_SAT_MS = 40.0            # mean response time threshold of issue 16's study
WIDTH = 0.10               # s: region R_sat ± 10 %
CONFIDENCE = 0.95          # c
ACCURACY = 0.90            # a
RUNLENGTH_S = 60.0         # every trial 60 s (fixed runlength)
TRIAL_OVERHEAD_S = 0.0     # issue 16's costs are Σ runlengths (5880 s = 98 × 60 s); --overhead-s to change
DEFAULT_LABEL = "binsearch"   # the reference ("× default"): the profiles' default before issue 16 (inside rule)
NEW_DEFAULT_LABEL = "local"    # RatingSpec's default since issue 16 (controller.policy.LocalPolicy)
POLICIES = {  # label -> spec fields beyond the study's
    "binsearch": {"policy": "binsearch"},
    "model": {"policy": "model"},
    "safeguarded": {"policy": "safeguarded"},
    "local": {},                 # the recommended policy: RatingSpec's default (controller.policy.LocalPolicy)
}
CANDIDATES = {  # issue 16 candidates and ablations (not defaults): label -> spec fields
    "binsearch+fit": {"policy": "binsearch", "stop_rule": "fit"},
    "safeguarded+fit": {"policy": "safeguarded", "stop_rule": "fit"},
    "local-noprobe": {"policy": {"name": "local", "probe_share": None}},
    "local-cut": {"policy": {"name": "local", "capacity_cut": 0.05}},    # issue 30 (d) on (not the default)
    "local-stopc": {"policy": {"name": "local", "fit_stop_share": 1.0, "fit_ci_share": 1.0}},
    "local-stopc-report": {"policy": {"name": "local", "fit_stop_share": 1.0}},
    "local-hw10": {"interval_halfwidth": 0.10},      # certification adds new loads to a half-width of 10 % (quick)
}
FRONTIER = ((0.95, 0.80), (0.90, 0.80), (0.90, 0.70))   # (c, a) of the frontier rows (0.95, 0.90: the main table)
PROCESSES = 2              # at most 2 worker processes (a shared 2-core box)


def spec_for(fields, overhead_s: float, **kw) -> RatingSpec:
    base = dict(r_sat_ms=R_SAT_MS, width=WIDTH, confidence=CONFIDENCE, accuracy=ACCURACY,
                runlength_s=RUNLENGTH_S, trial_overhead_s=overhead_s)
    base.update(kw)
    return RatingSpec(**{**base, **fields})


def _rate_one(args) -> tuple:
    family, n, i, spec, seed = args
    srv = family_servers(family, n, seed)[i]
    res = find_peak(spec, srv.measure)
    lo, hi = true_region(srv, spec.r_sat_ms, spec.width)
    true = srv.true_peak_rate(spec.r_sat_ms)
    m_lo, m_hi = res.peak_rate_ci_model
    return (lo <= res.peak_rate <= hi, res.peak_rate_ci[0] <= true <= res.peak_rate_ci[1], res.converged,
            res.reason.startswith("fit:"), res.cost_s, res.n_trials,
            (res.peak_rate_ci[1] - res.peak_rate_ci[0]) / true,
            0.0 < res.peak_rate_ci[0] <= res.peak_rate_ci[1] < math.inf,
            (m_lo <= true <= m_hi) if math.isfinite(m_lo) and math.isfinite(m_hi) else None)


def rate_family(family: str, spec: RatingSpec, n: int, pool=None, seed: int = STUDY_SEED) -> dict:
    """Rate n servers of `family` (server draws seeded by `seed`) with `spec`; the study's figures for that cell."""
    jobs = [(family, n, i, spec, seed) for i in range(n)]
    out = pool.map(_rate_one, jobs, chunksize=4) if pool is not None else list(map(_rate_one, jobs))
    ok, cov, conv, fit, costs, trials, widths, finite, model = (list(col) for col in zip(*out))
    fit_stops = sum(fit)
    model_def = [m for m in model if m is not None]
    return {"in_region": 100.0 * sum(ok) / n, "ci_covers": 100.0 * sum(cov) / n, "converged": 100.0 * sum(conv) / n,
            "median_cost_s": float(np.median(costs)), "mean_cost_s": float(np.mean(costs)),
            "median_trials": float(np.median(trials)), "fit_stops": 100.0 * fit_stops / n,
            "fit_in_region": 100.0 * sum(o and f for o, f in zip(ok, fit)) / fit_stops if fit_stops else math.nan,
            "median_ci_width": 100.0 * float(np.median(widths)), "finite": 100.0 * sum(finite) / n,
            "model_ci_covers": 100.0 * sum(model_def) / len(model_def) if model_def else math.nan,
            "model_ci_defined": 100.0 * len(model_def) / n}


def run_cells(families, labels, n, overhead_s, spec_kw=None, pool=None, seed: int = STUDY_SEED) -> list[dict]:
    rows = []
    for fam in families:
        for label in labels:
            fields = {**POLICIES, **CANDIDATES}[label]
            t0 = time.perf_counter()
            r = rate_family(fam, spec_for(fields, overhead_s, **(spec_kw or {})), n, pool, seed)
            r.update(family=fam, policy=label, wall_s=time.perf_counter() - t0)
            rows.append(r)
            print(f"  {fam:5s} {label:16s} in region {r['in_region']:5.1f} %  CI covers {r['ci_covers']:5.1f} %"
                  f"  finite {r['finite']:5.1f} %  width {r['median_ci_width']:5.1f} %"
                  f"  median cost {r['median_cost_s']:7.0f} s  ({r['wall_s']:.0f} s wall)", flush=True)
    return rows


def add_ratios(rows: list[dict], ref: dict[str, float]) -> None:
    for r in rows:
        base = ref.get(r["family"])
        r["x_default"] = r["median_cost_s"] / base if base else math.nan


FMT = {"in_region": "{:.1f}", "ci_covers": "{:.1f}", "converged": "{:.1f}", "median_cost_s": "{:.0f}",
       "mean_cost_s": "{:.0f}", "median_trials": "{:.0f}", "median_ci_width": "{:.1f}", "x_default": "{:.2f}",
       "fit_stops": "{:.1f}", "finite": "{:.1f}", "fit_in_region": "{:.1f}", "model_ci_covers": "{:.1f}", "model_ci_defined": "{:.1f}",
       "confidence": "{:.2f}", "accuracy": "{:.2f}"}
COLS = [("family", "family"), ("policy", "policy"), ("in region %", "in_region"), ("λ* CI covers %", "ci_covers"),
        ("median cost (s)", "median_cost_s"), ("× default cost", "x_default"), ("mean cost (s)", "mean_cost_s"),
        ("median trials", "median_trials"), ("converged %", "converged"), ("two-sided finite CI %", "finite"),
        ("median CI width % of λ*", "median_ci_width"),
        ("stopped by the fit %", "fit_stops"), ("in region when stopped by the fit %", "fit_in_region"),
        ("model CI covers % (when defined)", "model_ci_covers"), ("model CI defined %", "model_ci_defined")]


def frontier(families, labels, n, overhead_s, pool=None, seed: int = STUDY_SEED) -> list[dict]:
    rows = []
    for c, a in FRONTIER:
        for r in run_cells(families, labels, n, overhead_s, {"confidence": c, "accuracy": a}, pool, seed):
            r.update(confidence=c, accuracy=a)
            rows.append(r)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", type=int, default=200, help="servers per family (fixed seeds)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 20 servers, no frontier")
    ap.add_argument("--families", default=",".join(FAMILY_NAMES))
    ap.add_argument("--policies", default=",".join(POLICIES), help=f"of {', '.join({**POLICIES, **CANDIDATES})}")
    ap.add_argument("--frontier", default="", help="policies (comma-separated) whose (c, a) frontier to add")
    ap.add_argument("--overhead-s", type=float, default=TRIAL_OVERHEAD_S, help="per-trial overhead, s")
    ap.add_argument("--seed", type=int, default=STUDY_SEED,
                    help=f"seed of the server draws (default {STUDY_SEED}, the study's; another one checks a change)")
    ap.add_argument("--processes", type=int, default=PROCESSES, help=f"worker processes (at most {PROCESSES})")
    args = ap.parse_args(argv)
    n = 20 if args.quick else args.servers
    families = [f for f in args.families.split(",") if f]
    labels = [p for p in args.policies.split(",") if p]
    unknown = [p for p in labels if p not in {**POLICIES, **CANDIDATES}]
    if unknown:
        ap.error(f"unknown policies {unknown}")
    print("$ python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *(argv if argv is not None else sys.argv[1:])]))
    print(f"# validity: {n} servers per family; R_sat {R_SAT_MS} ms, s {WIDTH}, c {CONFIDENCE}, a {ACCURACY}, "
          f"{RUNLENGTH_S:g} s trials, overhead {args.overhead_s:g} s/trial, server seed {args.seed}", flush=True)
    t0 = time.perf_counter()
    cells = labels if DEFAULT_LABEL in labels else [DEFAULT_LABEL, *labels]
    pool = multiprocessing.Pool(max(1, min(PROCESSES, args.processes))) if args.processes > 1 else None
    rows = run_cells(families, cells, n, args.overhead_s, pool=pool, seed=args.seed)
    ref = {r["family"]: r["median_cost_s"] for r in rows if r["policy"] == DEFAULT_LABEL}
    add_ratios(rows, ref)
    print(f"\n## family × policy ({n} servers each; × default = median cost / {DEFAULT_LABEL}'s)\n")
    print(md_table(rows, COLS, FMT))
    if args.frontier and not args.quick:
        fr = frontier(families, [p for p in args.frontier.split(",") if p], n, args.overhead_s, pool, args.seed)
        add_ratios(fr, ref)
        print(f"\n## frontier: c and a varied (× default = median cost / {DEFAULT_LABEL}'s at c 0.95, a 0.90)\n")
        print(md_table(fr, [("family", "family"), ("c", "confidence"), ("a", "accuracy"), *COLS[1:6]], FMT))
    print(f"wall {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
