"""Dry-run planner: expected cost / trials / convergence of a spec or a whole sweep on simulated servers."""
import dataclasses
import math
from types import SimpleNamespace

import pytest

import workbench.planning.dryrun as sim
from workbench.measure.factor_model import surface_grid
from workbench.measure.simulated import SimulatedServer
from workbench.planning.dryrun import plan


# ---------------------------------------------------------------- wiring, with a stand-in find_peak
@dataclasses.dataclass(frozen=True)
class _Spec:
    r_sat_ms: float = 40.0
    l_sat_ms: float | None = 2000.0
    seed_load: float | None = None


def _fake_find_peak(spec, measure):
    """One 60 s trial per load: doubling from 50 (or the seed) past the true peak, then report it exactly."""
    srv = measure.__self__
    true = srv.true_peak_rate(spec.r_sat_ms, spec.l_sat_ms)
    load, trials = (spec.seed_load or 50.0), []
    while True:
        trials.append(measure(load, 60.0))
        if load >= true:
            break
        load *= 2
    return SimpleNamespace(peak_rate=true, converged=True, trials=trials, cost_s=60.0 * len(trials),
                           n_trials=len(trials), n_loads=len(trials))


def test_plan_sweep_wiring_and_seeding(monkeypatch):
    monkeypatch.setattr(sim, "_find_peak", lambda: _fake_find_peak)
    grid = surface_grid()
    plain = plan(_Spec(), grid, family="db", reps=2, seed=3)
    seeded = plan(_Spec(), grid, family="db", reps=2, seed=3, seeding=True)
    assert plain["n_runs"] == seeded["n_runs"] == 64
    assert plain["convergence_rate"] == 1.0 and plain["non_converged"] == 0
    assert plain["expected_cost_s"] == pytest.approx(60.0 * plain["expected_trials"])
    # seeding from the nearest finished sample starts each search near its peak: far fewer loads
    assert seeded["expected_trials"] < 0.6 * plain["expected_trials"]
    assert len(seeded["per_sample_cost_s"]) == 32
    assert plain["median_rel_error"] == 0.0
    with pytest.raises(ValueError):
        plan(_Spec(), grid, reps=1)  # sweep form needs family=


def test_plan_servers_forms(monkeypatch):
    monkeypatch.setattr(sim, "_find_peak", lambda: _fake_find_peak)
    one = plan(_Spec(), SimulatedServer(capacity_ops_s=800, seed=1), reps=3)
    assert one["n_runs"] == 3 and one["cost_s"]["mean"] == one["expected_cost_s"]
    two = plan(_Spec(), [SimulatedServer(capacity_ops_s=800), SimulatedServer(capacity_ops_s=8000)], reps=2)
    assert two["n_runs"] == 4 and two["expected_trials"] > one["expected_trials"]
    fac = plan(_Spec(), lambda rep: SimulatedServer(capacity_ops_s=400, seed=rep), reps=4)
    assert fac["n_runs"] == 4
    with pytest.raises(ValueError):
        plan(_Spec(), SimulatedServer(), reps=0)


# ---------------------------------------------------------------- with the real controller
def test_plan_real_controller_sane_numbers():
    from workbench.controller.spec import RatingSpec

    spec = RatingSpec(policy="binsearch")
    out = plan(spec, SimulatedServer(capacity_ops_s=1000, base_ms=2.0, service_ms=5.0, noise=0.04), reps=6, seed=1)
    assert out["n_runs"] == 6
    assert 0.0 <= out["convergence_rate"] <= 1.0
    assert out["convergence_rate"] >= 5 / 6
    assert out["expected_trials"] >= 2 and out["expected_loads"] >= 2
    # fixed runlength, no overhead: cost = trials x runlength
    assert out["expected_cost_s"] == pytest.approx(out["expected_trials"] * spec.runlength_s)
    assert out["cost_s"]["p10"] <= out["cost_s"]["p50"] <= out["cost_s"]["p90"]
    assert out["median_rel_error"] < 0.15  # λ̂ near the true λ* (peak region ±10% in R)
    assert all(math.isfinite(r["peak_rate"]) for r in out["runs"] if r["converged"])


def test_plan_real_sweep_seeding_cheaper():
    from workbench.controller.spec import RatingSpec

    grid = surface_grid(disks=(1, 2), threads=(4, 8, 16, 32))
    spec = RatingSpec(policy="binsearch")
    # six repetitions: one sweep's cost swings ±10 % with the noise, more than seeding saves
    plain = plan(spec, grid, family="mail", reps=6, seed=2)
    seeded = plan(spec, grid, family="mail", reps=6, seed=2, seeding=True)
    assert plain["n_runs"] == seeded["n_runs"] == 48
    assert seeded["expected_cost_s"] < 0.95 * plain["expected_cost_s"]
