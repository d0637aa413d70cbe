"""Response-surface sweeps and nightly baselines: planning, seeding and the surface fit.

map_surface: factors + levels → a design (pydoe: full factorial, D-optimal n of N, LHS, or active:
a D-optimal start grown a batch a round, planning.active) → samples in seeding order → one rating
per sample (``run_rating``), each seeded from the nearest finished sample (seed 000 §5.4) → after
each round a decision (rounds/<k>.json: LOO MAPE, more samples or done) → quadratic RSM fit with
MAPE (LOO, and in-sample on a full factorial) → report. A sweep budget (Σ of the ratings' cost in
the controller's account, cost_spec_s, which each rating's budget_s caps) and a deadline bound
every design. Everything lives under ``surfaces/<sweep_id>/`` in the store.
"""
from __future__ import annotations

import datetime as dt
import math
import time
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from workbench.analysis.report import surface_report_html
from workbench.analysis.surface_plots import curve_png, mape_png, surface_png
from workbench.config.factors import sweep_factors
from workbench.config.tenants import TENANT_FACTOR_NAMES
from workbench.config.vocabulary import DESIGNS, MAX_ROUNDS
from workbench.config.workloads import WORKLOAD_BY_NAME, WORKLOAD_FACTOR_NAMES
from workbench.params.plan import ParamError, RatingPlan, check_param, plan_from_params, seeded, strict_json
from workbench.params.validation import validate_plans
from workbench.pipeline.runner import run_rating
from workbench.planning import active
from workbench.planning.design import Categorical, FactorSpace, Numeric
from workbench.planning.doptimal import d_optimal
from workbench.planning.seeding import nearest_seed, seed_order
from workbench.stats.rsm import mape
from workbench.store.base import PARQUET_TYPE, Store

NUMERIC_FACTORS = sweep_factors("numeric") + WORKLOAD_FACTOR_NAMES + TENANT_FACTOR_NAMES  # server, workload, tenant B
CATEGORICAL_FACTORS = sweep_factors("categorical")
MAX_LEVELS = 64               # levels of one factor
MAX_GRID = 4096               # points of the full grid (fullfact runs them all; dopt chooses among them)
MAX_SAMPLES = 256             # dopt / lhs n_samples (the DAG's Param bound)
SWEEP_PARAMS = ("workload", "workload_text", "profile", "policy", "factors", "fixed", "design", "n_samples",
                "seeding", "seed", "mape_target_pct", "batch", "degree", "sweep_budget_s", "deadline")
MAX_BATCH = 16                # samples added in one round of the active design


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
        integer = name in sweep_factors("numeric") or (name in WORKLOAD_BY_NAME and WORKLOAD_BY_NAME[name].kind is int)
        out.append(Numeric(name, levels=tuple(lv), integer=integer) if name in NUMERIC_FACTORS
                   else Categorical(name, tuple(lv)))
    try:
        return FactorSpace(out)
    except ValueError as e:
        raise ParamError(f"factors: {e}") from None


def design_samples(space: FactorSpace, design: str, n_samples: int | None, seed: int = 0,
                   degree: int = 2) -> list[dict[str, Any]]:
    """The design's samples (active: its start set) in seeding order (nearest-neighbour chain from the
    low corner)."""
    grid = math.prod(len(f.levels) for f in space.factors)
    if design in ("fullfact", "dopt", "active") and grid > MAX_GRID:
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
    elif design == "active":
        grid = space.fullfact()
        if n_samples is not None and n_samples > len(grid):
            raise ParamError(f"n_samples: the active start set is at most the grid ({len(grid)}), got {n_samples}")
        samples = active.start_set(space, grid, degree, n_samples)
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
    _number(params, "mape_target_pct", 0.1, 100.0)
    _number(params, "sweep_budget_s", 10.0, 31 * 86400.0)
    for name, lo, hi in (("batch", 1, MAX_BATCH), ("degree", 1, 2)):
        v = params.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi):
            raise ParamError(f"{name}: {v!r} is not allowed; an integer in [{lo}, {hi}]")
    if deadline_s(params.get("deadline")) <= time.time():
        raise ParamError(f"deadline: {params['deadline']} has passed")


def _number(params: Mapping[str, Any], name: str, lo: float, hi: float) -> None:
    v = params.get(name)
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi):
        raise ParamError(f"{name}: {v!r} is not allowed; a number in [{lo:g}, {hi:g}]")


def deadline_s(text: Any) -> float:
    """The deadline (ISO 8601; no zone = UTC) in epoch seconds; None → +inf."""
    if text is None or text == "":
        return math.inf
    try:
        when = dt.datetime.fromisoformat(str(text))
    except ValueError:
        raise ParamError(f"deadline: {text!r} is not an ISO 8601 time, e.g. 2026-11-24T18:00:00Z") from None
    return (when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)).timestamp()


