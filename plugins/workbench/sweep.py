"""Response-surface sweeps and nightly baselines: planning, seeding and the surface fit.

map_surface: factors + levels → a design (pydoe: full factorial, D-optimal n of N, LHS) →
samples in seeding order → one rating per sample (``pipeline.run_rating``), each seeded from the
nearest finished sample (seed 000 §5.4) → quadratic RSM fit with MAPE (LOO, and in-sample on a
full factorial) → report. Everything lives under ``surfaces/<sweep_id>/`` in the store.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from workbench import pipeline
from workbench.design import Categorical, FactorSpace, Numeric, d_optimal, nearest_seed, seed_order

NUMERIC_FACTORS = ("disks", "memory_mb", "read_iops", "threads")
CATEGORICAL_FACTORS = ("fs", "sync", "cache_policy")
DESIGNS = ("fullfact", "dopt", "lhs")


def factor_space(levels: Mapping[str, Sequence[Any]]) -> FactorSpace:
    """Factors named like the rate_peak params; numeric ones need ≥ 2 distinct levels."""
    if not isinstance(levels, Mapping) or not levels:
        raise pipeline.ParamError("factors: give an object {factor: [levels...]}, e.g. "
                                  '{"memory_mb": [128, 256], "read_iops": [100, 200]}')
    out = []
    for name, lv in levels.items():
        if not isinstance(lv, (list, tuple)) or len(lv) < 2:
            raise pipeline.ParamError(f"factors.{name}: give a list of at least 2 levels, got {lv!r}")
        if name in NUMERIC_FACTORS:
            for v in lv:
                pipeline._check_param(name, v)
            out.append(Numeric(name, levels=tuple(lv), integer=True))
        elif name in CATEGORICAL_FACTORS:
            for v in lv:
                pipeline._check_param(name, v)
            out.append(Categorical(name, tuple(lv)))
        else:
            raise pipeline.ParamError(f"factors: unknown factor {name!r}; numeric: {', '.join(NUMERIC_FACTORS)}; "
                                      f"categorical: {', '.join(CATEGORICAL_FACTORS)}")
    try:
        return FactorSpace(out)
    except ValueError as e:
        raise pipeline.ParamError(f"factors: {e}") from None


def design_samples(space: FactorSpace, design: str, n_samples: int | None, seed: int = 0) -> list[dict[str, Any]]:
    """The design's samples in seeding order (nearest-neighbour chain from the low corner)."""
    if design == "fullfact":
        samples = space.fullfact()
    elif design == "dopt":
        grid = space.fullfact()
        if n_samples is None or not 1 <= n_samples <= len(grid):
            raise pipeline.ParamError(f"n_samples: D-optimal needs 1 ≤ n ≤ {len(grid)} (the grid), got {n_samples!r}")
        samples = d_optimal(space, n_samples, candidates=grid).samples
    elif design == "lhs":
        if n_samples is None or n_samples < 2:
            raise pipeline.ParamError(f"n_samples: LHS needs n ≥ 2, got {n_samples!r}")
        samples = space.lhs(n_samples, seed=seed)
    else:
        raise pipeline.ParamError(f"design: {design!r} is not one of {', '.join(DESIGNS)}")
    return [dict(samples[i]) for i in seed_order(samples, space=space)]


def plan_sweep(params: Mapping[str, Any], sweep_id: str) -> dict[str, Any]:
    """Checked sweep: the design's samples, each with its rating plan (ids deterministic)."""
    space = factor_space(params.get("factors") or {})
    design = params.get("design", "fullfact")
    samples = design_samples(space, design, params.get("n_samples"), int(params.get("seed") or 0))
    base = {k: params[k] for k in ("workload", "profile", "policy") if params.get(k) is not None}
    fixed = dict(params.get("fixed") or {})
    clash = sorted(set(fixed) & set(space.names))
    if clash:
        raise pipeline.ParamError(f"fixed: {', '.join(clash)} also varied in factors")
    items = []
    for i, s in enumerate(samples):
        plan = pipeline.plan_from_params({**base, **fixed, **s}, f"{sweep_id}__s{i:02d}")
        items.append({"i": i, "sample": s, "plan": plan.to_dict()})
    return {"sweep_id": sweep_id, "design": design, "factors": {k: list(v) for k, v in params["factors"].items()},
            "seeding": bool(params.get("seeding", True)), "samples": items}


def finished_samples(store: Any, sweep_id: str) -> list[dict[str, Any]]:
    keys = [k for k in store.list_keys(f"surfaces/{sweep_id}/samples/") if k.endswith(".json")]
    return [store.get_json(k) for k in keys]


def rate_sample(store: Any, sweep: Mapping[str, Any], item: Mapping[str, Any], log=print) -> dict[str, Any]:
    """One sample's rating, seeded from the nearest finished sample of the sweep."""
    sweep_id = sweep["sweep_id"]
    key = f"surfaces/{sweep_id}/samples/{item['i']:03d}.json"
    if store.exists(key):                          # a retried task: the sample is already rated
        return store.get_json(key)
    plan = pipeline.RatingPlan.from_dict(item["plan"])
    seed = None
    if sweep.get("seeding", True):
        done = [(d["sample"], d["peak_rate"]) for d in finished_samples(store, sweep_id) if d.get("converged")]
        space = factor_space(sweep["factors"])
        seed = nearest_seed(item["sample"], done, space=space, fallback="aggregate")
        plan = pipeline.seeded(plan, seed)
    log(f"sample {item['i']}: {item['sample']} seed_load={seed}")
    res = pipeline.run_rating(plan, store, log=log)
    row = pipeline.strict_json({"i": item["i"], "sample": item["sample"], "rating_id": plan.rating_id, "seed_load": seed,
           "peak_rate": res["peak_rate"], "converged": res["converged"], "n_trials": res["n_trials"],
           "cost_s": res["cost_s"], "bracket": res["bracket"], "peak_rate_ci": res["peak_rate_ci"],
           "reason": res["reason"]})
    store.put_json(key, row)
    return row


