"""Server families of the validity study: true λ* by hand, determinism, the trial-level faults."""
import math

import numpy as np

import pytest

from workbench.measure.families import (
    COLD_START_FACTOR,
    FAMILY_NAMES,
    KNEE_SERVERS,
    ValidityServer,
    family_servers,
    true_region,
)


def test_true_peak_and_region_by_hand():
    # M/M/1, capacity 1000 ops/s, base 2 ms, service 5 ms: R = 2 + 5/(1 − λ/1000)
    # R = 40 → 1 − ρ = 5/38 → λ* = 1000·33/38 = 868.421…; R = 36 → 1000·29/34; R = 44 → 1000·37/42
    s = ValidityServer(capacity_ops_s=1000, base_ms=2, service_ms=5, servers=1, noise=0)
    assert s.true_peak_rate(40) == pytest.approx(1000 * 33 / 38, rel=1e-12)
    assert true_region(s, 40, 0.10) == pytest.approx((1000 * 29 / 34, 1000 * 37 / 42), rel=1e-12)
    # the knee: M/M/16, base 1 ms, service 4 ms: ρ*^16 = 1 − 4/39 = 35/39, ln(35/39) = −0.108214,
    # /16 = −0.0067634 → λ* = 1000·e^−0.0067634 = 993.2595
    k = ValidityServer(capacity_ops_s=1000, base_ms=1, service_ms=4, servers=16, noise=0)
    assert k.true_peak_rate(40) == pytest.approx(993.2595, abs=1e-3)
    assert k.true_mean_ms(993.2595) == pytest.approx(40.0, abs=0.01)


def test_families_are_seeded_and_share_their_servers():
    a, b = family_servers("mm", 5), family_servers("mm", 5)
    assert [s.capacity_ops_s for s in a] == [s.capacity_ops_s for s in b]
    assert [s.measure(300, 60) for s in a] == [s.measure(300, 60) for s in b]
    knee = family_servers("knee", 5)
    assert [s.capacity_ops_s for s in knee] == [s.capacity_ops_s for s in family_servers("mm", 5)]
    assert all(KNEE_SERVERS[0] <= s.servers <= KNEE_SERVERS[1] for s in knee)
    with pytest.raises(ValueError):
        family_servers("nope", 1)
    assert set(FAMILY_NAMES) == {"mm", "knee", "heavy", "cold", "wall"}


def test_cold_start_inflates_only_the_first_trial_at_a_load():
    s = ValidityServer(capacity_ops_s=1000, base_ms=2, service_ms=5, servers=1, noise=0,
                       cold_start_factor=COLD_START_FACTOR)
    first, second = s.measure(500, 60), s.measure(500, 60)
    assert second.mean_ms == pytest.approx(s.true_mean_ms(500))
    assert COLD_START_FACTOR[0] <= first.mean_ms / second.mean_ms <= COLD_START_FACTOR[1]
    assert s.measure(600, 60).mean_ms > s.true_mean_ms(600)      # a new load: cold again


def test_outlier_share_is_as_configured():
    s = ValidityServer(capacity_ops_s=1000, base_ms=2, service_ms=5, servers=1, noise=0, outlier_prob=0.2)
    ratios = [s.measure(500, 60).mean_ms / s.true_mean_ms(500) for _ in range(2000)]
    share = sum(r > 1.0 + 1e-9 for r in ratios) / len(ratios)
    assert share == pytest.approx(0.2, abs=0.03)
    assert max(ratios) <= 3.0 and not any(math.isnan(r) for r in ratios)


def test_wall_is_flat_then_a_wall_and_its_peak_inverts_the_mean():
    from workbench.measure.families import WallServer
    walls = family_servers("wall", 20)
    assert all(isinstance(s, WallServer) for s in walls)
    for s in walls[:5]:
        lam = s.true_peak_rate(40.0)
        assert s.true_mean_ms(lam) == pytest.approx(40.0, rel=1e-6)
        assert s.true_mean_ms(0.8 * lam) < 2.5                     # flat
        assert s.true_mean_ms(0.9 * lam) < 5.0
        assert lam < s.capacity_ops_s < 1.05 * lam                 # the wall: capacity within 5 % of λ*
        lo, hi = true_region(s, 40.0, 0.1)
        assert 0.0005 < (hi - lo) / lam < 0.005                    # the region: 0.05–0.5 % of λ*
    a, b = family_servers("wall", 3), family_servers("wall", 3)
    assert [x.measure(300, 60) for x in a] == [x.measure(300, 60) for x in b]


def test_wall_swing_is_autocorrelated_at_the_edge_and_absent_in_the_flat():
    from workbench.measure.families import WallServer
    kw = dict(capacity_ops_s=1000, base_ms=0.5, service_ms=1, servers=30, noise=0, wall_ms=0.8, seed=3)
    s = WallServer(**kw)
    lam = s.true_peak_rate(40.0)
    flat = [s.measure(0.5 * lam, 60).mean_ms for _ in range(5)]
    assert max(flat) / min(flat) == pytest.approx(1.0)             # no swing in the flat part (noise 0)
    s = WallServer(**kw)
    logs = np.log([s.measure(lam, 60).mean_ms for _ in range(3000)])
    assert 0.15 < logs.std() < 0.35                                # WALL_SWING 0.25 at R_sat
    assert 0.35 < np.corrcoef(logs[:-1], logs[1:])[0, 1] < 0.65     # AR(1), φ 0.5


def test_wall_inflates_the_trial_after_an_overloaded_one_only():
    from workbench.measure.families import WALL_CARRY_OVER, WallServer
    kw = dict(capacity_ops_s=1000, base_ms=0.5, service_ms=1, servers=30, noise=0, wall_ms=0.8, seed=3)
    s = WallServer(**kw)
    first = s.measure(500, 60).mean_ms                 # a fresh load: no first-trial inflation
    assert first == pytest.approx(s.true_mean_ms(500))
    s.measure(1200, 60)                                # overloaded
    ratio = s.measure(500, 60).mean_ms / first
    assert WALL_CARRY_OVER[0] <= ratio <= WALL_CARRY_OVER[1]
    assert s.measure(500, 60).mean_ms == pytest.approx(first)   # one trial only