def active_settings(params: Mapping[str, Any]) -> active.Settings:
    """The stopping rule and round shape of a sweep (one-shot designs: one round)."""
    budget = params.get("sweep_budget_s")
    return active.Settings(
        mape_target_pct=float(params.get("mape_target_pct") or 10.0), batch=int(params.get("batch") or 1),
        degree=int(params.get("degree") or 2),
        max_rounds=MAX_ROUNDS if params.get("design") == "active" else 1,
        budget_s=math.inf if budget is None else float(budget), deadline_s=deadline_s(params.get("deadline")))


def plan_sweep(params: Mapping[str, Any], sweep_id: str) -> dict[str, Any]:
    """Checked sweep: the first round's samples, each with its rating plan (ids deterministic), as many
    as the sweep budget pays for; the design's others under "unrated"."""
    _sweep_settings(params)
    space = factor_space(params.get("factors") or {})
    design = params.get("design", "fullfact")
    st = active_settings(params)
    samples = design_samples(space, design, params.get("n_samples"), int(params.get("seed") or 0), st.degree)
    base = {k: params[k] for k in ("workload", "workload_text", "profile", "policy") if params.get(k) is not None}
    fixed = dict(params.get("fixed") or {})
    clash = sorted(set(fixed) & set(space.names))
    if clash:
        raise ParamError(f"fixed: {', '.join(clash)} also varied in factors")
    spec = plan_from_params({**base, **fixed, **samples[0]}, f"{sweep_id}__s00").spec
    rating_budget_s = float(spec.get("budget_s", math.inf))
    floor_s = max(10.0, float(spec["runlength_s"]) + float(spec.get("trial_overhead_s", 0.0)))
    m, each = active.budget_split(st.budget_s, rating_budget_s, floor_s, len(samples))
    if m == 0:
        raise ParamError(f"sweep_budget_s: {st.budget_s:g} s does not pay for one rating's first trial")
    if m < len(samples) and design in ("dopt", "active"):     # the D-optimal m, not the first m of the chain
        cut = design_samples(space, design, m, 0, st.degree)
        samples = cut + [s for s in samples if s not in cut]
    head = {"sweep_id": sweep_id, "design": design, "factors": {k: list(v) for k, v in params["factors"].items()},
            "seeding": bool(params.get("seeding", True)), "base": {**base, **fixed},
            "mape_target_pct": st.mape_target_pct, "batch": st.batch, "degree": st.degree,
            "max_rounds": st.max_rounds, "sweep_budget_s": _finite(st.budget_s),
            "deadline": params.get("deadline"), "deadline_s": _finite(st.deadline_s),
            "rating_budget_s": _finite(rating_budget_s), "floor_s": floor_s}
    return {**head, "samples": sample_items(head, samples[:m], 0, each if math.isfinite(st.budget_s) else None),
            "unrated": samples[m:]}


def sample_items(head: Mapping[str, Any], samples: Sequence[Mapping[str, Any]], first: int,
                 budget_each_s: float | None) -> list[dict[str, Any]]:
    """Samples numbered from `first`, each with its rating plan (budget_s: its share of the sweep's)."""
    cap = {} if budget_each_s is None else {"budget_s": float(budget_each_s)}
    return [{"i": i, "sample": dict(s),
             "plan": plan_from_params({**head["base"], **s, **cap}, f"{head['sweep_id']}__s{i:02d}").to_dict()}
            for i, s in enumerate(samples, start=first)]


def finished_samples(store: Store, sweep_id: str) -> list[dict[str, Any]]:
    return [store.get_json(k) for k in store.sample_keys(sweep_id)]


def rate_sample(store: Store, sweep: Mapping[str, Any], item: Mapping[str, Any], log=print) -> dict[str, Any]:
    """One sample's rating, seeded from the nearest finished sample of the sweep."""
    sweep_id = sweep["sweep_id"]
    key = store.sample_key(sweep_id, item["i"])
    if store.exists(key):                          # a retried task: the sample is already rated
        return store.get_json(key)
    plan = RatingPlan.from_dict(item["plan"])
    first_try = store.get_json(store.spec_key(plan.rating_id), None)
    seed = None
    if first_try is not None:      # a retry (on any worker) resumes with the seed its first try chose
        seed = first_try["spec"].get("seed_load")
        plan = seeded(plan, seed)
    elif time.time() >= (sweep.get("deadline_s") or math.inf):   # a started rating resumes; no new one
        row = {"i": item["i"], "sample": item["sample"], "rating_id": plan.rating_id, "peak_rate": None,
               "converged": False, "cost_s": 0.0, "reason": f"not rated: the deadline {sweep['deadline']} passed"}
        log(f"sample {item['i']}: {row['reason']}")
        store.put_json(key, row)
        return row
    elif sweep.get("seeding", True):
        done = [(d["sample"], d["peak_rate"]) for d in finished_samples(store, sweep_id) if d.get("converged")]
        space = factor_space(sweep["factors"])
        seed = nearest_seed(item["sample"], done, space=space, fallback="aggregate")
        plan = seeded(plan, seed)
    log(f"sample {item['i']}: {item['sample']} seed_load={seed}")
    res = run_rating(plan, store, log=log)
    row = strict_json({"i": item["i"], "sample": item["sample"], "rating_id": plan.rating_id, "seed_load": seed,
           "peak_rate": res["peak_rate"], "converged": res["converged"], "n_trials": res["n_trials"],
           "cost_s": res["cost_s"], "cost_spec_s": res.get("cost_spec_s", res["cost_s"]), "bracket": res["bracket"], "peak_rate_ci": res["peak_rate_ci"],
           "reason": res["reason"], "bottleneck": (res.get("bottleneck") or {}).get("resource")})
    store.put_json(key, row)
    return row