def fit_surface(sweep: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> tuple[Any, dict[str, Any]]:
    """Quadratic RSM of λ* over the sweep's factors (analysis.surface) and its fit summary."""
    space = factor_space(sweep["factors"])
    samples = [dict(r["sample"]) for r in rows]
    y = np.array([float(r["peak_rate"]) for r in rows])
    from analysis.surface import fit_quadratic, mape
    # a factor at 2 levels has no estimable curvature: its square is left out of the model
    squares = [len({s[f.name] for s in samples}) >= 3 for f in space.numeric]
    model = fit_quadratic(space.coded(samples), y, squares=squares,
                          dummies=space.dummies(samples) if space.categorical else None,
                          names=[f.name for f in space.numeric],
                          dummy_names=space.dummy_names() if space.categorical else None)
    loo = model.loo_mape()
    two_level = [f.name for f, sq in zip(space.numeric, squares) if not sq]
    notes = []
    if model.rank >= len(rows):
        notes.append("saturated: as many independent terms as samples, so leave-one-out is undefined "
                     "and the in-sample fit is exact")
    if two_level:
        notes.append(f"{', '.join(two_level)} at 2 levels: no squared term (it would be aliased with "
                     "the intercept); use ≥ 3 levels to model curvature")
    summary = {"n_samples": len(rows), "n_params": model.n_params, "rank": model.rank,
               "r2": _finite(model.r2), "mape_loo_pct": _finite(loo),
               "mape_all_pct": _finite(mape(y, model.fitted)) if sweep.get("design") == "fullfact" else None,
               "coefficients": model.to_dict()["terms"],
               "note": "; ".join(notes)}
    return model, summary


def coder(space: FactorSpace, samples: Sequence[Mapping[str, Any]]):
    """Natural → coded rows for plotting a slice: factors not given sit at their sample median."""
    mid = {f.name: float(np.median([s[f.name] for s in samples])) for f in space.numeric}
    cats = {f.name: f.levels[0] for f in space.categorical}
    return lambda rows: space.coded([{**mid, **cats, **r} for r in rows])


def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


# trials tonight's rating runs at its baseline's reference load: the sample of the nightly Welch test
# (analysis.regression); with 2 (a smoke rating's cap per load) one warm-cache trial among overloaded
# ones decides it, with 4 the drop of tests/test_dags.py's nightly test stays near p = 0.05
NIGHTLY_SEED_TRIALS = 6


def load_nightly_config(path: str | Path) -> dict[str, Any]:
    """config/nightly.yml: tolerance, confidence and the baselines (name + rate_peak params)."""
    import yaml
    p = Path(path)
    if not p.is_absolute():
        p = pipeline.REPO / p
    try:
        cfg = yaml.safe_load(p.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise pipeline.ParamError(f"nightly config {p}: {e}") from None
    base = cfg.get("baselines")
    if not isinstance(base, list) or not base:
        raise pipeline.ParamError(f"nightly config {p}: 'baselines' must be a non-empty list")
    names = set()
    for b in base:
        if not isinstance(b, dict) or not isinstance(b.get("name"), str) or not b["name"]:
            raise pipeline.ParamError(f"nightly config {p}: every baseline needs a name, got {b!r}")
        if b["name"] in names or pipeline._ID_RE.search(b["name"]):
            raise pipeline.ParamError(f"nightly config {p}: baseline name {b['name']!r} duplicated or not id-safe")
        names.add(b["name"])
        pipeline.plan_from_params(b.get("params") or {}, "check")   # fail at load, naming the field
    tol = cfg.get("tolerance", 0.10)
    conf = cfg.get("confidence", 0.95)
    if not (isinstance(tol, (int, float)) and 0 <= tol < 1 and isinstance(conf, (int, float)) and 0.5 <= conf < 1):
        raise pipeline.ParamError(f"nightly config {p}: tolerance in [0, 1) and confidence in [0.5, 1) required")
    seed_trials = cfg.get("seed_trials", NIGHTLY_SEED_TRIALS)
    if not isinstance(seed_trials, int) or isinstance(seed_trials, bool) or not 2 <= seed_trials <= 20:
        raise pipeline.ParamError(f"nightly config {p}: seed_trials must be an integer in [2, 20], "
                                  f"got {seed_trials!r}")
    return {"path": str(p), "tolerance": float(tol), "confidence": float(conf), "seed_trials": seed_trials,
            "baselines": base}


def ci_level(spec: Mapping[str, Any]) -> float:
    """The confidence of a rating's λ* CI (search._peak_ci): bound_confidence, else confidence."""
    return float(spec.get("bound_confidence") or spec.get("confidence") or 0.95)


def nightly_rating(store: Any, rating_id: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """One rating as analysis.regression wants it: result, trial records and the CI level."""
    plan = store.get_json(store.rating_key(rating_id, "spec.json"), default={}) or {}
    return {"result": dict(result), "trials": store.trials(rating_id),
            "ci_level": ci_level(plan.get("spec") or {})}


def nightly_history(store: Any, name: str, before_night: str) -> list[dict[str, Any]]:
    """The earlier nights of baseline `name` (oldest first), each as `nightly_rating` + its night."""
    out = []
    for key in sorted(store.list_keys("nightly/")):
        parts = key.split("/")
        if len(parts) == 3 and parts[2] == f"{name}.json" and parts[1] < before_night:
            old = store.get_json(key)
            out.append({**nightly_rating(store, old["rating_id"], old["result"]), "night": parts[1]})
    return out
