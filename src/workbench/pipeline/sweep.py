"""Response-surface sweeps and nightly baselines: planning, seeding and the surface fit.

map_surface: factors + levels → a design (pydoe: full factorial, D-optimal n of N, LHS) →
samples in seeding order → one rating per sample (``run_rating``), each seeded from the
nearest finished sample (seed 000 §5.4) → quadratic RSM fit with MAPE (LOO, and in-sample on a
full factorial) → report. Everything lives under ``surfaces/<sweep_id>/`` in the store.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from analysis.plots import surface_png
from analysis.report import surface_report_html
from workbench.config.factors import sweep_factors
from workbench.config.vocabulary import DESIGNS
from workbench.config.workloads import WORKLOAD_BY_NAME, WORKLOAD_FACTOR_NAMES
from workbench.pipeline.plan import ParamError, RatingPlan, check_param, plan_from_params, seeded, strict_json
from workbench.pipeline.runner import run_rating
from workbench.pipeline.store import PARQUET_TYPE, Store
from workbench.pipeline.validation import validate_plans
from workbench.planning.design import Categorical, FactorSpace, Numeric
from workbench.planning.doptimal import d_optimal
from workbench.planning.seeding import nearest_seed, seed_order
from workbench.stats.rsm import fit_quadratic, mape

NUMERIC_FACTORS = sweep_factors("numeric") + WORKLOAD_FACTOR_NAMES     # server, then workload factors
CATEGORICAL_FACTORS = sweep_factors("categorical")
MAX_LEVELS = 64               # levels of one factor
MAX_GRID = 4096               # points of the full grid (fullfact runs them all; dopt chooses among them)
MAX_SAMPLES = 256             # dopt / lhs n_samples (the DAG's Param bound)
SWEEP_PARAMS = ("workload", "workload_text", "profile", "policy", "factors", "fixed", "design", "n_samples",
                "seeding", "seed")


def _levels(name: str, lv: Any) -> None:
    """One factor's levels: a list of 2..MAX_LEVELS distinct, non-null values the factor takes."""
    if not isinstance(lv, (list, tuple)) or len(lv) < 2:
        raise ParamError(f"factors.{name}: give a list of at least 2 levels, got {lv!r}")
    if len(lv) > MAX_LEVELS:
        raise ParamError(f"factors.{name}: {len(lv)} levels; at most {MAX_LEVELS}")
    seen = set()
    for v in lv:
        if v is None:
            raise ParamError(f"factors.{name}: a level is null; every level must be a value of {name}")
        check_param(name, v)
        if (type(v), v) in seen:
            raise ParamError(f"factors.{name}: level {v!r} is given twice; levels must differ")
        seen.add((type(v), v))


def factor_space(levels: Mapping[str, Sequence[Any]]) -> FactorSpace:
    """Factors named like the rate_peak params; numeric ones need ≥ 2 distinct levels."""
    if not isinstance(levels, Mapping) or not levels:
        raise ParamError("factors: give an object {factor: [levels...]}, e.g. "
                         '{"memory_mb": [128, 256], "read_iops": [100, 200]}')
    out = []
    for name, lv in levels.items():
        if name not in NUMERIC_FACTORS + CATEGORICAL_FACTORS:
            raise ParamError(f"factors: unknown factor {name!r}; numeric: {', '.join(NUMERIC_FACTORS)}; "
                             f"categorical: {', '.join(CATEGORICAL_FACTORS)}")
        _levels(name, lv)
        integer = name not in WORKLOAD_BY_NAME or WORKLOAD_BY_NAME[name].kind is int
        out.append(Numeric(name, levels=tuple(lv), integer=integer) if name in NUMERIC_FACTORS
                   else Categorical(name, tuple(lv)))
    try:
        return FactorSpace(out)
    except ValueError as e:
        raise ParamError(f"factors: {e}") from None


