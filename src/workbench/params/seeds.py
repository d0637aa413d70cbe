"""A rating's seed load (seed 000 §5.4: start the search near the peak rate already known): set on
its plan, or the λ* of the newest converged rating of the same configuration in the store."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from workbench.config.external import server_key
from workbench.config.factors import BY_NAME
from workbench.params.plan import RatingPlan


def seeded(plan: RatingPlan, seed_load: float | None, seed_trials: int | None = None) -> RatingPlan:
    """The plan with a seed load (seed 000 §5.4) unless it already has one; `seed_trials`: a fixed
    number of valid trials there before the load is classified (RatingSpec.seed_trials)."""
    if (
        seed_load is None
        or not math.isfinite(seed_load)
        or seed_load <= 0
        or plan.spec.get("seed_load")
    ):
        return plan
    extra = {"seed_trials": int(seed_trials)} if seed_trials else {}
    return dataclasses.replace(plan, spec={**plan.spec, "seed_load": float(seed_load), **extra})


def history_seed(store: Any, plan: RatingPlan) -> float | None:
    """λ* of the newest converged rating in the store with this workload and these factors (none
    with a factor pack: the store's ratings table does not tell its levels apart)."""
    if plan.factor_pack:
        return None
    df = store.ratings_df()
    if df is None or len(df) == 0:
        return None
    rows = df[
        (df["workload"] == plan.workload)
        & (df["converged"] == True)  # noqa: E712
        & (df["server"] == server_key(plan.external))
        & (df["workload_text"] == plan.workload_text)
    ]
    for k, v in plan.factors.items():
        if k in rows.columns and not BY_NAME[k].external:
            rows = rows[rows[k] == v]
    # no profile sets it (nfs_version): unset = default
    for f in (f for f in BY_NAME.values() if f.external):
        want = plan.factors.get(f.name, f.default)
        rows = rows[rows.reindex(columns=[f.name])[f.name].astype(object).fillna(f.default) == want]
    rows = rows[rows["rating_id"] != plan.rating_id]
    if len(rows) == 0:
        return None
    if "finished_unix" in rows.columns:
        rows = rows.sort_values("finished_unix")
    return float(rows.iloc[-1]["peak_rate"])
