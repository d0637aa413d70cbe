#!/usr/bin/env python3
"""Calibration of the `wall` validity family (issue 30) against the real Ganesha trial logs.

Reads every rating under --ratings (default /tmp/workbench/ratings/*/trials/<n>.json), groups its
trials by (rating, workload, trial length) — one curve per server and workload — and measures, per
group and pooled (the same code then runs on simulated `wall` servers, side by side):

  width      load from R = R_sat/2 to R = 10·R_sat, % of λ40 (the load where R crosses R_sat =
             40 ms): per load the mean of the trial means (carry-over trials dropped), made
             non-decreasing in load (running max), crossings by log-linear interpolation
  cv         sd / mean of the trial means at one load, loads within ±10 % of λ40 with ≥ 3 trials
  log sd     sd of log(trial mean) at those loads
  lag-1      correlation of consecutive trials' log-mean residuals (log mean − its load's mean
             log) in runs at one load, pooled (biased by −1/(k − 1) with k trials a load), and
             1 − MSSD/(2·s²) (von Neumann 1941), free of that bias
  first      first trial at a load / median of the later trials there, split by whether the trial
             before it was overloaded (mean > 10·R_sat at a higher load: carry-over)

The family's width is computed from its model mean at the real trial lengths (a warm-up of w s
before a T s trial adds w to the transient overload queue: r_eff = T + 2w), its noise figures by
simulating the same load sequence (6 trials at each of 0.9, 0.95, 1, 1.05, 1.1 × λ40).

Usage:  PYTHONPATH=src:. nice -n 10 .venv/bin/python bench/wall_calibration.py [--servers 50]
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT / "src", ROOT):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from workbench.measure.families import family_servers  # noqa: E402

R_SAT_MS = 40.0                      # the goal of every logged rating (and of bench/validity.py)
WARMUP_S = {2.0: 1.0, 10.0: 2.0}      # trial length → warm-up before it (profiles smoke, quick)
NEAR = 0.10                          # "near λ*": loads within ±10 % of λ40
LOADS_REL = (0.90, 0.95, 1.00, 1.05, 1.10)
TRIALS_PER_LOAD = 6
FIT_RMS_MAX = 0.5                    # real curves whose fit is kept for the shape ranges (rms log R)


def read_groups(pattern: str) -> dict[tuple, list[tuple[float, float]]]:
    """(rating, workload, trial s) → [(load, trial mean ms)] in trial order."""
    groups: dict[tuple, list[tuple[float, float]]] = {}
    for d in sorted(glob.glob(pattern)):
        files = [f for f in glob.glob(os.path.join(d, "trials", "*.json")) if Path(f).stem.isdigit()]
        for f in sorted(files, key=lambda f: int(Path(f).stem)):
            try:
                t = json.load(open(f))
            except (OSError, ValueError):
                continue
            if t.get("mean_ms") is None or not t.get("offered_rate"):
                continue
            key = (str(Path(d)), t.get("workload"), float(t.get("duration_s") or 0))
            groups.setdefault(key, []).append((float(t["offered_rate"]), float(t["mean_ms"])))
    return groups


def carry_over(seq: list[tuple[float, float]]) -> list[bool]:
    """True for a trial right after an overloaded one (mean > 10·R_sat) at a higher load."""
    out = [False]
    for (l0, m0), (l1, _) in zip(seq, seq[1:]):
        out.append(m0 > 10 * R_SAT_MS and l0 > l1 * 1.001)
    return out


def load_means(seq: list[tuple[float, float]]) -> dict[float, list[float]]:
    """Load → its trial means, a carry-over trial dropped when the load has others."""
    co = carry_over(seq)
    by: dict[float, list[tuple[float, bool]]] = {}
    for (load, m), c in zip(seq, co):
        by.setdefault(round(load, 3), []).append((m, c))
    return {k: [m for m, c in v if not c] or [m for m, _ in v] for k, v in by.items()}


def curve(seq: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Loads and their mean trial mean (carry-over dropped), made non-decreasing (running max)."""
    by = load_means(seq)
    loads = np.array(sorted(by))
    means = np.maximum.accumulate(np.array([np.mean(by[x]) for x in loads])) if len(loads) else np.array([])
    return loads, means


def crossing(loads: np.ndarray, means: np.ndarray, level: float) -> float:
    """The load where the curve first reaches `level` (log-linear between tested loads); nan if never."""
    for i in range(1, len(loads)):
        if means[i - 1] < level <= means[i]:
            a, b = math.log(max(means[i - 1], 1e-3)), math.log(means[i])
            return float(loads[i - 1] + (loads[i] - loads[i - 1]) * (math.log(level) - a) / (b - a))
    return math.nan


def width_pct(seq) -> tuple[float, float]:
    """(λ40, width from R_sat/2 to 10·R_sat in % of λ40); nan where the curve does not reach them."""
    loads, means = curve(seq)
    lam = crossing(loads, means, R_SAT_MS)
    lo, hi = crossing(loads, means, R_SAT_MS / 2), crossing(loads, means, 10 * R_SAT_MS)
    return lam, 100.0 * (hi - lo) / lam if math.isfinite(lam) else math.nan


