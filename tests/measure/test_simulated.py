"""SimulatedServer: determinism, noise trends (seed 000 Figs. 4-5), true peak, factor interactions (Fig. 2)."""
import math

import numpy as np
import pytest
from scipy import optimize, stats

from workbench.controller.trial import TrialResult
from workbench.measure.factor_model import FAMILIES, family_capacity, surface_grid
from workbench.measure.simulated import SimulatedServer


def _means(s, load, r, n):
    return np.array([s.measure(load, r).mean_ms for _ in range(n)])


def test_deterministic_by_seed_and_call_sequence():
    calls = [(100, 30), (500, 60), (900, 10), (1200, 5), (800, 120)]
    a = [SimulatedServer(seed=7, heavy_tail=True, drift_ms_per_s=0.01).measure(*c) for c in calls]
    s1 = SimulatedServer(seed=7, heavy_tail=True, drift_ms_per_s=0.01)
    s2 = SimulatedServer(seed=7, heavy_tail=True, drift_ms_per_s=0.01)
    r1 = [s1.measure(*c) for c in calls]
    r2 = [s2.measure(*c) for c in calls]
    assert r1 == r2
    assert a[0] == r1[0]  # the first call depends only on the seed
    r3 = [SimulatedServer(seed=8).measure(*c) for c in calls]
    assert [t.mean_ms for t in r3] != [t.mean_ms for t in r1]
    # a fresh copy via with_seed reproduces the original
    s3 = SimulatedServer(seed=1).with_seed(7)
    assert s3.seed == 7 and s3.clock_s == 0.0


def test_noise_free_gives_exact_model_values():
    s = SimulatedServer(capacity_ops_s=800, base_ms=1.5, service_ms=6.0, noise=0.0, seed=3)
    for load in (10, 200, 500, 700, 790):
        t = s.measure(load, 60)
        assert isinstance(t, TrialResult) and t.valid
        assert t.mean_ms == pytest.approx(s.true_mean_ms(load), rel=1e-12)
        assert t.p95_ms == pytest.approx(s.true_p95_ms(load), rel=1e-12)
        assert t.achieved_rate == pytest.approx(load)
        assert t.load_ops_s == load and t.runlength_s == 60
    # M/M/1 (m = 1) closed forms: R = base + S/(1-rho), p95 = base + ln(20) S/(1-rho)
    m1 = SimulatedServer(capacity_ops_s=100, base_ms=0.0, service_ms=10.0, noise=0.0)
    assert m1.servers == 1.0
    assert m1.true_mean_ms(50) == pytest.approx(20.0)
    assert m1.true_p95_ms(50) == pytest.approx(20.0 * math.log(20))
    assert math.isinf(m1.true_mean_ms(100))


def test_mean_monotone_and_overload_bounded_by_transient():
    s = SimulatedServer(noise=0.0)
    loads = np.linspace(10, 2000, 200)
    r = [s.measure(x, 30).mean_ms for x in loads]
    assert all(b >= a for a, b in zip(r, r[1:]))
    over = s.measure(1500, 30)
    assert over.achieved_rate == pytest.approx(1000.0)
    assert math.isfinite(over.mean_ms) and over.mean_ms > 1000


def test_true_peak_rate_solves_threshold():
    for seed, (cap, base, svc) in enumerate([(1000, 2, 5), (250, 1, 8), (3000, 0.5, 2), (90, 3, 12)]):
        s = SimulatedServer(capacity_ops_s=cap, base_ms=base, service_ms=svc, seed=seed)
        lam = s.true_peak_rate(40.0)
        assert 0 < lam < cap
        assert s.true_mean_ms(lam) == pytest.approx(40.0, rel=1e-9)
        # agrees with a numeric root
        lam2 = optimize.brentq(lambda x: s.true_mean_ms(x) - 40.0, 1e-9, cap * (1 - 1e-12))
        assert lam == pytest.approx(lam2, rel=1e-8)
    # p95 rule binds when L_sat is tight
    s = SimulatedServer(capacity_ops_s=1000, base_ms=2, service_ms=5)
    lam = s.true_peak_rate(40.0, l_sat_ms=60.0)
    assert s.true_p95_ms(lam) == pytest.approx(60.0, rel=1e-9) and s.true_mean_ms(lam) < 40
    assert s.true_peak_rate(40.0, 2000.0) == pytest.approx(s.true_peak_rate(40.0))
    # an idle server already too slow -> 0
    assert SimulatedServer(base_ms=30, service_ms=20).true_peak_rate(40.0) == 0.0


def test_noise_rises_with_load_factor():
    s = SimulatedServer(capacity_ops_s=1000, base_ms=2, service_ms=5, seed=11, noise=0.05)
    lo = _means(s, 300, 60, 300)
    hi = _means(s, 960, 60, 300)
    cv_lo, cv_hi = lo.std(ddof=1) / lo.mean(), hi.std(ddof=1) / hi.mean()
    assert cv_hi > 2 * cv_lo
    # Levene test of relative variability: significantly larger near saturation
    assert stats.levene(lo / lo.mean(), hi / hi.mean()).pvalue < 1e-6
    # means are unbiased for the true model
    assert abs(hi.mean() - s.true_mean_ms(960)) < 4 * hi.std(ddof=1) / math.sqrt(len(hi))


