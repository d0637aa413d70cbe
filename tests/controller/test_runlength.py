"""The runlength rule: unit variance, the planned runlength, adaptive runlengths."""
from __future__ import annotations

import pytest

from workbench.controller.decide import find_peak
from workbench.controller.runlength import next_runlength, plan_runlength, unit_variance
from workbench.controller.spec import RatingSpec
from workbench.measure.simulated import SimulatedServer


def test_unit_variance_and_plan_hand_case():
    assert unit_variance([10, 12], [100, 100]) == pytest.approx(200)   # Var = 2, × r = 100
    # κ² = 200·… : need q²κ²/h² total runlength; with overhead 0 longer runs always win → 1 trial of r_max?
    p = plan_runlength(kappa2=3600, w_sum=360, n=2, target_half_width=2.0, confidence=0.95,
                       overhead_s=0, r_min=30, r_max=900)
    assert p.feasible and p.runlength_s >= 30 and p.more_trials >= 1
    # cost of the plan really meets the target: q(n+k)²κ²/(W + k r) ≤ h²
    from workbench.stats.intervals import quantile
    q = quantile(0.95, 2 + p.more_trials)
    assert q * q * 3600 / (360 + p.more_trials * p.runlength_s) <= 4.0 + 1e-9


def test_plan_sweet_spot_overhead_trades_trials_for_length():
    cheap = plan_runlength(3600, 360, 2, 2.0, 0.95, overhead_s=0, r_min=30, r_max=900, max_more=30)
    dear = plan_runlength(3600, 360, 2, 2.0, 0.95, overhead_s=600, r_min=30, r_max=900, max_more=30)
    assert dear.more_trials <= cheap.more_trials and dear.runlength_s >= cheap.runlength_s


def test_plan_infeasible_and_degenerate():
    p = plan_runlength(1e9, 0, 2, 0.01, 0.95, 0, 30, 60, max_more=3)
    assert not p.feasible and p.runlength_s == 60
    assert plan_runlength(0.0, 100, 2, 1.0, 0.95, 0, 30, 60).runlength_s == 30


def test_next_runlength_fixed_and_adaptive():
    fixed = RatingSpec(policy="binsearch")
    assert next_runlength(fixed, [40, 41], [180, 180]).runlength_s == 180
    ad = RatingSpec(policy="binsearch", runlength_policy="adaptive", trial_overhead_s=30)
    assert next_runlength(ad, [40], [180]).runlength_s == 180          # variance unknown yet
    r = next_runlength(ad, [38, 42], [180, 180])
    assert 30 <= r.runlength_s <= 900


def test_adaptive_runlength_search_converges_on_a_noisy_server():
    spec = RatingSpec(runlength_policy="adaptive", trial_overhead_s=30, policy="safeguarded")
    r = find_peak(spec, SimulatedServer(seed=2, noise=0.05).measure)
    assert r.converged
    assert len({t.runlength_s for t in r.trials}) > 1
    assert r.cost_s == pytest.approx(sum(t.runlength_s for t in r.trials) + 30 * r.n_trials)