def rated(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows with a λ* (a sample the deadline stopped has none)."""
    return [r for r in rows if r.get("peak_rate") is not None and math.isfinite(float(r["peak_rate"]))]


def fit_surface(sweep: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> tuple[Any, dict[str, Any]]:
    """Quadratic (or, degree 1, planar) RSM of λ* over the sweep's factors (planning.active) and its summary."""
    space = factor_space(sweep["factors"])
    samples = [dict(r["sample"]) for r in rows]
    y = np.array([float(r["peak_rate"]) for r in rows])
    model = active.surface_model(space, samples, y, int(sweep.get("degree") or 2))
    loo = model.loo_mape()
    two_level = [f.name for f, sq in zip(space.numeric, active.squares(space, samples)) if not sq]
    notes = []
    if model.rank >= len(rows):
        notes.append("saturated: as many independent terms as samples, so leave-one-out is undefined "
                     "and the in-sample fit is exact")
    if two_level and model.degree == 2:
        notes.append(f"{', '.join(two_level)} at 2 levels: no squared term (it would be aliased with "
                     "the intercept); use ≥ 3 levels to model curvature")
    summary = {"n_samples": len(rows), "n_params": model.n_params, "rank": model.rank,
               "r2": _finite(model.r2), "mape_loo_pct": _finite(loo),
               "mape_all_pct": _finite(mape(y, model.fitted)) if sweep.get("design") == "fullfact" else None,
               "coefficients": model.to_dict()["terms"],
               "note": "; ".join(notes)}
    return model, summary


def decide_round(store: Store, sweep_id: str, k: int, now_s: float | None = None) -> dict[str, Any]:
    """After round k: the LOO MAPE of the rated samples and "more" (the next round's checked
    samples) or "done" (why), stored once at rounds/<k>.json so a retry decides the same."""
    key = store.round_key(sweep_id, k)
    if store.exists(key):
        return store.get_json(key)
    plan = store.get_json(store.sweep_plan_key(sweep_id))
    rows = rated(finished_samples(store, sweep_id))
    space, st = factor_space(plan["factors"]), active_settings(plan)
    grid = space.fullfact() if plan["design"] == "active" else [r["sample"] for r in rows]
    d = active.next_round(space, grid, rows, k, st, time.time() if now_s is None else now_s,
                          _inf(plan.get("rating_budget_s")), float(plan["floor_s"]))
    reason = d.reason if plan["design"] == "active" else _one_shot(plan, store, sweep_id, len(rows))
    n_items = sum(len(store.get_json(store.round_key(sweep_id, j))["items"]) for j in range(k)) + len(plan["samples"])
    items = sample_items(plan, d.samples, n_items, d.budget_each_s)
    validate_plans([RatingPlan.from_dict(it["plan"]) for it in items], "sample")
    out = strict_json({"round": k, "done": d.done, "reason": reason, "n_samples": d.n_samples,
                       "mape_loo_pct": d.mape_loo_pct, "cost_spec_s": active.spent_s(rows),
                       "items": items})
    store.put_json(key, out)
    mape_text = "undefined" if d.mape_loo_pct is None else f"{d.mape_loo_pct:.3g} %"
    print(f"round {k}: {d.n_samples} samples, LOO MAPE {mape_text}; "
          + (f"done: {reason}" if d.done else f"{len(items)} more: {[it['sample'] for it in items]} ({reason})"))
    return out


def _one_shot(plan: Mapping[str, Any], store: Store, sweep_id: str, n: int) -> str:
    late = len(finished_samples(store, sweep_id)) - n
    return (f"one-shot design: {n} of {n + late + len(plan['unrated'])} samples rated"
            + (f"; {len(plan['unrated'])} not paid by the sweep budget" if plan["unrated"] else "")
            + (f"; {late} not started by the deadline" if late else ""))


def round_jobs(store: Store, sweep_id: str, k: int) -> list[dict[str, Any]]:
    """Round k's jobs (k ≥ 1): the samples the decision after round k − 1 chose."""
    plan = store.get_json(store.sweep_plan_key(sweep_id))
    head = {k_: v for k_, v in plan.items() if k_ not in ("samples", "unrated")}
    return [{"sweep": head, "item": it} for it in store.get_json(store.round_key(sweep_id, k - 1))["items"]]


def rounds(store: Store, sweep_id: str) -> list[dict[str, Any]]:
    return [store.get_json(k) for k in store.round_keys(sweep_id)]


def _inf(x: float | None) -> float:
    return math.inf if x is None else float(x)


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
    store.put_json(store.sweep_plan_key(sweep_id), plan)
    for it in plan["samples"]:
        print(f"sample {it['i']}: {it['sample']}")
    if plan["unrated"]:
        print(f"the sweep budget pays for {len(plan['samples'])} of the design's "
              f"{len(plan['samples']) + len(plan['unrated'])} samples")
    head = {k: v for k, v in plan.items() if k not in ("samples", "unrated")}
    return [{"sweep": head, "item": it} for it in plan["samples"]]


def surface_plots(plan: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], model: Any) -> dict[str, bytes]:
    """One filled-contour plot of the fit per pair of numeric factors, with the samples on it; with
    one numeric factor, its curve (λ* with CIs and the fit)."""
    points = pd.DataFrame([{**r["sample"], "peak_rate": r["peak_rate"], "peak_rate_ci": r.get("peak_rate_ci")}
                           for r in rows])
    numeric = [f for f in plan["factors"] if f in NUMERIC_FACTORS]
    space = factor_space(plan["factors"])
    code, fit = coder(space, [r["sample"] for r in rows]), active.at_slice(model, space)
    if len(numeric) == 1:
        return {f"curve_{numeric[0]}.png": curve_png(points, numeric[0], fit=fit, code=code)}
    return {f"surface_{fx}_{fy}.png": surface_png(points, fx, fy, fit=fit, code=code)
            for i, fx in enumerate(numeric) for fy in numeric[i + 1:]}