def design_samples(space: FactorSpace, design: str, n_samples: int | None, seed: int = 0) -> list[dict[str, Any]]:
    """The design's samples in seeding order (nearest-neighbour chain from the low corner)."""
    grid = math.prod(len(f.levels) for f in space.factors)
    if design in ("fullfact", "dopt") and grid > MAX_GRID:
        sizes = " × ".join(f"{f.name} {len(f.levels)}" for f in space.factors)
        raise ParamError(f"factors: the full grid has {grid} points ({sizes}); at most {MAX_GRID}: "
                         f"use fewer levels, or design lhs")
    if design == "fullfact":
        samples = space.fullfact()
    elif design == "dopt":
        grid = space.fullfact()
        if n_samples is None or not 1 <= n_samples <= len(grid):
            raise ParamError(f"n_samples: D-optimal needs 1 ≤ n ≤ {len(grid)} (the grid), got {n_samples!r}")
        samples = d_optimal(space, n_samples, candidates=grid).samples
    elif design == "lhs":
        if n_samples is None or n_samples < 2:
            raise ParamError(f"n_samples: LHS needs n ≥ 2, got {n_samples!r}")
        samples = space.lhs(n_samples, seed=seed)
    else:
        raise ParamError(f"design: {design!r} is not one of {', '.join(DESIGNS)}")
    return [dict(samples[i]) for i in seed_order(samples, space=space)]


def _sweep_settings(params: Mapping[str, Any]) -> None:
    """The sweep's own parameters (the factors are factor_space's)."""
    unknown = sorted(set(params) - set(SWEEP_PARAMS))
    if unknown:
        raise ParamError(f"unknown sweep parameter(s): {', '.join(map(str, unknown))}; known: {', '.join(SWEEP_PARAMS)}")
    design, n = params.get("design", "fullfact"), params.get("n_samples")
    if design not in DESIGNS:
        raise ParamError(f"design: {design!r} is not one of {', '.join(DESIGNS)}")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SAMPLES):
        raise ParamError(f"n_samples: {n!r} is not allowed; an integer in [1, {MAX_SAMPLES}]")
    seed = params.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 32):
        raise ParamError(f"seed: {seed!r} is not allowed; an integer in [0, 2^32)")
    if not isinstance(params.get("seeding", True), bool):
        raise ParamError(f"seeding: {params['seeding']!r} is not allowed; true or false")
    if not isinstance(params.get("fixed") or {}, Mapping):
        raise ParamError(f"fixed: {params['fixed']!r} is not allowed; an object {{factor: value}}")


def plan_sweep(params: Mapping[str, Any], sweep_id: str) -> dict[str, Any]:
    """Checked sweep: the design's samples, each with its rating plan (ids deterministic)."""
    _sweep_settings(params)
    space = factor_space(params.get("factors") or {})
    design = params.get("design", "fullfact")
    samples = design_samples(space, design, params.get("n_samples"), int(params.get("seed") or 0))
    base = {k: params[k] for k in ("workload", "workload_text", "profile", "policy") if params.get(k) is not None}
    fixed = dict(params.get("fixed") or {})
    clash = sorted(set(fixed) & set(space.names))
    if clash:
        raise ParamError(f"fixed: {', '.join(clash)} also varied in factors")
    items = []
    for i, s in enumerate(samples):
        plan = plan_from_params({**base, **fixed, **s}, f"{sweep_id}__s{i:02d}")
        items.append({"i": i, "sample": s, "plan": plan.to_dict()})
    return {"sweep_id": sweep_id, "design": design, "factors": {k: list(v) for k, v in params["factors"].items()},
            "seeding": bool(params.get("seeding", True)), "samples": items}


def finished_samples(store: Store, sweep_id: str) -> list[dict[str, Any]]:
    keys = [k for k in store.list_keys(store.surface_key(sweep_id, "samples/")) if k.endswith(".json")]
    return [store.get_json(k) for k in keys]


