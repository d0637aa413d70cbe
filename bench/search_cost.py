#!/usr/bin/env python3
"""Search cost on simulated response surfaces: seed 000 Figs. 8, 9, 10 and Table 4, in kind.

Three simulated server families (db-, web-, mail-like; ``workbench.measure.simulated.family_capacity``) on the
seed-000 §6 32-sample surface (disks 1..4 x nfsds 1,2,4,...,100). Every peak search is the real controller
(``workbench.controller.decide.find_peak``) against a seeded ``SimulatedServer``; cost = sum of runlengths + per-trial
overhead as reported by ``PeakResult.cost_s``.

  Fig. 8   total cost of mapping each surface per policy (Linear = the section 3.1 strawman with t = 10
           trials per load, Binsearch, Binsearch+seed, Linear+seed = the section 5.2 Linear from the seed,
           Model, Safeguarded, and "Linear §5.2" = the adaptive Linear without seed), normalised to the
           cheapest cell
  Fig. 9   total cost vs target confidence c and accuracy a (db, Binsearch)
  Fig. 10  total cost vs peak-region width s (db, each policy)
  Table 4  MAPE of a quadratic RSM fitted to D-optimal 6/8/10-of-32 designs (peaks found by Binsearch)

Usage:  .venv/bin/python bench/search_cost.py [--quick] [--reps N] [--out bench/out]
Writes PNGs, search_cost.md (tables) and search_cost.json under --out; prints the tables.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT / "src", ROOT):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from workbench.stats.rsm import fit_quadratic, mape  # noqa: E402
from workbench.planning.design import FactorSpace, Numeric  # noqa: E402
from workbench.planning.doptimal import d_optimal  # noqa: E402
from workbench.controller.spec import RatingSpec  # noqa: E402
from workbench.controller.decide import find_peak  # noqa: E402
from workbench.measure.factor_model import surface_grid  # noqa: E402
from workbench.measure.simulated import SimulatedServer  # noqa: E402
from workbench.planning.dryrun import plan  # noqa: E402

FAMILIES = ("db", "web", "mail")
POLICIES = {  # label -> (policy, seeding, extra spec fields)
    # §3.1 strawman (issue 3 "Linear"): fixed r, t = 10 trials at every load (Fig. 3), +50 ops/s, stop at
    # the first saturated load
    "Linear": ("linear", False, {"linear_trials": 10}),
    "Binsearch": ("binsearch", False, {}),
    "Binsearch+seed": ("binsearch", True, {}),
    # Fig. 8 'Linear with Seeding': the §5.2 Linear (Algorithm 2's adaptive trials) started from the seed
    "Linear+seed": ("linear", True, {"linear_trials": None}),
    "Model": ("model", False, {}),
    "Safeguarded": ("safeguarded", False, {}),
    # for honesty: the §5.2 Linear without seeding (adaptive trials, then bisection)
    "Linear §5.2": ("linear", False, {"linear_trials": None}),
}
SPACE = FactorSpace([Numeric("disks", levels=(1, 2, 3, 4), integer=True),
                     Numeric("threads", levels=(1, 2, 4, 8, 16, 32, 64, 100), scale="log", integer=True)])


EXTRA = {  # not in the paper: label -> (policy, seeding, extra spec fields)
    "Binsearch, adaptive r": ("binsearch", False, {"runlength_policy": "adaptive"}),
    "Safeguarded+seed": ("safeguarded", True, {}),
    "Binsearch+seed, adaptive r": ("binsearch", True, {"runlength_policy": "adaptive"}),
    "Safeguarded, adaptive r": ("safeguarded", False, {"runlength_policy": "adaptive"}),
    "Safeguarded+seed, adaptive r": ("safeguarded", True, {"runlength_policy": "adaptive"}),
}
LINEAR_MAX_LOADS = 2000  # Linear needs ~lambda*/step loads; the default max_loads (60) would truncate its cost
LINEAR_MAX_TRIALS = 10**6  # and the strawman 10 trials at each of them (the default max_trials 400 would too)


def spec_for(policy: str, **kw) -> RatingSpec:
    if policy == "linear":
        kw.setdefault("max_loads", LINEAR_MAX_LOADS)
        kw.setdefault("max_trials", LINEAR_MAX_TRIALS)
        return RatingSpec(policy={"name": "linear", "trials": kw.pop("linear_trials", 10)}, **kw)
    return RatingSpec(policy=policy, **kw)


def cost_of(family: str, label: str, reps: int, seed: int, server_kwargs: dict, **spec_kw) -> dict:
    policy, seeding, extra = POLICIES[label] if label in POLICIES else EXTRA[label]
    spec_kw = {**extra, **spec_kw}
    t0 = time.perf_counter()
    res = plan(spec_for(policy, **spec_kw), surface_grid(), reps=reps, seed=seed, family=family,
               seeding=seeding, server_kwargs=server_kwargs, keep_results=True)
    runs = res.pop("runs")
    near = tot = 0.0
    for r in runs:  # where the time goes: share of the cost spent within ±3% of the true peak
        for t in r.pop("result").trials:
            c = float(t.runlength_s or 0.0)
            tot += c
            near += c if abs(t.load_ops_s / r["true_peak"] - 1.0) < 0.03 else 0.0
    in_region = [r for r in runs if r["converged"]]
    return {
        "family": family, "policy": label, "mean_true_peak": float(np.mean([r["true_peak"] for r in runs])),
        "cost_h": res["expected_cost_s"] / 3600.0,
        "cost_h_std": res["cost_s"]["std"] / 3600.0, "trials": res["expected_trials"],
        "loads": res["expected_loads"], "non_converged": res["non_converged"], "n_runs": res["n_runs"],
        "median_rel_err": res["median_rel_error"],
        "p90_rel_err": float(np.percentile([r["rel_error"] for r in in_region], 90)) if in_region else math.nan,
        "near_peak_share": near / tot if tot else math.nan, "wall_s": time.perf_counter() - t0,
    }


def fig8(reps, seed, skw, out, spec_kw):
    rows = [cost_of(f, p, reps, seed, skw, **spec_kw) for f in FAMILIES for p in POLICIES]
    base = min(r["cost_h"] for r in rows)
    for r in rows:
        r["normalised"] = r["cost_h"] / base
    return rows


def fig9(reps, seed, skw, cs, accs, spec_kw):
    rows = []
    for c in cs:
        for a in accs:
            kw = {**spec_kw, "confidence": c, "accuracy": a}
            r = cost_of("db", "Binsearch", reps, seed, skw, **kw)
            r.update(confidence=c, accuracy=a)
            rows.append(r)
    return rows


def fig10(reps, seed, skw, widths, labels, spec_kw):
    rows = []
    for s in widths:
        for p in labels:
            r = cost_of("db", p, reps, seed, skw, **{**spec_kw, "width": s})
            r["width"] = s
            rows.append(r)
    return rows


def table4(sizes, reps, seed, skw, spec_kw, n_random=200):
    """MAPE (%) of the quadratic fitted on a D-optimal n-of-32 design, predicting all 32 true peaks."""
    grid = surface_grid()
    X = SPACE.coded(grid)
    rows = []
    rng = np.random.default_rng(seed)
    spec = spec_for("binsearch", **spec_kw)
    for fam in FAMILIES:
        true = np.array([SimulatedServer.for_factors(fam, g, seed=0).true_peak_rate(spec.r_sat_ms, spec.l_sat_ms)
                         for g in grid])
        for n in sizes:
            d = d_optimal(SPACE, n, grid)
            idx = d.indices
            # peaks measured by Binsearch on noisy simulated servers at the design points (as seed 000 §6)
            m_all, m_out, m_log = [], [], []
            for rep in range(reps):
                meas = []
                for i in idx:
                    srv = SimulatedServer.for_factors(fam, grid[i], seed=seed + 104729 * rep + i, **skw)
                    meas.append(find_peak(spec, srv.measure).peak_rate)
                fit = fit_quadratic(X[idx], np.array(meas, dtype=float))
                pred = fit.predict(X)
                m_all.append(mape(true, pred))
                held = [j for j in range(len(grid)) if j not in idx]
                m_out.append(mape(true[held], pred[held]))
                # same design, quadratic fitted to ln(peak) (Box-Cox lambda = 0), back-transformed
                flog = fit_quadratic(X[idx], np.log(np.array(meas, dtype=float)))
                m_log.append(mape(true[held], np.exp(flog.predict(X))[held]))
            exact = fit_quadratic(X[idx], true[idx]).predict(X)
            m_exact = mape(true, exact)
            rand = []
            for _ in range(n_random):
                ridx = rng.choice(len(grid), n, replace=False)
                fr = fit_quadratic(X[ridx], true[ridx])
                rand.append(mape(true, fr.predict(X)))
            rows.append({"family": fam, "n": n, "design": [grid[i] for i in idx], "log_det": d.log_det,
                         "mape_all": float(np.mean(m_all)), "mape_heldout": float(np.mean(m_out)),
                         "mape_log_heldout": float(np.mean(m_log)),
                         "mape_true_peaks": m_exact, "mape_random_median": float(np.median(rand))})
    return rows


# ---------------------------------------------------------------- output
def md_table(rows, cols, fmt=None):
    fmt = fmt or {}
    head = "| " + " | ".join(c for c, _ in cols) + " |\n|" + "|".join("---" for _ in cols) + "|\n"
    body = ""
    for r in rows:
        cells = []
        for _, k in cols:
            v = r[k]
            f = fmt.get(k)
            cells.append(f.format(v) if f and isinstance(v, (int, float)) else str(v))
        body += "| " + " | ".join(cells) + " |\n"
    return head + body


def plots(out: Path, f8, f9, f10, t4):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    labels = list(POLICIES)
    w = 0.25
    for j, fam in enumerate(FAMILIES):
        ys = [next(r["normalised"] for r in f8 if r["family"] == fam and r["policy"] == p) for p in labels]
        ax.bar(np.arange(len(labels)) + (j - 1) * w, ys, w, label=fam)
    ax.set_xticks(np.arange(len(labels)), labels, rotation=20)
    ax.set_ylabel("total cost (normalised)")
    ax.set_title("Fig. 8 in kind: cost of mapping a 32-sample surface")
    ax.legend()
    fig.tight_layout(); fig.savefig(out / "fig8_policy_cost.png", dpi=110); plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for c in sorted({r["confidence"] for r in f9}):
        pts = sorted((r["accuracy"], r["cost_h"]) for r in f9 if r["confidence"] == c)
        ax.plot([p[0] * 100 for p in pts], [p[1] for p in pts], "o-", label=f"c = {c:.0%}")
    ax.set_xlabel("target accuracy a (%)"); ax.set_ylabel("total cost (h)")
    ax.set_title("Fig. 9 in kind: db, Binsearch"); ax.legend()
    fig.tight_layout(); fig.savefig(out / "fig9_cost_vs_confidence_accuracy.png", dpi=110); plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for p in dict.fromkeys(r["policy"] for r in f10):
        pts = sorted((r["width"], r["cost_h"]) for r in f10 if r["policy"] == p)
        ax.plot([q[0] * 100 for q in pts], [q[1] for q in pts], "o-", label=p)
    ax.set_xlabel("peak-region width s (%)"); ax.set_ylabel("total cost (h)"); ax.set_yscale("log")
    ax.set_title("Fig. 10 in kind: db"); ax.legend()
    fig.tight_layout(); fig.savefig(out / "fig10_cost_vs_width.png", dpi=110); plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for fam in FAMILIES:
        pts = [(r["n"], r["mape_heldout"]) for r in t4 if r["family"] == fam]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=fam)
    ax.set_xlabel("D-optimal design size (of 32)"); ax.set_ylabel("MAPE (%)")
    ax.set_title("Table 4 in kind: quadratic RSM"); ax.legend()
    fig.tight_layout(); fig.savefig(out / "table4_mape.png", dpi=110); plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 repetition, fewer (c, a) and s points")
    ap.add_argument("--reps", type=int, default=None, help="repetitions of each whole-surface plan")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out"))
    ap.add_argument("--noise", type=float, default=0.04, help="SimulatedServer noise (cv at low load, r=60 s)")
    args = ap.parse_args(argv)
    reps = args.reps or (1 if args.quick else 3)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    skw = {"noise": args.noise}
    spec_kw: dict = {}
    t0 = time.perf_counter()
    base = spec_for("binsearch")
    print(f"# search cost on simulated 32-sample surfaces (reps={reps}, seed={args.seed}, noise={args.noise}; "
          f"spec r_sat={base.r_sat_ms} s={base.width} c={base.confidence} a={base.accuracy} "
          f"runlength={base.runlength_s} overhead={getattr(base, 'trial_overhead_s', None)})")

    f8 = fig8(reps, args.seed, skw, out, spec_kw)
    cols8 = [("family", "family"), ("policy", "policy"), ("cost (h)", "cost_h"), ("± sd", "cost_h_std"),
             ("normalised", "normalised"), ("trials", "trials"), ("loads", "loads"),
             ("non-conv.", "non_converged"), ("runs", "n_runs"), ("mean λ*", "mean_true_peak"),
             ("cost share ±3% of λ*", "near_peak_share"), ("median |λ̂/λ*−1|", "median_rel_err"),
             ("p90", "p90_rel_err")]
    fmt = {"mean_true_peak": "{:.0f}", "near_peak_share": "{:.2f}", "mape_log_heldout": "{:.1f}", "cost_h": "{:.1f}", "cost_h_std": "{:.1f}", "normalised": "{:.2f}", "trials": "{:.0f}",
           "loads": "{:.0f}", "median_rel_err": "{:.3f}", "p90_rel_err": "{:.3f}", "accuracy": "{:.2f}",
           "confidence": "{:.2f}", "width": "{:.2f}", "mape_all": "{:.1f}", "mape_heldout": "{:.1f}",
           "mape_true_peaks": "{:.1f}", "mape_random_median": "{:.1f}", "log_det": "{:.2f}"}
    t8 = md_table(f8, cols8, fmt)
    print("\n## Fig. 8: total cost per policy\n" + t8)

    goals = []
    for fam in FAMILIES + ("all",):
        def tot(p):
            return sum(r["cost_h"] for r in f8 if r["policy"] == p and fam in (r["family"], "all"))
        nc = sum(r["non_converged"] for r in f8 if r["policy"] == "Safeguarded" and fam in (r["family"], "all"))
        goals.append({"family": fam, "binseed_over_linear": tot("Binsearch+seed") / tot("Linear"),
                      "binseed_over_linear52": tot("Binsearch+seed") / tot("Linear §5.2"),
                      "safeguarded_over_binsearch": tot("Safeguarded") / tot("Binsearch"),
                      "safeguarded_non_converged": nc})
    tg = md_table(goals, [("family", "family"),
                          ("Binsearch+seed / Linear strawman (goal ≤ 0.20)", "binseed_over_linear"),
                          ("Binsearch+seed / Linear §5.2", "binseed_over_linear52"),
                          ("Safeguarded / Binsearch (goal ≤ 0.80)", "safeguarded_over_binsearch"),
                          ("Safeguarded non-convergences (goal 0)", "safeguarded_non_converged")],
                  {"binseed_over_linear": "{:.3f}", "binseed_over_linear52": "{:.3f}",
                   "safeguarded_over_binsearch": "{:.3f}"})
    print("## Goals\n" + tg)

    fx = [cost_of(f, p, reps, args.seed, skw, **spec_kw) for f in FAMILIES for p in EXTRA]
    for r in fx:
        r["vs_binsearch"] = r["cost_h"] / next(q["cost_h"] for q in f8
                                               if q["family"] == r["family"] and q["policy"] == "Binsearch")
        # like for like: the same runlength policy (and seeding) for Binsearch
        same = ("Binsearch" + ("+seed" if "+seed" in r["policy"] else "")
                + (", adaptive r" if "adaptive" in r["policy"] else ""))
        pool = fx + f8
        r["vs_same_r"] = r["cost_h"] / next(q["cost_h"] for q in pool
                                            if q["family"] == r["family"] and q["policy"] == same)
        r["vs_same_r_ref"] = same
    tx = md_table(fx, [("family", "family"), ("variant", "policy"), ("cost (h)", "cost_h"),
                       ("× Binsearch (fixed r)", "vs_binsearch"), ("× same-r Binsearch", "vs_same_r"),
                       ("reference", "vs_same_r_ref"), ("trials", "trials"), ("non-conv.", "non_converged")],
                  {**fmt, "vs_binsearch": "{:.3f}", "vs_same_r": "{:.3f}"})
    print("## Variants beyond the paper (controller options)\n" + tx)

    cs = (0.90, 0.95) if args.quick else (0.90, 0.95, 0.99)
    accs = (0.85, 0.90) if args.quick else (0.80, 0.85, 0.90, 0.95)
    f9 = fig9(reps, args.seed, skw, cs, accs, spec_kw)
    t9 = md_table(f9, [("c", "confidence"), ("a", "accuracy"), ("cost (h)", "cost_h"), ("trials", "trials"),
                       ("non-conv.", "non_converged")], fmt)
    print("## Fig. 9: db, Binsearch, cost vs (c, a)\n" + t9)

    widths = (0.05, 0.10, 0.20) if args.quick else (0.05, 0.10, 0.15, 0.20)
    labels10 = ("Linear", "Binsearch", "Binsearch+seed", "Model", "Safeguarded")
    f10 = fig10(reps, args.seed, skw, widths, labels10, spec_kw)
    t10 = md_table(f10, [("s", "width"), ("policy", "policy"), ("cost (h)", "cost_h"), ("trials", "trials"),
                         ("non-conv.", "non_converged")], fmt)
    print("## Fig. 10: db, cost vs width s\n" + t10)

    t4rows = table4((6, 8, 10), 1 if args.quick else 3, args.seed, skw, spec_kw,
                    n_random=50 if args.quick else 200)
    t4 = md_table(t4rows, [("workload", "family"), ("samples", "n"), ("log det X'X", "log_det"),
                           ("MAPE held-out (%) [Table 4]", "mape_heldout"), ("MAPE all 32 (%)", "mape_all"),
                           ("MAPE held-out, fit on ln λ* (%)", "mape_log_heldout"),
                           ("MAPE all 32, exact peaks (%)", "mape_true_peaks"),
                           ("MAPE random design, all 32, exact peaks, median (%)", "mape_random_median")], fmt)
    print("## Table 4: MAPE of quadratic RSM on D-optimal designs\n" + t4)

    plots(out, f8, f9, f10, t4rows)
    wall = time.perf_counter() - t0
    cmd = "python bench/search_cost.py" + (" --quick" if args.quick else "") + (
        f" --reps {args.reps}" if args.reps else "")
    (out / "search_cost.md").write_text(
        f"<!-- {cmd}; wall {wall:.0f} s -->\n## Fig. 8\n{t8}\n## Goals\n{tg}\n## Variants\n{tx}\n## Fig. 9\n{t9}\n"
        f"## Fig. 10\n{t10}\n## Table 4\n{t4}")
    (out / "search_cost.json").write_text(json.dumps(
        {"fig8": f8, "goals": goals, "variants": fx, "fig9": f9, "fig10": f10, "table4": t4rows, "wall_s": wall,
         "reps": reps, "seed": args.seed, "noise": args.noise}, indent=1, default=str))
    print(f"wrote {out}/fig8_policy_cost.png fig9_cost_vs_confidence_accuracy.png fig10_cost_vs_width.png "
          f"table4_mape.png search_cost.md search_cost.json; wall {wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