def noise_stats(seq, lam: float) -> dict[str, list[float]]:
    """cv and log sd per near-λ* load, lag-1 residual pairs, first-trial ratios (fresh / carry-over)."""
    co = carry_over(seq)
    out: dict[str, list] = {"cv": [], "logsd": [], "pairs": [], "first": [], "first_co": [], "ss": []}
    by: dict[float, list[tuple[int, float]]] = {}
    for i, ((load, m), c) in enumerate(zip(seq, co)):
        by.setdefault(round(load, 3), []).append((i, m))
    for load, items in by.items():
        ms = [m for i, m in items if not co[i]]
        if len(items) >= 2:
            later = float(np.median([m for _, m in items[1:]]))
            (out["first_co"] if co[items[0][0]] else out["first"]).append(items[0][1] / max(later, 1e-3))
        if not (math.isfinite(lam) and abs(load / lam - 1) <= NEAR and len(ms) >= 3):
            continue
        logs = np.log(np.maximum(ms, 1e-3))
        out["cv"].append(float(np.std(ms, ddof=1) / np.mean(ms)))
        out["logsd"].append(float(np.std(logs, ddof=1)))
        mu = float(np.mean(logs))
        idx = [i for i, _ in items if not co[i]]
        res = {i: math.log(max(seq[i][1], 1e-3)) - mu for i in idx}
        out["pairs"] += [(res[i], res[i + 1]) for i in idx if i + 1 in res]
        out["ss"].append((float(np.sum((logs - mu) ** 2)), len(ms) - 1))
    return out


def fit_wall(seq, trial_s: float) -> tuple[float, float, float, float] | None:
    """(μ/λ40, S ms, m, rms log error) of R = base + S·ρ^m/(1 − ρ) (ρ ≤ 0.999) + the transient
    1000·(λ − μ)⁺·r_eff/(2μ) fitted to the per-load mean trial means (least squares in log R, each
    load weighted by its trials; grid search); base = the lowest load's median. None: no crossing."""
    by = load_means(seq)
    lam, _ = width_pct(seq)
    if not math.isfinite(lam) or len(by) < 3:
        return None
    loads = np.array(sorted(by))
    obs = np.log([max(float(np.mean(by[x])), 1e-3) for x in loads])
    wts = np.array([len(by[x]) for x in loads], float)
    base = float(np.median(by[loads[0]]))
    r_eff = trial_s + 2 * WARMUP_S.get(trial_s, 0.0)
    mu = lam * np.exp(np.linspace(math.log(0.85), math.log(1.25), 81))[:, None, None, None]
    sc = np.exp(np.linspace(math.log(0.02), math.log(20.0), 61))[None, :, None, None]
    m = np.exp(np.linspace(math.log(1.0), math.log(128.0), 57))[None, None, :, None]
    rho = np.minimum(loads[None, None, None, :] / mu, 0.999)
    model = base + sc * rho ** m / (1 - rho) + 1000.0 * np.maximum(loads - mu, 0) * r_eff / (2 * mu)
    err = (((np.log(model) - obs) ** 2) * wts).sum(axis=-1) / wts.sum()
    i, j, k = np.unravel_index(int(np.argmin(err)), err.shape)
    return float(mu[i, 0, 0, 0] / lam), float(sc[0, j, 0, 0]), float(m[0, 0, k, 0]), math.sqrt(float(err[i, j, k]))


def fitted_width(fit, r_eff: float) -> float:
    """Width R_sat/2 → 10·R_sat (% of the fitted λ40) of a fitted real curve at runlength r_eff:
    where a fitted server's wall would lie in the study's 60 s trials (base 0.5 ms)."""
    mu, sc, m, _ = fit
    def r_at(lam: float) -> float:
        rho = min(lam / mu, 0.999)
        return 0.5 + sc * rho ** m / (1 - rho) + 1000.0 * max(lam - mu, 0) * r_eff / (2 * mu)
    def lam_at(level: float) -> float:
        lo, hi = 0.0, 3.0 * mu
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if r_at(mid) <= level else (lo, mid)
        return lo
    return 100.0 * (lam_at(10 * R_SAT_MS) - lam_at(R_SAT_MS / 2)) / lam_at(R_SAT_MS)