def test_noise_falls_with_runlength_as_inverse_sqrt():
    s = SimulatedServer(seed=5, noise=0.05)
    short = _means(s, 800, 15, 400)
    long = _means(s, 800, 240, 400)
    ratio = short.std(ddof=1) / long.std(ddof=1)
    # cv ∝ r^(-1/2): sqrt(240/15) = 4; F-test bounds at 400 samples are about ±15%
    assert 3.3 < ratio < 4.8
    assert s.trial_cv(800, 15) / s.trial_cv(800, 240) == pytest.approx(4.0)


def test_heavy_tail_and_drift_and_invalid():
    ht = SimulatedServer(seed=2, heavy_tail=True, noise=0.05)
    x = _means(ht, 500, 60, 2000)
    assert stats.kurtosis(x) > 1.0  # t3 noise: heavy tails
    nt = SimulatedServer(seed=2, noise=0.05)
    assert abs(stats.kurtosis(_means(nt, 500, 60, 2000))) < 0.6
    ln = SimulatedServer(seed=2, noise_dist="lognormal", noise=0.2)
    y = _means(ln, 500, 60, 2000)
    assert stats.skew(y) > 0.3 and y.min() > 0
    d = SimulatedServer(seed=2, noise=0.0, drift_ms_per_s=0.01)
    a = d.measure(500, 100).mean_ms
    b = d.measure(500, 100).mean_ms
    assert b - a == pytest.approx(1.0)  # 100 s later at 0.01 ms/s
    g = SimulatedServer(seed=1, generator_max_ops_s=600)
    assert g.measure(500, 10).valid and not g.measure(700, 10).valid
    inv = SimulatedServer(seed=1, invalid_prob=0.3)
    frac = np.mean([not inv.measure(100, 5).valid for _ in range(1000)])
    assert 0.25 < frac < 0.35


def test_factors_change_capacity_with_interactions():
    def peak(fam, **f):
        return SimulatedServer.for_factors(fam, f, seed=0).true_peak_rate(40.0, 2000.0)

    # db (Fig. 2): more disks help only with enough threads -> positive disks x threads interaction
    gain_few_threads = peak("db", disks=4, threads=1) - peak("db", disks=1, threads=1)
    gain_many_threads = peak("db", disks=4, threads=16) - peak("db", disks=1, threads=16)
    assert gain_many_threads > 5 * max(gain_few_threads, 1.0)
    # too many threads costs a little (interior optimum)
    assert peak("db", disks=4, threads=100) < peak("db", disks=4, threads=16)
    # web: memory-bound, grows with memory and saturates
    w = [peak("web", disks=2, threads=16, memory_mb=m) for m in (256, 512, 1024, 2048, 4096, 8192)]
    assert all(b > a for a, b in zip(w, w[1:]))
    assert (w[-1] - w[-2]) < 0.2 * (w[2] - w[1])
    # db barely cares about memory compared with web
    assert peak("db", disks=2, threads=16, memory_mb=4096) / peak("db", disks=2, threads=16, memory_mb=512) < 1.5
    # categorical fs acts multiplicatively
    c_ext4 = family_capacity("mail", {"disks": 3, "threads": 8, "fs": "ext4"})[0]
    c_btrfs = family_capacity("mail", {"disks": 3, "threads": 8, "fs": "btrfs"})[0]
    assert c_btrfs / c_ext4 == pytest.approx(FAMILIES["mail"]["fs"]["btrfs"])
    # web peaks are higher than db ones on the 32-sample grid (Fig. 8: Linear costs most for web)
    grid = surface_grid()
    assert len(grid) == 32
    assert np.mean([peak("web", **g) for g in grid]) > 2 * np.mean([peak("db", **g) for g in grid])
    with pytest.raises(ValueError):
        SimulatedServer.for_factors("nosql", {}, seed=0)
    with pytest.raises(ValueError):
        SimulatedServer.for_factors("db", {"fs": "zfs"}, seed=0)
    with pytest.raises(ValueError):
        SimulatedServer.for_factors("db", {"cpus": 4}, seed=0)


def test_measured_trial_fields_and_argument_checks():
    s = SimulatedServer(seed=0)
    t = s.measure(400, 30)
    assert t.p95_ms >= t.mean_ms > 0 and t.ops_total > 0
    assert t.achieved_rate == pytest.approx(400, rel=0.05)
    for bad in ((0, 10), (-1, 10), (100, 0), (math.nan, 5)):
        with pytest.raises(ValueError):
            s.measure(*bad)
    with pytest.raises(ValueError):
        SimulatedServer(capacity_ops_s=0)
