"""Load sequences of each picker on deterministic servers; Safeguarded vs Binsearch."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import mm1

from workbench.controller.decide import find_peak
from workbench.controller.pickers import two_point_fit
from workbench.controller.policy import LinearPolicy, LocalPolicy
from workbench.controller.spec import RatingSpec
from workbench.controller.trial import TrialResult
from workbench.measure.simulated import SimulatedServer


def loads_of(result):
    seen = []
    for t in result.trials:
        if t.load_ops_s not in seen:
            seen.append(t.load_ops_s)
    return seen


def test_binsearch_doubles_from_50_then_bisects():
    r = find_peak(RatingSpec(policy="binsearch"), mm1())
    assert loads_of(r) == [50, 100, 200, 400, 800, 1600, 1200, 1000, 900, 950]
    assert r.converged and r.peak_rate == 950 and r.bracket == (900, 1000)
    assert all(sum(1 for t in r.trials if t.load_ops_s == x) == 2 for x in loads_of(r))


def test_binsearch_first_load_saturated_halves():
    r = find_peak(RatingSpec(policy="binsearch", first_load=4000), mm1())
    assert loads_of(r)[:3] == [4000, 2000, 1000]


def trials_per_load(result):
    return [sum(1 for t in result.trials if t.load_ops_s == x) for x in loads_of(result)]


def test_linear_strawman_fixed_trials_stops_at_first_saturated_load():
    """§3.1 strawman (default linear_trials=10): first_load, +step, …, exactly t trials at every
    load, stop at the first saturated load; λ* = the last unsaturated load."""
    srv = SimulatedServer(capacity_ops_s=1000, base_ms=1, service_ms=5, servers=1, noise=0.0, seed=3)
    true = srv.true_peak_rate(40.0)                      # 1000·(1 − 5/39) ≈ 871.8
    r = find_peak(RatingSpec(policy=LinearPolicy(step_ops_s=100)), srv.measure)
    assert loads_of(r) == [50, 150, 250, 350, 450, 550, 650, 750, 850, 950]
    assert trials_per_load(r) == [10] * 10
    assert r.bracket == (850, 950) and r.peak_rate == 850 and r.bracket[0] <= true <= r.bracket[1]
    assert r.converged and "strawman" in r.reason and r.n_trials == 100 and r.cost_s == 100 * 180
    # t is a parameter (Fig. 3 uses t = 10); the runlength stays fixed even with runlength_policy="adaptive"
    r3 = find_peak(RatingSpec(policy=LinearPolicy(step_ops_s=300, trials=3),
                              runlength_policy="adaptive"), srv.measure)
    assert loads_of(r3) == [50, 350, 650, 950] and trials_per_load(r3) == [3] * 4
    assert {t.runlength_s for t in r3.trials} == {180.0} and r3.peak_rate == 650
    # first load already saturated: step down by the increment until a load is unsaturated
    rd = find_peak(RatingSpec(policy=LinearPolicy(step_ops_s=150), first_load=1300), mm1())
    assert loads_of(rd) == [1300, 1150, 1000, 850] and rd.bracket == (850, 1000) and rd.converged


def test_linear_strawman_invalid_trials_rerun_and_do_not_count():
    calls = []

    def measure(load, r):
        calls.append(load)
        bad = len(calls) % 4 == 0
        m = 2.0 / (1 - load / 1000) if load < 999 else 1e4
        return TrialResult(mean_ms=m, p95_ms=3 * m, achieved_rate=load, valid=not bad)
    r = find_peak(RatingSpec(policy=LinearPolicy(step_ops_s=400, trials=5)), measure)
    valid = [sum(1 for t in r.trials if t.load_ops_s == x and t.valid) for x in loads_of(r)]
    assert loads_of(r) == [50, 450, 850, 1250] and valid == [5] * 4 and r.n_invalid > 0


def test_linear_section_5_2_fixed_increment_then_bisection():
    r = find_peak(RatingSpec(policy=LinearPolicy(step_ops_s=150, trials=None)), mm1())
    assert loads_of(r)[:7] == [50, 200, 350, 500, 650, 800, 950]
    assert trials_per_load(r)[0] == 2            # Algorithm 2's adaptive count, not a fixed t
    r = find_peak(RatingSpec(policy=LinearPolicy(step_ops_s=300, trials=None)), mm1())
    seq = loads_of(r)
    assert seq[:4] == [50, 350, 650, 950] or seq[:5] == [50, 350, 650, 950, 1250]


def test_two_point_fit_forms():
    # mm1: 1/R = a − bλ exactly for R = 2/(1 − λ/1000)
    assert two_point_fit((100, 2 / 0.9), (500, 4.0), 40, "mm1") == pytest.approx(950)
    # hyperbolic R = a + b/λ through (50, 10) and (100, 8): b = 200, a = 6; λ = b/(R_sat − a)
    assert two_point_fit((50, 10), (100, 8), 40, "hyperbolic") == pytest.approx(200 / 34)
    assert np.isnan(two_point_fit((100, 5), (100, 6), 40, "mm1"))
    with pytest.raises(ValueError):
        two_point_fit((1, 1), (2, 2), 40, "cubic")


def test_model_guided_two_point_prediction():
    r = find_peak(RatingSpec(policy="model"), mm1())
    seq = loads_of(r)
    # Algorithm 4: 50, then ×2 (unsaturated), then the two-point prediction, exact for M/M/1
    assert seq[:2] == [50, 100]
    assert seq[2] == pytest.approx(two_point_fit((100, 2 / 0.9), (50, 2 / 0.95), 40, "mm1"))
    assert seq[2] == pytest.approx(950) and r.converged and len(seq) == 4
    assert seq[3] == pytest.approx(1187.5)      # 1.25 × the peak: the λ* interval's upper end (issue 30)


def test_model_guided_hyperbolic_form_of_the_000_text():
    r = find_peak(RatingSpec(policy="model", model_form="hyperbolic", max_loads=8), mm1())
    seq = loads_of(r)
    m50, m100 = 2 / 0.95, 2 / 0.9
    pred = two_point_fit((100, m100), (50, m50), 40, "hyperbolic")
    # R = a + b/λ has the wrong curvature: its prediction is unusable (≤ 0) → fallback ×2
    assert seq[:2] == [50, 100]
    assert (pred > 0 and seq[2] == pytest.approx(pred)) or seq[2] == 200


def test_model_first_load_saturated_halves():
    r = find_peak(RatingSpec(policy="model", first_load=3000), mm1())
    assert loads_of(r)[:2] == [3000, 1500]


def test_seeding_brackets_around_the_seed():
    r = find_peak(RatingSpec(policy="binsearch", seed_load=900), mm1())
    assert loads_of(r) == [900, pytest.approx(990), pytest.approx(945)]
    up = find_peak(RatingSpec(policy="binsearch", seed_load=1200), mm1())
    seq = loads_of(up)
    assert seq[:4] == [1200, pytest.approx(1200 / 1.1), pytest.approx(1000), pytest.approx(1200 / 1.4)]
    assert up.converged and up.bracket[0] <= 950 <= up.bracket[1]
    lin = find_peak(RatingSpec(policy=LinearPolicy(step_ops_s=50), seed_load=800), mm1())
    assert loads_of(lin)[:3] == [800, 850, 900]


def test_seeding_is_cheaper_than_a_cold_start():
    cold = find_peak(RatingSpec(policy="binsearch"), mm1())
    warm = find_peak(RatingSpec(policy="binsearch", seed_load=900), mm1())
    assert warm.cost_s < cold.cost_s / 3


def test_safeguarded_uses_the_model_inside_the_bracket():
    # R_sat = 12 ms → λ* = 1000·(1 − 2/12); once a load on the curve reaches R_sat/2 the
    # M/M/1 fit through the two loads nearest R_sat is exact
    # (galloping opening ×4, then the skipped doubling 1600: Binsearch's bracket [800, 1600])
    r = find_peak(RatingSpec(policy="safeguarded", r_sat_ms=12), mm1())
    assert loads_of(r) == [50, 200, 800, 3200, 1600, pytest.approx(1000 * (1 - 2 / 12))]
    # with R_sat = 40 the loads tested before the cliff are all on the flat part (< R_sat/2):
    # Binsearch steps until one is near enough, then the model lands on λ*
    r = find_peak(RatingSpec(policy="safeguarded"), mm1())
    assert loads_of(r) == [50, 200, 800, 3200, 1600, 1200, 1000, 900, pytest.approx(950)]
    # the opening without the gallop is Binsearch's (seeded searches use the seeded opening)
    b = find_peak(RatingSpec(policy="binsearch"), mm1())
    assert len(loads_of(r)) == len(loads_of(b)) - 1


def _random_server(i, noise):
    rng = np.random.default_rng(777 + i)
    return SimulatedServer(capacity_ops_s=float(np.exp(rng.uniform(np.log(100), np.log(20000)))),
                           base_ms=float(rng.uniform(0.2, 5)), service_ms=float(rng.uniform(1, 20)),
                           servers=float(rng.choice([1, 1, 2, 4, 8, 16])), noise=noise, seed=i)


def test_safeguarded_at_most_two_loads_more_than_binsearch_on_500_servers():
    """Noise-free: a hard bound (the shadow-Binsearch argument in pickers.Safeguarded)."""
    extra, cost = [], [0.0, 0.0]
    for i in range(500):
        b = find_peak(RatingSpec(policy="binsearch"), _random_server(i, 0.0).measure)
        s = find_peak(RatingSpec(policy="safeguarded"), _random_server(i, 0.0).measure)
        assert s.converged
        extra.append(s.n_loads - b.n_loads)
        cost[0] += b.cost_s
        cost[1] += s.cost_s
    assert max(extra) <= 2, sorted(extra)[-10:]
    assert np.mean(extra) < 0 and cost[1] < cost[0]


def test_safeguarded_vs_binsearch_on_500_noisy_servers():
    """Noisy: runs diverge trial by trial, so the bound holds statistically."""
    extra, nonconv, cost = [], 0, [0.0, 0.0]
    for i in range(500):
        b = find_peak(RatingSpec(policy="binsearch"), _random_server(i, 0.04).measure)
        s = find_peak(RatingSpec(policy="safeguarded"), _random_server(i, 0.04).measure)
        nonconv += not s.converged
        extra.append(s.n_loads - b.n_loads)
        cost[0] += b.cost_s
        cost[1] += s.cost_s
    extra = np.array(extra)
    assert nonconv == 0
    assert np.mean(extra <= 2) >= 0.95 and extra.mean() < -0.5
    assert cost[1] < 0.92 * cost[0]


@pytest.mark.parametrize("policy,linear_trials", [("binsearch", None), ("linear", 10), ("linear", None),
                                                  ("model", None), ("safeguarded", None)])
def test_noise_free_bracket_always_contains_true_peak(policy, linear_trials):
    for i in range(60):
        srv = _random_server(i, 0.0)
        true = srv.true_peak_rate(40.0)
        step = max(true / 12, 1.0)
        pol = LinearPolicy(step_ops_s=step, trials=linear_trials) if policy == "linear" else policy
        r = find_peak(RatingSpec(policy=pol, max_loads=80), srv.measure)
        assert r.bracket[0] <= true <= r.bracket[1], (i, r.bracket, true)
        assert r.peak_rate_ci[0] <= true <= r.peak_rate_ci[1]
        if policy == "linear" and linear_trials:
            # the strawman claims only λ* within one increment (the last unsaturated load)
            assert r.converged and r.bracket[1] - r.bracket[0] <= step * (1 + 1e-9)
            assert r.peak_rate == r.bracket[0] and true - step <= r.peak_rate <= true
        elif r.converged:
            assert 36 <= srv.true_mean_ms(r.peak_rate) <= 44


def test_safeguarded_never_leaves_the_bracket_on_a_hostile_curve():
    """A curve far from any model (flat, then a cliff): Safeguarded still converges."""
    def measure(load, r):
        m = 5.0 if load < 700 else 5.0 + (load - 700) * 0.5
        return TrialResult(mean_ms=m, p95_ms=2 * m, achieved_rate=load)
    r = find_peak(RatingSpec(policy="safeguarded"), measure)
    assert r.converged and 36 <= 5 + (r.peak_rate - 700) * 0.5 <= 44
    b = find_peak(RatingSpec(policy="binsearch"), measure)
    assert r.n_loads <= b.n_loads + 2


def _summary(load: float, order: int, mean_ms: float, side: int):
    from workbench.controller.state import LoadStatus, LoadSummary
    from workbench.stats.intervals import MeanCI
    ci = MeanCI(mean_ms, 0.9 * mean_ms, 1.1 * mean_ms, 3, 0.1 * mean_ms, 0.1 * mean_ms)
    return LoadSummary(load=load, order=order, n=3, mean=mean_ms, ci=ci, lat=mean_ms,
                       status=LoadStatus.BELOW if side < 0 else LoadStatus.ABOVE, side=side, confident=True)


def test_safeguarded_survives_a_later_load_that_contradicts_the_first_bracket():
    """Noise made 800 ops/s saturated after the bracket (1000, 2000): the prefix ending at 800 has
    no bracket. That prefix is no progress (its width repeats), so the picker bisects the final
    bracket (400, 800) instead of raising (the nightly DAG's crash in ee1570d's parent)."""
    from workbench.controller.safeguarded import Safeguarded
    from workbench.controller.state import SearchState
    loads = (_summary(1000, 0, 5.0, -1), _summary(2000, 1, 300.0, +1), _summary(800, 2, 60.0, +1),
             _summary(400, 3, 2.0, -1))
    st = SearchState(r_sat_ms=40.0, loads=loads, lo=loads[3], hi=loads[2], start=1000, seeded=True)
    picker = Safeguarded()
    lo0, hi0, after, widths = picker._bracket_phase(st)
    assert (lo0.load, hi0.load, [s.load for s in after]) == (1000, 2000, [800, 400])
    assert widths == [1000, 1000, 400]
    load, why = picker.next_load(st)
    assert 400 < load < 800, (load, why)
