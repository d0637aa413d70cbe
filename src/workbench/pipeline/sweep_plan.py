"""A sweep's plan: its parameters checked, its factor space and design, and the samples of its
first round in seeding order, each with its rating plan, as many as the sweep budget pays for
(pipeline.sweep runs them)."""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.config.factor_pack import FactorPack
from workbench.config.factors import sweep_factors
from workbench.config.tenants import TENANT_FACTOR_NAMES
from workbench.config.vocabulary import DESIGNS, MAX_ROUNDS
from workbench.config.workloads import WORKLOAD_BY_NAME, WORKLOAD_FACTOR_NAMES
from workbench.params.pack import load_params_pack
from workbench.params.plan import ParamError, check_param, plan_from_params
from workbench.planning import active
from workbench.planning.design import Categorical, FactorSpace, Numeric
from workbench.planning.doptimal import d_optimal
from workbench.planning.seeding import seed_order

# the server's, the workload's and tenant B's
NUMERIC_FACTORS = sweep_factors("numeric") + WORKLOAD_FACTOR_NAMES + TENANT_FACTOR_NAMES
CATEGORICAL_FACTORS = sweep_factors("categorical")
MAX_LEVELS = 64  # levels of one factor
MAX_GRID = 4096  # points of the full grid (fullfact runs them all; dopt chooses among them)
MAX_SAMPLES = 256  # dopt / lhs n_samples (the DAG's Param bound)
SWEEP_PARAMS = (
    "workload",
    "workload_text",
    "profile",
    "policy",
    "factors",
    "fixed",
    "design",
    "n_samples",
    "seeding",
    "seed",
    "mape_target_pct",
    "batch",
    "degree",
    "sweep_budget_s",
    "deadline",
    "factor_pack",
)
MAX_BATCH = 16  # samples added in one round of the active design


def _levels(name: str, lv: Any, pack: FactorPack | None) -> None:
    """One factor's levels: a list of 2..MAX_LEVELS distinct, non-null values the factor takes (a
    pack factor's: values its pack allows)."""
    if not isinstance(lv, (list, tuple)) or len(lv) < 2:
        raise ParamError(f"factors.{name}: give a list of at least 2 levels, got {lv!r}")
    if len(lv) > MAX_LEVELS:
        raise ParamError(f"factors.{name}: {len(lv)} levels; at most {MAX_LEVELS}")
    seen = set()
    for v in lv:
        if v is None:
            raise ParamError(
                f"factors.{name}: a level is null; every level must be a value of {name}"
            )
        if pack is not None and name in pack.by_name:
            try:
                pack.by_name[name].check(v, where="factors.")
            except ValueError as e:
                raise ParamError(str(e)) from None
        else:
            check_param(name, v)
        if (type(v), v) in seen:
            raise ParamError(f"factors.{name}: level {v!r} is given twice; levels must differ")
        seen.add((type(v), v))


def factor_space(
    levels: Mapping[str, Sequence[Any]], pack: FactorPack | None = None
) -> FactorSpace:
    """Factors named like the rate_peak params, or the factors of `pack` (config.factor_pack);
    numeric ones need ≥ 2 distinct levels."""
    if not isinstance(levels, Mapping) or not levels:
        raise ParamError(
            "factors: give an object {factor: [levels...]}, e.g. "
            '{"memory_mb": [128, 256], "read_iops": [100, 200]}'
        )
    numeric = NUMERIC_FACTORS + (pack.names("numeric") if pack else ())
    categorical = CATEGORICAL_FACTORS + (pack.names("categorical") if pack else ())
    out = []
    for name, lv in levels.items():
        if name not in numeric + categorical:
            raise ParamError(
                f"factors: unknown factor {name!r}; numeric: {', '.join(numeric)}; "
                f"categorical: {', '.join(categorical)}"
                + ("" if pack else " (a filer's own knobs: factor_pack)")
            )
        _levels(name, lv, pack)
        integer = name in sweep_factors("numeric") + (pack.names("numeric") if pack else ()) or (
            name in WORKLOAD_BY_NAME and WORKLOAD_BY_NAME[name].kind is int
        )
        out.append(
            Numeric(name, levels=tuple(lv), integer=integer)
            if name in numeric
            else Categorical(name, tuple(lv))
        )
    try:
        return FactorSpace(out)
    except ValueError as e:
        raise ParamError(f"factors: {e}") from None


