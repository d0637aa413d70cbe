"""Active surface design (issue 17): a small D-optimal start, then one batch of samples a round,
each the candidate that most improves the model, until the leave-one-out MAPE reaches a target or
the sweep's budget, deadline or rounds end. Pure: a function of the finished samples and the clock
given.

* the model is the RSM model of seed 000 §5.5 (``workbench.stats.rsm``) of degree 1 or 2; a factor
  seen at < 3 levels gets no square (it would be aliased with the intercept);
* augmentation (Myers & Montgomery 1995, §8.2; Fedorov 1972): adding x to a design with information
  A = M'M gives det(A + x x') = det(A) (1 + x' A⁻¹ x) (matrix determinant lemma), so the D-optimal
  augmentation is the candidate of largest prediction variance d(x) = x' A⁻¹ x; a tiny ridge keeps A
  invertible while the design is still short of p points (as ``doptimal._greedy`` does);
* the stopping value is the LOO MAPE of the fit, 100/n Σ |e_i / (1 - h_ii)| / |y_i| (PRESS
  residuals).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from workbench.planning.design import FactorSpace, Sample
from workbench.planning.doptimal import _fedorov, d_optimal
from workbench.stats.rsm import QuadraticModel, fit_quadratic, model_matrix

RIDGE = 1e-6


def squares(space: FactorSpace, samples: Sequence[Sample]) -> list[bool]:
    """Which numeric factors get a square: those the samples show at ≥ 3 levels."""
    return [len({s[f.name] for s in samples}) >= 3 for f in space.numeric]


def design_matrix(
    space: FactorSpace, samples: Sequence[Sample], degree: int, sq: Sequence[bool]
) -> np.ndarray:
    """The RSM model matrix of natural-unit samples (coded numeric factors, dummy columns)."""
    return model_matrix(
        space.coded(samples),
        degree,
        space.dummies(samples) if space.categorical else None,
        squares=sq,
    )[0]


def surface_model(
    space: FactorSpace, samples: Sequence[Sample], y: ArrayLike, degree: int = 2
) -> QuadraticModel:
    """Least-squares RSM fit of y over the samples (the map_surface model)."""
    return fit_quadratic(
        space.coded(samples),
        y,
        degree=degree,
        squares=squares(space, samples),
        dummies=space.dummies(samples) if space.categorical else None,
        names=[f.name for f in space.numeric],
        dummy_names=space.dummy_names() if space.categorical else None,
    )


def at_slice(model: QuadraticModel, space: FactorSpace) -> Any:
    """The model with the categorical factors at their first levels (the plots' slice, as
    pipeline.sweep.coder): predict(X) from the coded numeric columns alone."""
    if not space.categorical:
        return model
    d = space.dummies([{f.name: f.levels[0] for f in space.categorical}])
    return SimpleNamespace(
        predict=lambda X: model.predict(X, np.repeat(d, len(np.atleast_2d(X)), axis=0))
    )


def loo_mape_pct(
    space: FactorSpace, samples: Sequence[Sample], y: Sequence[float], degree: int = 2
) -> float:
    """LOO MAPE (%) of the fit; NaN while some point is needed to fit (n ≤ rank)."""
    if len(samples) < 2:
        return math.nan
    return surface_model(space, samples, y, degree).loo_mape()


def prediction_variance(
    design: np.ndarray, candidates: np.ndarray, ridge: float = RIDGE
) -> np.ndarray:
    """d(x) = x' (M'M + ridge·I)⁻¹ x for each candidate row x (scaled prediction variance,
    σ² = 1)."""
    A = design.T @ design + ridge * np.eye(design.shape[1])
    return np.einsum("ij,ij->i", candidates @ np.linalg.inv(A), candidates)


def n_params(space: FactorSpace, grid: Sequence[Sample], degree: int) -> int:
    return design_matrix(space, grid[:1], degree, squares(space, grid)).shape[1]


def start_set(
    space: FactorSpace, grid: Sequence[Sample], degree: int, n: int | None = None
) -> list[dict]:
    """The D-optimal start: n (default p + 1, the fewest with a defined LOO MAPE) of the grid."""
    p = n_params(space, grid, degree)
    n = min(len(grid), n if n is not None else p + 1)
    M = design_matrix(space, grid, degree, squares(space, grid))
    if n < p:  # short of the terms (a small budget): det M'M = 0, greedy with the ridge
        return [dict(grid[i]) for i in _augment_indices(M, [], n)]
    if degree == 2 and not space.categorical and all(squares(space, grid)):
        return d_optimal(space, n, candidates=grid).samples  # pydoe + Fedorov exchange
    # a model pydoe cannot build (degree 1, 2-level factors, categorical ones): greedy + Fedorov
    # exchange
    return [dict(grid[i]) for i in _fedorov(M, n, _augment_indices(M, [], n))]


def _augment_indices(M: np.ndarray, chosen: list[int], k: int) -> list[int]:
    out = list(chosen)
    for _ in range(k):
        free = [i for i in range(len(M)) if i not in out]
        if not free:
            break
        d = prediction_variance(M[out] if out else np.zeros((0, M.shape[1])), M[free])
        out.append(free[int(np.argmax(d))])
    return out[len(chosen) :]


def augment(
    space: FactorSpace, done: Sequence[Sample], grid: Sequence[Sample], k: int, degree: int = 2
) -> list[dict]:
    """k grid samples added one at a time, each of largest d(x) given the design so far (greedy
    D-optimal)."""
    key = {tuple(s[n] for n in space.names): i for i, s in enumerate(grid)}
    chosen = [key[tuple(s[n] for n in space.names)] for s in done]
    M = design_matrix(space, grid, degree, squares(space, grid))
    return [dict(grid[i]) for i in _augment_indices(M, chosen, k)]


# ----------------------------------------------------------------------- budget and stopping
def budget_split(
    remaining_s: float, rating_budget_s: float, floor_s: float, wanted: int
) -> tuple[int, float]:
    """(m, each_s): how many of `wanted` ratings the remaining sweep budget pays for, and each one's
    budget. A rating costs at most its own budget (the controller stops it there); one with no cap
    gets an even share. When not even one full budget is left but one trial (floor_s) is, the last
    rating gets the rest."""
    if not math.isfinite(remaining_s):
        return wanted, rating_budget_s
    unit = rating_budget_s if math.isfinite(rating_budget_s) else floor_s
    m = max(0, min(wanted, int(remaining_s // unit))) if unit > 0 else wanted
    if m == 0 and wanted and remaining_s >= floor_s:
        m = 1
    return m, (min(rating_budget_s, remaining_s / m) if m else 0.0)


def spent_s(rows: Sequence[Mapping[str, Any]]) -> float:
    """Σ cost of the rated samples in the controller's account (cost_spec_s: runlengths + trial
    overheads, what a rating's budget_s caps; cost_s where it is not given)."""
    return sum(float(r.get("cost_spec_s", r.get("cost_s")) or 0.0) for r in rows)


