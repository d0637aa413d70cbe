"""Response-surface sweeps: a sweep's plan run round by round, and the surface fit.

map_surface: factors + levels → a design (pydoe: full factorial, D-optimal n of N, LHS, or active:
a D-optimal start grown a batch a round, planning.active) → samples in seeding order
(pipeline.sweep_plan) → one rating per sample (``run_rating``), each seeded from the nearest
finished sample (seed 000 §5.4) → after each round a decision (rounds/<k>.json: LOO MAPE, more
samples or done) → quadratic RSM fit with MAPE (LOO, and in-sample on a full factorial); the
report is analysis.surface_report's. A
sweep budget (Σ of the ratings' cost in the controller's account, cost_spec_s, which each rating's
budget_s caps) and a deadline bound every design. Everything lives under ``surfaces/<sweep_id>/``
in the store.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from workbench.config.vocabulary import MAX_ROUNDS as MAX_ROUNDS  # (bench/active_surface.py's)
from workbench.params.plan import RatingPlan, strict_json
from workbench.params.seeds import seeded
from workbench.params.validation import validate_plans
from workbench.pipeline.runner import ReportStep, run_rating
from workbench.pipeline.sweep_plan import (
    active_settings,
    finite_or_none,
    plan_sweep,
    sample_items,
    space_of,
)
from workbench.planning import active
from workbench.planning.design import FactorSpace
from workbench.planning.seeding import nearest_seed
from workbench.stats.rsm import mape
from workbench.store.base import PARQUET_TYPE, Store


def finished_samples(store: Store, sweep_id: str) -> list[dict[str, Any]]:
    return [store.get_json(k) for k in store.sample_keys(sweep_id)]


def rate_sample(
    store: Store,
    sweep: Mapping[str, Any],
    item: Mapping[str, Any],
    log: Callable[[str], object] = print,
    report: ReportStep | None = None,
) -> dict[str, Any]:
    """One sample's rating, seeded from the nearest finished sample of the sweep; `report`: the
    rating's report step (run_rating)."""
    key = store.sample_key(sweep["sweep_id"], item["i"])
    if store.exists(key):  # a retried task: the sample is already rated
        return store.get_json(key)
    plan = RatingPlan.from_dict(item["plan"])
    first_try = store.get_json(store.spec_key(plan.rating_id), None)
    seed = None
    if first_try is not None:  # a retry (on any worker) resumes with the seed its first try chose
        seed = first_try["spec"].get("seed_load")
        plan = seeded(plan, seed)
    elif time.time() >= (sweep.get("deadline_s") or math.inf):
        row = {  # a started rating resumes; no new one
            "i": item["i"],
            "sample": item["sample"],
            "rating_id": plan.rating_id,
            "peak_rate": None,
            "converged": False,
            "cost_s": 0.0,
            "reason": f"not rated: the deadline {sweep['deadline']} passed",
        }
        log(f"sample {item['i']}: {row['reason']}")
        store.put_json(key, row)
        return row
    elif sweep.get("seeding", True):
        seed = _nearest_seed(store, sweep, item["sample"])
        plan = seeded(plan, seed)
    log(f"sample {item['i']}: {item['sample']} seed_load={seed}")
    row = strict_json(
        _sample_row(item, plan, seed, run_rating(plan, store, log=log, report=report))
    )
    store.put_json(key, row)
    return row


def _nearest_seed(
    store: Store, sweep: Mapping[str, Any], sample: Mapping[str, Any]
) -> float | None:
    """The seed load of a sample: λ* of the nearest converged sample (planning.seeding)."""
    done = [
        (d["sample"], d["peak_rate"])
        for d in finished_samples(store, sweep["sweep_id"])
        if d.get("converged")
    ]
    space = space_of(sweep)
    return nearest_seed(sample, done, space=space, fallback="aggregate")


def _sample_row(
    item: Mapping[str, Any], plan: RatingPlan, seed: float | None, res: Mapping[str, Any]
) -> dict[str, Any]:
    """A rated sample's row (samples/<i>.json) from its rating's result."""
    return {
        "i": item["i"],
        "sample": item["sample"],
        "rating_id": plan.rating_id,
        "seed_load": seed,
        "peak_rate": res["peak_rate"],
        "converged": res["converged"],
        "n_trials": res["n_trials"],
        "cost_s": res["cost_s"],
        "cost_spec_s": res.get("cost_spec_s", res["cost_s"]),
        "bracket": res["bracket"],
        "peak_rate_ci": res["peak_rate_ci"],
        "reason": res["reason"],
        "bottleneck": (res.get("bottleneck") or {}).get("resource"),
    }