def finish_sweep(store: Store, sweep_id: str, rows: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """Fit, samples.parquet, plots and the report of a finished sweep (rows: its samples, default the
    store's); returns the fit summary, with why the sweep stopped and MAPE against samples."""
    plan = store.get_json(store.sweep_plan_key(sweep_id))
    rows = sorted(finished_samples(store, sweep_id) if rows is None else rows, key=lambda r: r["i"])
    skipped = [r for r in rows if r not in rated(rows)]
    rows = rated(rows)
    if not rows:
        raise RuntimeError(f"sweep {sweep_id}: no sample was rated ({len(skipped)} not started by the deadline)")
    model, summary = fit_surface(plan, rows)
    history = rounds(store, sweep_id)
    summary.update(design=plan["design"], stopped=history[-1]["reason"] if history else None,
                   cost_s=sum(float(r.get("cost_s") or 0.0) for r in rows), cost_spec_s=active.spent_s(rows),
                   sweep_budget_s=plan.get("sweep_budget_s"),
                   mape_target_pct=plan.get("mape_target_pct") if plan["design"] == "active" else None,
                   mape_by_samples=[[h["n_samples"], h["mape_loo_pct"]] for h in history],
                   not_rated=len(plan.get("unrated") or []) + len(skipped))
    store.put_json(store.model_key(sweep_id), summary)
    points = pd.DataFrame([{**r["sample"], "peak_rate": r["peak_rate"], "bottleneck": r.get("bottleneck")} for r in rows])
    store.put_bytes(store.samples_parquet_key(sweep_id), points.to_parquet(index=False), PARQUET_TYPE)
    plots = surface_plots(plan, rows, model)
    if plan["design"] == "active":
        plots["mape_vs_samples.png"] = mape_png(summary["mape_by_samples"], plan["mape_target_pct"])
    for name, png in plots.items():
        store.put_bytes(store.surface_plot_key(sweep_id, name), png, "image/png")
    key = store.surface_report_key(sweep_id)
    samples = [{**r["sample"], **{k: r.get(k) for k in ("peak_rate", "peak_rate_ci", "rating_id", "n_trials",
                                                        "seed_load", "converged", "bottleneck")},
                "report_href": store.link(key, store.rating_report_key(r["rating_id"]))} for r in rows]
    report = {k: v for k, v in summary.items() if k != "mape_by_samples"}
    html = surface_report_html({"sweep_id": sweep_id, "factors": plan["factors"], "design": plan["design"]},
                               samples, report, plots)
    store.put_bytes(key, html.encode(), "text/html; charset=utf-8")
    print(f"fit: {summary}\nreport: {store.url(key)}")
    return summary
