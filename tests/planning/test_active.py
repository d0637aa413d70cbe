"""Active surface design: augmentation by prediction variance, the LOO-MAPE stop, budget and deadline,
on simulated surfaces (an exact quadratic with noise, and the simulated server's web family)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.measure.factor_model import family_capacity
from workbench.planning import active
from workbench.planning.design import FactorSpace, Numeric
from workbench.planning.doptimal import _greedy
from workbench.stats.rsm import loo_residuals_bruteforce, mape

SPACE = FactorSpace([Numeric("disks", levels=(1, 2, 3, 4), integer=True),
                     Numeric("threads", levels=(4, 8, 16, 32, 64), scale="log", integer=True)])
GRID = SPACE.grid()


def _web(s):
    return family_capacity("web", {"disks": s["disks"], "threads": s["threads"]})[0]


def _run(surface, st, rating_budget_s=100.0, cost_s=60.0, now_s=0.0):
    """The active loop with every sample rated by `surface`: (rows, decisions)."""
    rows, decisions = [], []
    todo, cap_s = active.start_set(SPACE, GRID, st.degree), rating_budget_s
    for k in range(st.max_rounds):       # a rating costs at most its budget (the controller stops it)
        rows += [{"sample": s, "peak_rate": surface(s), "cost_s": min(cost_s, cap_s)} for s in todo]
        d = active.next_round(SPACE, GRID, rows, k, st, now_s, rating_budget_s, 6.0)
        decisions.append(d)
        if d.done:
            return rows, decisions
        todo, cap_s = d.samples, d.budget_each_s or rating_budget_s
    raise AssertionError("next_round never said done")


def test_the_augmentation_is_the_candidate_of_largest_prediction_variance():
    """det(A + xx') = det(A)(1 + x'A⁻¹x): the greedy D-optimal step (doptimal._greedy) picks the
    candidate of largest d(x), and the determinant grows by exactly 1 + d(x)."""
    sq = active.squares(SPACE, GRID)
    M = active.design_matrix(SPACE, GRID, 2, sq)
    start = [0, 4, 15, 19, 7, 12, 2]
    d = active.prediction_variance(M[start], M)
    free = [i for i in range(len(GRID)) if i not in start]
    best = free[int(np.argmax(d[free]))]
    assert _greedy(M, len(start) + 1, start)[-1] == best
    assert active.augment(SPACE, [GRID[i] for i in start], GRID, 1) == [GRID[best]]
    A = M[start].T @ M[start]
    x = M[best]
    ratio = np.linalg.det(A + np.outer(x, x)) / np.linalg.det(A)
    assert ratio == pytest.approx(1.0 + x @ np.linalg.solve(A, x), rel=1e-6)


def test_the_start_set_is_p_plus_one_distinct_grid_samples():
    for degree, p in ((1, 3), (2, 6)):
        s = active.start_set(SPACE, GRID, degree)
        keys = {tuple(x.values()) for x in s}
        assert len(s) == p + 1 == len(keys) and keys <= {tuple(g.values()) for g in GRID}
    # the four corners are in the D-optimal first-order start (they maximise det M'M)
    corners = {(1, 4), (1, 64), (4, 4), (4, 64)}
    assert corners <= {(s["disks"], s["threads"]) for s in active.start_set(SPACE, GRID, 1, n=4 + 1)}


def test_an_exact_quadratic_with_noise_stops_at_its_target_before_the_grid_ends():
    rng = np.random.default_rng(1)
    noise = {tuple(g.values()): 1 + 0.01 * rng.standard_normal() for g in GRID}

    def surface(s):
        x = SPACE.coded([s])[0]
        return (2000 + 600 * x[0] + 300 * x[1] - 200 * x[0] * x[1] - 250 * x[1] ** 2) * noise[tuple(s.values())]

    rows, ds = _run(surface, active.Settings(mape_target_pct=2.0, batch=1, degree=2, max_rounds=12))
    assert ds[-1].reason.startswith("MAPE target reached") and len(rows) < len(GRID)
    assert ds[0].n_samples == 7 and ds[-1].mape_loo_pct <= 2.0
    # the MAPE the decision used is the brute-force leave-one-out one (n refits)
    samples, y = [r["sample"] for r in rows], np.array([r["peak_rate"] for r in rows])
    M = active.design_matrix(SPACE, samples, 2, active.squares(SPACE, samples))
    assert ds[-1].mape_loo_pct == pytest.approx(mape(y, y - loo_residuals_bruteforce(M, y)))


def test_the_web_surface_grows_until_its_target_or_the_rounds_end():
    """The simulated server's web family over disks × threads (seed 000 Fig. 2's shape): a loose
    target stops early, an unreachable one runs every round; MAPE is recorded each round."""
    loose = _run(_web, active.Settings(mape_target_pct=25.0, batch=2, degree=2, max_rounds=6))[1]
    assert loose[-1].reason.startswith("MAPE target reached") and loose[-1].n_samples < len(GRID)
    rows, tight = _run(_web, active.Settings(mape_target_pct=0.1, batch=2, degree=2, max_rounds=4))
    assert tight[-1].reason == f"all 4 rounds run ({len(rows)} samples)" and len(rows) == 7 + 3 * 2
    assert [d.n_samples for d in tight] == [7, 9, 11, 13] and tight[0].mape_loo_pct is None  # a point with h = 1
    later = [d.mape_loo_pct for d in tight[1:]]
    assert later == sorted(later, reverse=True) and later[-1] > 0.1, later


def test_budget_split_pays_full_budgets_then_the_rest_to_one():
    assert active.budget_split(300.0, 120.0, 6.0, 4) == (2, 120.0)
    assert active.budget_split(100.0, 120.0, 6.0, 4) == (1, 100.0)      # the rest, to one rating
    assert active.budget_split(5.0, 120.0, 6.0, 4) == (0, 0.0)          # not one trial left
    assert active.budget_split(300.0, math.inf, 6.0, 4) == (4, 75.0)    # no cap: even shares
    assert active.budget_split(math.inf, 120.0, 6.0, 3) == (3, 120.0)


def test_budget_end_and_deadline_stop_the_design_and_say_why():
    st = active.Settings(mape_target_pct=0.1, batch=2, degree=1, max_rounds=6, budget_s=400.0)
    rows, ds = _run(_web, st, rating_budget_s=100.0, cost_s=60.0)
    # start 4 × 60 = 240 s; 160 s and 100 s left pay one full budget of 100 each; 40 s left: the rest to one
    assert [d.n_samples for d in ds] == [4, 5, 6, 7] and [d.budget_each_s for d in ds[:3]] == [100.0, 100.0, 40.0]
    assert ds[-1].reason == "budget end: 400 s of 400 s spent after 7 samples"
    assert sum(r["cost_s"] for r in rows) <= st.budget_s
    late = active.next_round(SPACE, GRID, rows[:4], 0, active.Settings(1.0, degree=1, deadline_s=100.0), 100.0, 100.0, 6.0)
    assert late.done and late.reason == "deadline passed after 4 samples" and late.samples == []