def design_samples(
    space: FactorSpace, design: str, n_samples: int | None, seed: int = 0, degree: int = 2
) -> list[dict[str, Any]]:
    """The design's samples (active: its start set) in seeding order (nearest-neighbour chain from
    the low corner)."""
    n_levels = {f.name: len(f.levels or ()) for f in space.factors}  # (factor_space: all have)
    n_grid = math.prod(n_levels.values())
    if design in ("fullfact", "dopt", "active") and n_grid > MAX_GRID:
        sizes = " × ".join(f"{name} {n}" for name, n in n_levels.items())
        raise ParamError(
            f"factors: the full grid has {n_grid} points ({sizes}); at most {MAX_GRID}: "
            f"use fewer levels, or design lhs"
        )
    if design == "fullfact":
        samples = space.fullfact()
    elif design == "dopt":
        grid = space.fullfact()
        if n_samples is None or not 1 <= n_samples <= len(grid):
            raise ParamError(
                f"n_samples: D-optimal needs 1 ≤ n ≤ {len(grid)} (the grid), got {n_samples!r}"
            )
        samples = d_optimal(space, n_samples, candidates=grid).samples
    elif design == "active":
        grid = space.fullfact()
        if n_samples is not None and n_samples > len(grid):
            raise ParamError(
                f"n_samples: the active start set is at most the grid ({len(grid)}), got "
                f"{n_samples}"
            )
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
        raise ParamError(
            f"unknown sweep parameter(s): {', '.join(map(str, unknown))}; known: "
            f"{', '.join(SWEEP_PARAMS)}"
        )
    design, n = params.get("design", "fullfact"), params.get("n_samples")
    if design not in DESIGNS:
        raise ParamError(f"design: {design!r} is not one of {', '.join(DESIGNS)}")
    if n is not None and (
        isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SAMPLES
    ):
        raise ParamError(f"n_samples: {n!r} is not allowed; an integer in [1, {MAX_SAMPLES}]")
    seed = params.get("seed")
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32
    ):
        raise ParamError(f"seed: {seed!r} is not allowed; an integer in [0, 2^32)")
    if not isinstance(params.get("seeding", True), bool):
        raise ParamError(f"seeding: {params['seeding']!r} is not allowed; true or false")
    if not isinstance(params.get("fixed") or {}, Mapping):
        raise ParamError(f"fixed: {params['fixed']!r} is not allowed; an object {{factor: value}}")
    if "factor_pack" in (params.get("fixed") or {}):
        raise ParamError("fixed: factor_pack is the sweep's own parameter, not a fixed factor")
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
    if v is not None and (
        isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi
    ):
        raise ParamError(f"{name}: {v!r} is not allowed; a number in [{lo:g}, {hi:g}]")