def rated(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows with a λ* (a sample the deadline stopped has none)."""
    return [
        r for r in rows if r.get("peak_rate") is not None and math.isfinite(float(r["peak_rate"]))
    ]


def fit_surface(
    sweep: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]
) -> tuple[Any, dict[str, Any]]:
    """Quadratic (or, degree 1, planar) RSM of λ* over the sweep's factors (planning.active) and its
    summary."""
    space = space_of(sweep)
    samples = [dict(r["sample"]) for r in rows]
    y = np.array([float(r["peak_rate"]) for r in rows])
    model = active.surface_model(space, samples, y, int(sweep.get("degree") or 2))
    loo = model.loo_mape()
    two_level = [f.name for f, sq in zip(space.numeric, active.squares(space, samples)) if not sq]
    notes = []
    if model.rank >= len(rows):
        notes.append(
            "saturated: as many independent terms as samples, so leave-one-out is undefined "
            "and the in-sample fit is exact"
        )
    if two_level and model.degree == 2:
        notes.append(
            f"{', '.join(two_level)} at 2 levels: no squared term (it would be aliased with "
            "the intercept); use ≥ 3 levels to model curvature"
        )
    summary = {
        "n_samples": len(rows),
        "n_params": model.n_params,
        "rank": model.rank,
        "r2": finite_or_none(model.r2),
        "mape_loo_pct": finite_or_none(loo),
        "mape_all_pct": finite_or_none(mape(y, model.fitted))
        if sweep.get("design") == "fullfact"
        else None,
        "coefficients": model.to_dict()["terms"],
        "note": "; ".join(notes),
    }
    return model, summary


def decide_round(store: Store, sweep_id: str, k: int, now_s: float | None = None) -> dict[str, Any]:
    """After round k: the LOO MAPE of the rated samples and "more" (the next round's checked
    samples) or "done" (why), stored once at rounds/<k>.json so a retry decides the same."""
    key = store.round_key(sweep_id, k)
    if store.exists(key):
        return store.get_json(key)
    plan = store.get_json(store.sweep_plan_key(sweep_id))
    rows = rated(finished_samples(store, sweep_id))
    space, st = space_of(plan), active_settings(plan)
    grid = space.fullfact() if plan["design"] == "active" else [r["sample"] for r in rows]
    d = active.next_round(
        space,
        grid,
        rows,
        k,
        st,
        time.time() if now_s is None else now_s,
        _inf(plan.get("rating_budget_s")),
        float(plan["floor_s"]),
    )
    reason = d.reason if plan["design"] == "active" else _one_shot(plan, store, sweep_id, len(rows))
    n_items = sum(
        len(store.get_json(store.round_key(sweep_id, j))["items"]) for j in range(k)
    ) + len(plan["samples"])
    items = sample_items(plan, d.samples, n_items, d.budget_each_s)
    validate_plans([RatingPlan.from_dict(it["plan"]) for it in items], "sample")
    out = strict_json(
        {
            "round": k,
            "done": d.done,
            "reason": reason,
            "n_samples": d.n_samples,
            "mape_loo_pct": d.mape_loo_pct,
            "cost_spec_s": active.spent_s(rows),
            "items": items,
        }
    )
    store.put_json(key, out)
    mape_text = "undefined" if d.mape_loo_pct is None else f"{d.mape_loo_pct:.3g} %"
    print(
        f"round {k}: {d.n_samples} samples, LOO MAPE {mape_text}; "
        + (
            f"done: {reason}"
            if d.done
            else f"{len(items)} more: {[it['sample'] for it in items]} ({reason})"
        )
    )
    return out


def _one_shot(plan: Mapping[str, Any], store: Store, sweep_id: str, n: int) -> str:
    late = len(finished_samples(store, sweep_id)) - n
    return (
        f"one-shot design: {n} of {n + late + len(plan['unrated'])} samples rated"
        + (f"; {len(plan['unrated'])} not paid by the sweep budget" if plan["unrated"] else "")
        + (f"; {late} not started by the deadline" if late else "")
    )


def round_jobs(store: Store, sweep_id: str, k: int) -> list[dict[str, Any]]:
    """Round k's jobs (k ≥ 1): the samples the decision after round k − 1 chose."""
    plan = store.get_json(store.sweep_plan_key(sweep_id))
    head = {k_: v for k_, v in plan.items() if k_ not in ("samples", "unrated")}
    return [
        {"sweep": head, "item": it}
        for it in store.get_json(store.round_key(sweep_id, k - 1))["items"]
    ]


def rounds(store: Store, sweep_id: str) -> list[dict[str, Any]]:
    return [store.get_json(k) for k in store.round_keys(sweep_id)]


def _inf(x: float | None) -> float:
    return math.inf if x is None else float(x)


def coder(
    space: FactorSpace, samples: Sequence[Mapping[str, Any]]
) -> Callable[[Sequence[Mapping[str, Any]]], np.ndarray]:
    """Natural → coded rows for plotting a slice: factors not given sit at their sample median."""
    mid = {f.name: float(np.median([s[f.name] for s in samples])) for f in space.numeric}
    cats = {f.name: f.levels[0] for f in space.categorical}
    return lambda rows: space.coded([{**mid, **cats, **r} for r in rows])


def start_sweep(store: Store, params: Mapping[str, Any], sweep_id: str) -> list[dict[str, Any]]:
    """The checked plan (every sample through the whole validation pass) to the store; one job
    (sweep + sample) per mapped rate_sample task."""
    plan = plan_sweep(params, sweep_id)
    validate_plans([RatingPlan.from_dict(it["plan"]) for it in plan["samples"]], "sample")
    store.put_json(store.sweep_plan_key(sweep_id), plan)
    for it in plan["samples"]:
        print(f"sample {it['i']}: {it['sample']}")
    if plan["unrated"]:
        print(
            f"the sweep budget pays for {len(plan['samples'])} of the design's "
            f"{len(plan['samples']) + len(plan['unrated'])} samples"
        )
    head = {k: v for k, v in plan.items() if k not in ("samples", "unrated")}
    return [{"sweep": head, "item": it} for it in plan["samples"]]


def sweep_rows(
    store: Store, sweep_id: str, rows: Sequence[Mapping[str, Any]] | None = None
) -> tuple[dict[str, Any], list[Mapping[str, Any]], int]:
    """A finished sweep's plan, its rated samples in order (rows: its samples, default the
    store's) and how many were not rated."""
    plan = store.get_json(store.sweep_plan_key(sweep_id))
    rows = sorted(finished_samples(store, sweep_id) if rows is None else rows, key=lambda r: r["i"])
    done = rated(rows)
    if not done:
        raise RuntimeError(
            f"sweep {sweep_id}: no sample was rated ({len(rows)} not started by the deadline)"
        )
    return plan, done, len(rows) - len(done)


def finish_sweep(
    store: Store, sweep_id: str, rows: Sequence[Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """Fit and samples.parquet of a finished sweep (rows: its samples, default the store's); returns
    the fit summary, with why the sweep stopped and MAPE against samples. Its plots and report:
    analysis.surface_report.surface_report_step."""
    plan, rows, n_skipped = sweep_rows(store, sweep_id, rows)
    _, summary = fit_surface(plan, rows)
    history = rounds(store, sweep_id)
    summary.update(
        design=plan["design"],
        stopped=history[-1]["reason"] if history else None,
        cost_s=sum(float(r.get("cost_s") or 0.0) for r in rows),
        cost_spec_s=active.spent_s(rows),
        sweep_budget_s=plan.get("sweep_budget_s"),
        mape_target_pct=plan.get("mape_target_pct") if plan["design"] == "active" else None,
        mape_by_samples=[[h["n_samples"], h["mape_loo_pct"]] for h in history],
        not_rated=len(plan.get("unrated") or []) + n_skipped,
    )
    store.put_json(store.model_key(sweep_id), summary)
    points = pd.DataFrame(
        [
            {**r["sample"], "peak_rate": r["peak_rate"], "bottleneck": r.get("bottleneck")}
            for r in rows
        ]
    )
    store.put_bytes(
        store.samples_parquet_key(sweep_id), points.to_parquet(index=False), PARQUET_TYPE
    )
    return summary