def summarize(label: str, groups: dict) -> None:
    """Print per-group widths and the pooled noise figures."""
    widths, pooled = [], {"cv": [], "logsd": [], "pairs": [], "first": [], "first_co": [], "ss": []}
    for key, seq in groups.items():
        lam, w = width_pct(seq)
        if math.isfinite(w):
            widths.append(w)
        for k, v in noise_stats(seq, lam).items():
            pooled[k] += v
    pairs = np.array(pooled["pairs"]) if pooled["pairs"] else np.zeros((0, 2))
    lag1 = float(np.corrcoef(pairs[:, 0], pairs[:, 1])[0, 1]) if len(pairs) > 2 else math.nan
    q = lambda xs: "—" if not xs else f"{np.median(xs):.2f} [{np.min(xs):.2f}, {np.max(xs):.2f}] n={len(xs)}"
    print(f"  {label:28s} width R_sat/2→10R_sat % of λ40: {q(widths)}")
    print(f"  {'':28s} cv of trial mean near λ40:       {q(pooled['cv'])}")
    print(f"  {'':28s} sd of log trial mean near λ40:   {q(pooled['logsd'])}")
    # von Neumann (1941): E[(x_{t+1} − x_t)²] = 2σ²(1 − ρ1), free of the per-load demeaning bias
    var = sum(a for a, _ in pooled["ss"]) / max(sum(b for _, b in pooled["ss"]), 1)
    vn = 1.0 - float(np.mean((pairs[:, 1] - pairs[:, 0]) ** 2)) / (2 * var) if len(pairs) and var > 0 else math.nan
    print(f"  {'':28s} lag-1 corr of log residuals:     {lag1:.2f} ({len(pairs)} pairs; von Neumann {vn:.2f})")
    print(f"  {'':28s} first / later, fresh load:       {q(pooled['first'])}")
    print(f"  {'':28s} first / later, after overload:   {q(pooled['first_co'])}")


def model_width(srv, r_eff: float) -> float:
    """Width R_sat/2 → 10·R_sat of the family's model mean at runlength r_eff, % of λ40 (bisection)."""
    def lam_at(level: float) -> float:
        lo, hi = 0.0, 3.0 * srv.capacity_ops_s
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if srv._model_mean_ms(mid, r_eff) <= level else (lo, mid)
        return lo
    lam = lam_at(R_SAT_MS)
    return 100.0 * (lam_at(10 * R_SAT_MS) - lam_at(R_SAT_MS / 2)) / lam


def family_groups(n: int, trial_s: float, seed: int) -> tuple[dict, list[float]]:
    """Simulated (load, mean) sequences of n wall servers at trial length trial_s, and model widths."""
    groups, widths = {}, []
    r_eff = trial_s + 2 * WARMUP_S.get(trial_s, 0.0)
    for srv in family_servers("wall", n, seed):
        lam = srv.true_peak_rate(R_SAT_MS)
        seq = [(f * lam, srv.measure(f * lam, trial_s).mean_ms) for f in LOADS_REL for _ in range(TRIALS_PER_LOAD)]
        groups[(srv.name, "wall", trial_s)] = [(lo / lam * 1000.0, m) for lo, m in seq]
        widths.append(model_width(srv, r_eff))
    return groups, widths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ratings", default="/tmp/workbench/ratings/*", help="glob of rating directories")
    ap.add_argument("--servers", type=int, default=50, help="simulated wall servers")
    ap.add_argument("--seed", type=int, default=12345)
    args = ap.parse_args(argv)
    real = read_groups(args.ratings)
    fits = []
    print(f"# real: {len(real)} groups, {sum(len(s) for s in real.values())} trials; R_sat {R_SAT_MS:g} ms")
    for trial_s in sorted({k[2] for k in real}):
        sub = {k: v for k, v in real.items() if k[2] == trial_s}
        for k, seq in sub.items():
            lam, w = width_pct(seq)
            f = fit_wall(seq, trial_s)
            if f is not None and f[3] <= FIT_RMS_MAX:
                fits.append(f)
            fs = "" if f is None else f"  fit μ/λ40 {f[0]:.3f} S {f[1]:6.3f} ms m {f[2]:5.1f} (rms log {f[3]:.2f})"
            print(f"    {k[0][-44:]:44s} {str(k[1])[:22]:22s} {len(seq):3d} trials  λ40 {lam:7.1f}  width {w:5.1f} %{fs}")
        summarize(f"real, {trial_s:g} s trials", sub)
    q = lambda xs: "—" if not xs else f"{np.median(xs):.3g} [{np.min(xs):.3g}, {np.max(xs):.3g}] n={len(xs)}"
    print(f"  real fits with rms log error ≤ {FIT_RMS_MAX}: S ms {q([f[1] for f in fits])}, m {q([f[2] for f in fits])},"
          f" μ/λ40 {q([f[0] for f in fits])}")
    for r_eff in (4.0, 14.0, 60.0):
        print(f"    their width R_sat/2→10R_sat at r_eff {r_eff:g} s: {q([fitted_width(f, r_eff) for f in fits])} % of λ40")
    for trial_s in (2.0, 10.0, 60.0):
        groups, widths = family_groups(args.servers, trial_s, args.seed)
        summarize(f"family wall, {trial_s:g} s trials", groups)
        print(f"  {'':28s} model width (r_eff {trial_s + 2 * WARMUP_S.get(trial_s, 0):g} s):"
              f"        {np.median(widths):.2f} [{np.min(widths):.2f}, {np.max(widths):.2f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