def deadline_s(text: Any) -> float:
    """The deadline (ISO 8601; no zone = UTC) in epoch seconds; None → +inf."""
    if text is None or text == "":
        return math.inf
    try:
        when = dt.datetime.fromisoformat(str(text))
    except ValueError:
        raise ParamError(
            f"deadline: {text!r} is not an ISO 8601 time, e.g. 2026-11-24T18:00:00Z"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()


def active_settings(params: Mapping[str, Any]) -> active.Settings:
    """The stopping rule and round shape of a sweep (one-shot designs: one round)."""
    budget = params.get("sweep_budget_s")
    return active.Settings(
        mape_target_pct=float(params.get("mape_target_pct") or 10.0),
        batch=int(params.get("batch") or 1),
        degree=int(params.get("degree") or 2),
        max_rounds=MAX_ROUNDS if params.get("design") == "active" else 1,
        budget_s=math.inf if budget is None else float(budget),
        deadline_s=deadline_s(params.get("deadline")),
    )


def plan_sweep(params: Mapping[str, Any], sweep_id: str) -> dict[str, Any]:
    """Checked sweep: the first round's samples, each with its rating plan (ids deterministic), as
    many as the sweep budget pays for; the design's others under "unrated"."""
    _sweep_settings(params)
    pack = load_params_pack(params.get("factor_pack"))
    space = factor_space(params.get("factors") or {}, pack)
    design = params.get("design", "fullfact")
    st = active_settings(params)
    samples = design_samples(
        space, design, params.get("n_samples"), int(params.get("seed") or 0), st.degree
    )
    base = {
        k: params[k]
        for k in ("workload", "workload_text", "profile", "policy", "factor_pack")
        if params.get(k) is not None
    }
    fixed = dict(params.get("fixed") or {})
    clash = sorted(set(fixed) & set(space.names))
    if clash:
        raise ParamError(f"fixed: {', '.join(clash)} also varied in factors")
    spec = plan_from_params({**base, **fixed, **samples[0]}, f"{sweep_id}__s00").spec
    rating_budget_s = float(spec.get("budget_s", math.inf))
    floor_s = max(10.0, float(spec["runlength_s"]) + float(spec.get("trial_overhead_s", 0.0)))
    m, each = active.budget_split(st.budget_s, rating_budget_s, floor_s, len(samples))
    if m == 0:
        raise ParamError(
            f"sweep_budget_s: {st.budget_s:g} s does not pay for one rating's first trial"
        )
    # the D-optimal m, not the chain's first m
    if m < len(samples) and design in ("dopt", "active"):
        cut = design_samples(space, design, m, 0, st.degree)
        samples = cut + [s for s in samples if s not in cut]
    head = {
        "sweep_id": sweep_id,
        "design": design,
        "factors": {k: list(v) for k, v in params["factors"].items()},
        "factor_pack": pack.to_dict() if pack else None,  # the pack as declared: space_of(head)
        "seeding": bool(params.get("seeding", True)),
        "base": {**base, **fixed},
        "mape_target_pct": st.mape_target_pct,
        "batch": st.batch,
        "degree": st.degree,
        "max_rounds": st.max_rounds,
        "sweep_budget_s": finite_or_none(st.budget_s),
        "deadline": params.get("deadline"),
        "deadline_s": finite_or_none(st.deadline_s),
        "rating_budget_s": finite_or_none(rating_budget_s),
        "floor_s": floor_s,
    }
    return {
        **head,
        "samples": sample_items(head, samples[:m], 0, each if math.isfinite(st.budget_s) else None),
        "unrated": samples[m:],
    }


def sample_items(
    head: Mapping[str, Any],
    samples: Sequence[Mapping[str, Any]],
    first: int,
    budget_each_s: float | None,
) -> list[dict[str, Any]]:
    """Samples numbered from `first`, each with its rating plan (budget_s: its share of the
    sweep's)."""
    cap = {} if budget_each_s is None else {"budget_s": float(budget_each_s)}
    return [
        {
            "i": i,
            "sample": dict(s),
            "plan": plan_from_params(
                {**head["base"], **s, **cap}, f"{head['sweep_id']}__s{i:02d}"
            ).to_dict(),
        }
        for i, s in enumerate(samples, start=first)
    ]


def space_of(sweep: Mapping[str, Any]) -> FactorSpace:
    """The factor space of a stored sweep plan (its head): its factors, with its factor pack as it
    was declared when the sweep was planned."""
    pack = sweep.get("factor_pack")
    return factor_space(sweep["factors"], FactorPack.from_dict(pack) if pack else None)


def finite_or_none(x: float | None) -> float | None:
    """x, or None for a missing, infinite or NaN x (strict JSON)."""
    return float(x) if x is not None and math.isfinite(x) else None