@dataclass(frozen=True)
class Settings:
    """The active design's stopping rule and round shape."""

    mape_target_pct: float = 10.0
    batch: int = 1
    degree: int = 2
    max_rounds: int = 6
    budget_s: float = math.inf  # Σ rating cost of the sweep in the controller's account (spent_s)
    deadline_s: float = math.inf  # epoch seconds: no rating starts, no round is planned after it


@dataclass(frozen=True)
class Round:
    """The decision after a round: done (with why) or the next round's samples."""

    done: bool
    reason: str
    n_samples: int
    mape_loo_pct: float | None
    samples: list[dict] = field(default_factory=list)
    budget_each_s: float | None = None


def next_round(
    space: FactorSpace,
    grid: Sequence[Sample],
    rows: Sequence[Mapping[str, Any]],
    k: int,
    st: Settings,
    now_s: float,
    rating_budget_s: float,
    floor_s: float,
) -> Round:
    """After round k (rows: the rated samples, each with sample, peak_rate, cost_spec_s): stop or go
    on."""
    samples = [r["sample"] for r in rows]
    y = [float(r["peak_rate"]) for r in rows]
    m = loo_mape_pct(space, samples, y, st.degree)
    mape = m if math.isfinite(m) else None
    n = len(rows)

    def stop(why: str) -> Round:
        return Round(True, why, n, mape)

    if mape is not None and mape <= st.mape_target_pct:
        return stop(
            f"MAPE target reached: LOO MAPE {mape:.3g} % ≤ {st.mape_target_pct:g} % with {n} "
            "samples"
        )
    if now_s >= st.deadline_s:
        return stop(f"deadline passed after {n} samples")
    left = len(grid) - len({tuple(s[f] for f in space.names) for s in samples})
    if left <= 0:
        return stop(f"every one of the {len(grid)} grid samples rated")
    if k + 1 >= st.max_rounds:
        return stop(f"all {st.max_rounds} rounds run ({n} samples)")
    spent = spent_s(rows)
    take, each = budget_split(st.budget_s - spent, rating_budget_s, floor_s, min(st.batch, left))
    if take == 0:
        return stop(f"budget end: {spent:.0f} s of {st.budget_s:g} s spent after {n} samples")
    why = (
        "LOO MAPE undefined (n ≤ terms)"
        if mape is None
        else f"LOO MAPE {mape:.3g} % > {st.mape_target_pct:g} %"
    )
    return Round(
        False,
        why,
        n,
        mape,
        augment(space, samples, grid, take, st.degree),
        each if math.isfinite(st.budget_s) else None,
    )
