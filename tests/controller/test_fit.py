"""stop_rule="fit": the local WLS fit of log R(λ), λ* by inverse regression (Fieller), as a stop."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from workbench.controller.decide import Done, decide, find_peak
from workbench.controller.fit import FIT_WINDOW, fit_peak
from workbench.controller.spec import RatingSpec
from workbench.controller.summary import summarize
from workbench.controller.trial import TrialResult
from workbench.measure.simulated import SimulatedServer

B0, B1 = math.log(40.0) - 0.004 * 1000, 0.004      # log R = B0 + B1·λ: R(1000) = 40 ms
JITTER = (-0.02, 0.0, 0.02)                         # log-scale offsets of the three trials at a load


def _log(loads, jitter=JITTER, r_s=60.0):
    return [TrialResult(mean_ms=math.exp(B0 + B1 * x + j), p95_ms=1.0, achieved_rate=x).at(x, r_s)
            for x in loads for j in jitter]


def test_fit_recovers_lambda_and_its_fieller_interval():
    spec = RatingSpec(policy="binsearch", stop_rule="fit")
    trials = _log([970, 1000, 1030])
    fit = fit_peak(summarize(spec, trials), 40.0, spec.width, spec.confidence)
    assert fit.peak_rate == pytest.approx(1000.0, rel=1e-9)
    assert fit.loads == (970.0, 1000.0, 1030.0) and fit.n_trials == 9
    # by hand: residuals ±0.02 at each load → σ̂² = 6·0.0004/7, Var(b1) = σ̂²/Sxx, Sxx = 6·30²;
    # Var(b0 + b1·1000) = σ̂²/9 at the mean load; Fieller with t_{0.975; 7}
    s2 = 6 * 0.0004 / 7
    t = st.t.ppf(0.975, 7)
    a = B1 ** 2 - t * t * s2 / 5400
    half = math.sqrt(a * t * t * s2 / 9) / a         # B = 0 at x̄ = 1000: roots ±√(−A·C)/A
    assert fit.ci == pytest.approx((1000 - half, 1000 + half), rel=1e-9)
    lo, hi = ((math.log(36) - B0) / B1, (math.log(44) - B0) / B1)
    assert fit.region == pytest.approx((lo, hi), rel=1e-12)
    assert fit.inside


def test_fit_needs_two_loads_near_r_sat_and_enough_trials():
    spec = RatingSpec(policy="binsearch", stop_rule="fit")
    assert fit_peak(summarize(spec, _log([1000, 1000])), 40.0, 0.1, 0.95) is None      # one load
    assert fit_peak(summarize(spec, _log([990, 1000], jitter=(0.0, 0.01))), 40.0, 0.1, 0.95) is None  # 4 trials
    far = 1000 + math.log(FIT_WINDOW * 1.2) / B1        # outside the window: not in the fit
    fit = fit_peak(summarize(spec, _log([970, 1000, far])), 40.0, 0.1, 0.95)
    assert fit.loads == (970.0, 1000.0)


def test_noisy_fit_is_not_inside():
    spec = RatingSpec(policy="binsearch", stop_rule="fit")
    trials = _log([990, 1000, 1010], jitter=(-0.3, 0.0, 0.3))
    fit = fit_peak(summarize(spec, trials), 40.0, 0.1, 0.95)
    assert not fit.inside
    assert not isinstance(decide(spec, trials), Done) or "fit:" not in decide(spec, trials).result.reason


def test_decide_stops_on_the_fit_and_reports_its_ci():
    spec = RatingSpec(policy="binsearch", stop_rule="fit")
    trials = _log([970, 1030])
    assert decide(spec, trials).reason.startswith("certify")     # no load shown below or above yet
    trials += [TrialResult(mean_ms=m, p95_ms=2 * m, achieved_rate=500.0).at(500.0, 180.0) for m in (5.0, 5.1)]
    trials += [TrialResult(mean_ms=900.0, p95_ms=1800.0, achieved_rate=1000.0).at(2000.0, 180.0)]
    d = decide(spec, trials)
    assert isinstance(d, Done) and d.result.reason.startswith("fit:")
    assert d.result.peak_rate == pytest.approx(1000.0, rel=1e-9)
    lo, hi = d.result.peak_rate_ci          # the certified interval: [500, 2000] ∩ the fit's (when bounded)
    assert 500 <= lo < 1000 < hi <= 2000
    assert d.result.converged


def test_fit_rule_on_a_simulated_server_lands_in_the_region():
    srv = SimulatedServer(capacity_ops_s=1000, base_ms=2, service_ms=5, servers=1, noise=0.03, seed=4)
    spec = RatingSpec(stop_rule="fit", policy="safeguarded", runlength_s=60)
    res = find_peak(spec, srv.measure)
    assert res.converged
    assert 36.0 <= srv.true_mean_ms(res.peak_rate) <= 44.0


def test_spec_accepts_fit_only_by_name():
    assert RatingSpec(policy="binsearch", stop_rule="fit").stop_rule == "fit"
    with pytest.raises(ValueError, match="stop_rule"):
        RatingSpec(policy="binsearch", stop_rule="fitted")
    assert np.isfinite(B0)