def rate_sample(store: Store, sweep: Mapping[str, Any], item: Mapping[str, Any], log=print) -> dict[str, Any]:
    """One sample's rating, seeded from the nearest finished sample of the sweep."""
    sweep_id = sweep["sweep_id"]
    key = store.surface_key(sweep_id, f"samples/{item['i']:03d}.json")
    if store.exists(key):                          # a retried task: the sample is already rated
        return store.get_json(key)
    plan = RatingPlan.from_dict(item["plan"])
    first_try = store.get_json(store.rating_key(plan.rating_id, "spec.json"), None)
    seed = None
    if first_try is not None:      # a retry (on any worker) resumes with the seed its first try chose
        seed = first_try["spec"].get("seed_load")
        plan = seeded(plan, seed)
    elif sweep.get("seeding", True):
        done = [(d["sample"], d["peak_rate"]) for d in finished_samples(store, sweep_id) if d.get("converged")]
        space = factor_space(sweep["factors"])
        seed = nearest_seed(item["sample"], done, space=space, fallback="aggregate")
        plan = seeded(plan, seed)
    log(f"sample {item['i']}: {item['sample']} seed_load={seed}")
    res = run_rating(plan, store, log=log)
    row = strict_json({"i": item["i"], "sample": item["sample"], "rating_id": plan.rating_id, "seed_load": seed,
           "peak_rate": res["peak_rate"], "converged": res["converged"], "n_trials": res["n_trials"],
           "cost_s": res["cost_s"], "bracket": res["bracket"], "peak_rate_ci": res["peak_rate_ci"],
           "reason": res["reason"]})
    store.put_json(key, row)
    return row


def fit_surface(sweep: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> tuple[Any, dict[str, Any]]:
    """Quadratic RSM of λ* over the sweep's factors (workbench.stats.rsm) and its fit summary."""
    space = factor_space(sweep["factors"])
    samples = [dict(r["sample"]) for r in rows]
    y = np.array([float(r["peak_rate"]) for r in rows])
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


def start_sweep(store: Store, params: Mapping[str, Any], sweep_id: str) -> list[dict[str, Any]]:
    """The checked plan (every sample through the whole validation pass) to the store; one job
    (sweep + sample) per mapped rate_sample task."""
    plan = plan_sweep(params, sweep_id)
    validate_plans([RatingPlan.from_dict(it["plan"]) for it in plan["samples"]], "sample")
    store.put_json(store.surface_key(sweep_id, "plan.json"), plan)
    for it in plan["samples"]:
        print(f"sample {it['i']}: {it['sample']}")
    head = {k: v for k, v in plan.items() if k != "samples"}
    return [{"sweep": head, "item": it} for it in plan["samples"]]


def surface_plots(plan: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], model: Any) -> dict[str, bytes]:
    """One filled-contour plot of the fit per pair of numeric factors, with the samples on it."""
    points = pd.DataFrame([{**r["sample"], "peak_rate": r["peak_rate"]} for r in rows])
    numeric = [f for f in plan["factors"] if f in NUMERIC_FACTORS]
    code = coder(factor_space(plan["factors"]), [r["sample"] for r in rows])
    return {f"surface_{fx}_{fy}.png": surface_png(points, fx, fy, fit=model, code=code)
            for i, fx in enumerate(numeric) for fy in numeric[i + 1:]}


def finish_sweep(store: Store, sweep_id: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Fit, samples.parquet, plots and the report of a finished sweep; returns the fit summary."""
    plan = store.get_json(store.surface_key(sweep_id, "plan.json"))
    rows = sorted(rows, key=lambda r: r["i"])
    model, summary = fit_surface(plan, rows)
    store.put_json(store.surface_key(sweep_id, "model.json"), summary)
    points = pd.DataFrame([{**r["sample"], "peak_rate": r["peak_rate"]} for r in rows])
    store.put_bytes(store.surface_key(sweep_id, "samples.parquet"), points.to_parquet(index=False), PARQUET_TYPE)
    plots = surface_plots(plan, rows, model)
    for name, png in plots.items():
        store.put_bytes(store.surface_key(sweep_id, f"plots/{name}"), png, "image/png")
    key = store.surface_key(sweep_id, "report.html")
    samples = [{**r["sample"], **{k: r[k] for k in ("peak_rate", "rating_id", "n_trials", "seed_load", "converged")},
                "report_href": store.link(key, store.rating_key(r["rating_id"], "report.html"))} for r in rows]
    html = surface_report_html({"sweep_id": sweep_id, "factors": plan["factors"], "design": plan["design"]},
                               samples, summary, plots)
    store.put_bytes(key, html.encode(), "text/html; charset=utf-8")
    print(f"fit: {summary}\nreport: {store.url(key)}")
    return summary
