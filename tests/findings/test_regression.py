"""findings.regression: the nightly verdict, checked against scipy and hand-computed CIs.

Real data: tests/data/regression_sample.json is the sample web_server rating (λ* ≈ 899 ops/s,
23 trials; result fields and trial records without their raw fstress JSON).
"""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
from scipy import stats

from workbench.findings.regression import (
    compare_to_history,
    diff_ci,
    peak_se,
    reference_load,
    separation_error,
)

DATA = Path(__file__).resolve().parents[1] / "data"
Z975 = 1.959963984540054                       # z_{0.975}
Z9875 = 2.241402727604947                      # z_{0.9875}: the fallback's CI at 1 − α/2, α = 0.05


def rating(peak: float, halfwidth: float = 20.0, trials: list | None = None) -> dict:
    return {"result": {"peak_rate": peak, "peak_rate_ci": [peak - halfwidth, peak + halfwidth]},
            "trials": trials or []}


def trial(n: int, load: float, mean_ms: float, valid: bool = True) -> dict:
    return {"n": n, "load_ops_s": load, "mean_ms": mean_ms, "p95_ms": 2 * mean_ms,
            "achieved_rate": load, "valid": valid, "reason": "" if valid else "x"}


@pytest.fixture(scope="module")
def sample() -> dict:
    """The real sample rating: result + its trials (from tests/data)."""
    return json.loads((DATA / "regression_sample.json").read_text())


# ----------------------------------------------------------------------------- verdicts

def test_no_history():
    v = compare_to_history(rating(900), [])
    assert v.reason == "no baseline yet"
    assert not v.regression and not v.significant and v.baseline_peak is None
    assert v.current_peak == 900


def test_same_configuration_is_not_a_regression():
    v = compare_to_history(rating(900), [rating(880), rating(920)])
    assert v.baseline_peak == 900 and v.diff == 0 and v.rel_change == 0
    assert not v.significant and not v.regression and not v.improvement
    assert v.diff_ci[0] < 0 < v.diff_ci[1]
    assert "no regression" in v.reason


def test_worse_configuration_is_a_regression():
    v = compare_to_history(rating(450), [rating(900), rating(910)])
    assert v.baseline_peak == 905
    assert v.rel_change == pytest.approx(-455 / 905)
    assert v.diff_ci[1] < 0
    assert v.significant and v.regression and not v.improvement
    assert "REGRESSION" in v.reason and "450" in v.reason and "905" in v.reason


def test_small_drop_within_tolerance_is_not_a_regression():
    v = compare_to_history(rating(850), [rating(900), rating(910)])
    assert v.rel_change == pytest.approx(-55 / 905)
    assert v.significant                          # the CIs are tight: the drop is real ...
    assert not v.regression                       # ... but only 6 %, inside the 10 % tolerance
    assert "within the 10% tolerance" in v.reason
    assert compare_to_history(rating(850), [rating(900), rating(910)], tolerance=0.05).regression


def test_large_but_insignificant_drop_is_not_flagged():
    v = compare_to_history(rating(760, halfwidth=400), [rating(900, 400), rating(910, 400)])
    assert v.rel_change < -0.10 and not v.significant and not v.regression
    assert "not statistically significant" in v.reason


def test_improvement_is_symmetric():
    v = compare_to_history(rating(1100), [rating(900), rating(910)])
    assert v.improvement and not v.regression and v.significant


def test_baseline_is_the_last_five_ratings():
    hist = [rating(100), rating(5000)] + [rating(p) for p in (880, 890, 900, 910, 920)]
    v = compare_to_history(rating(900), hist)
    assert v.n_baseline == 5 and v.baseline_peak == 900


def test_history_without_peak_is_skipped():
    hist = [rating(900), {"result": {"peak_rate": float("nan"), "peak_rate_ci": [0, 1]}, "trials": []}]
    v = compare_to_history(rating(900), hist)
    assert v.n_baseline == 1 and v.baseline_peak == 900


def test_an_unconverged_rating_is_judged_by_its_bracket_and_is_no_baseline():
    def stuck(peak, bracket):
        return {"result": {**rating(peak)["result"], "converged": False, "bracket": bracket,
                           "reason": "3 consecutive invalid trials at 750 ops/s"}, "trials": []}
    hist = [rating(900), rating(910)]                       # baseline 905 ops/s
    # bracket [0, 818]: λ* < 818, but 818 is above (1 − 25 %)·905 = 678.75: nothing known, NO VERDICT
    v = compare_to_history(stuck(818, [0.0, 818.0]), hist, tolerance=0.25)
    assert v.significant and v.inconclusive and not v.regression and not v.improvement
    assert "did not converge (3 consecutive invalid trials at 750 ops/s; bracket [0, 818] ops/s)" in v.reason
    assert "NO VERDICT" in v.reason and v.to_dict()["inconclusive"] is True
    # within 5 %: 818 < 0.95·905 = 859.75, so λ* dropped beyond the tolerance: a regression
    v = compare_to_history(stuck(818, [0.0, 818.0]), hist, tolerance=0.05)
    assert v.regression and not v.inconclusive and "its top lies below the baseline less the 5% tolerance (860 ops/s)" in v.reason
    # the CI failure's night 3: bracket [214, 346] (max_trials) against 905
    v = compare_to_history(stuck(341, [214.3, 346.2]), hist, tolerance=0.25)
    assert v.regression and not v.inconclusive
    # bottom of the bracket above (1 + 10 %)·905 = 995.5: an improvement
    v = compare_to_history(stuck(1200, [1200.0, None]), hist)
    assert v.improvement and not v.regression and not v.inconclusive
    assert compare_to_history(stuck(818, [0.0, 818.0]), []).inconclusive
    # an unconverged night never joins the baseline
    v = compare_to_history(rating(905), [rating(900), stuck(300, [0.0, 300.0]), rating(910)])
    assert v.n_baseline == 2 and v.baseline_peak == 905 and not v.inconclusive


def test_current_without_peak():
    v = compare_to_history({"result": {"peak_rate": None}, "trials": []}, [rating(900)])
    assert not v.regression and "no peak rate" in v.reason


# ----------------------------------------------------------------------------- the CI, by hand

def test_peak_se_from_ci():
    assert peak_se({"peak_rate_ci": [870.0, 930.0]}) == pytest.approx(30.0 / Z975)
    assert peak_se({"peak_rate_ci": [870.0, float("inf")]}) == math.inf
    assert peak_se({}) == math.inf


def test_diff_ci_one_history_rating_by_hand():
    # k = 1: d ± z·√(se_c² + se_b²) with se = hw/z_{0.975}  ⇒  at 95 %: half-width √(30² + 20²) = 36.0555
    d, lo, hi = diff_ci(900, 30 / Z975, [1000], [20 / Z975], 0.95)
    assert d == -100
    assert lo == pytest.approx(-100 - math.sqrt(1300), rel=1e-12)
    assert hi == pytest.approx(-100 + math.sqrt(1300), rel=1e-12)
    # the verdict without trials falls back to the CIs, the CI of d at 1 − α/2 = 97.5 % (Bonferroni
    # with separation): half-width z_{0.9875}/z_{0.975} · 36.0555 = 41.23 ops/s
    v = compare_to_history(rating(900, 30), [rating(1000, 20)])
    assert v.test == "ci" and v.diff == -100
    assert v.diff_ci[0] == pytest.approx(-100 - Z9875 / Z975 * math.sqrt(1300), rel=1e-12)
    assert v.diff_ci[1] == pytest.approx(-100 + Z9875 / Z975 * math.sqrt(1300), rel=1e-12)
    assert v.significant and "97.5% CI of the change" in v.reason


def test_diff_ci_two_history_ratings_by_hand():
    # current 900 ± 30; history 880 ± 20 and 920 ± 30 (95 % CIs), baseline 900, d = 0.
    # Var_meas = (30² + (20² + 30²)/2²)/z² = 1225/z²;  s_b² = (20² + 20²)/1 = 800 → s_b²/k = 400
    # Var = 1225/z² + 400 = 718.889...;  ν = Var² / (400² / 1) = 3.2300...;  t_{0.975;ν} = 3.058
    var = 1225 / Z975 ** 2 + 400
    nu = var ** 2 / 400 ** 2
    assert var == pytest.approx(718.889, abs=1e-3) and nu == pytest.approx(3.23001, abs=1e-4)
    h = stats.t.ppf(0.975, nu) * math.sqrt(var)
    d, lo, hi = diff_ci(900, 30 / Z975, [880, 920], [20 / Z975, 30 / Z975], 0.95)
    assert d == 0 and lo == pytest.approx(-h, rel=1e-12) and hi == pytest.approx(h, rel=1e-12)
    assert h == pytest.approx(3.058 * 26.812, abs=0.01)   # 81.99 ops/s, vs z·√Var = 52.6
    v = compare_to_history(rating(900, 30), [rating(880, 20), rating(920, 30)])
    h975 = stats.t.ppf(0.9875, nu) * math.sqrt(var)          # the fallback's level, 1 − α/2
    assert v.diff_ci == (pytest.approx(-h975, rel=1e-12), pytest.approx(h975, rel=1e-12))


def test_infinite_history_ci_gives_unbounded_diff_ci():
    v = compare_to_history(rating(400), [{"result": {"peak_rate": 900, "peak_rate_ci": [800, math.inf]}}])
    assert v.diff_ci == (-math.inf, math.inf) and "CI of the change unbounded" in v.reason
    # the normal CI of the difference says nothing, and tonight's CI lies wholly below [800, ∞); but
    # two 95 % CIs bound the separation error by 2.5 % + 2.5 % = 5 % > α/2: not enough alone
    assert v.separation_error == pytest.approx(0.05) and not v.significant
    # two 97.5 % CIs: 1.25 % + 1.25 % = 2.5 % ≤ α/2
    v = compare_to_history({**rating(400), "ci_level": 0.975},
                           [{"result": {"peak_rate": 900, "peak_rate_ci": [800, math.inf]}, "ci_level": 0.975}])
    assert v.significant and v.regression and "disjoint" in v.reason
    assert json.loads(json.dumps(v.to_dict(), allow_nan=False))["diff_ci"] == [None, None]


# ----------------------------------------------------------------------------- Welch vs scipy

def _near(trials, load):
    return [t["mean_ms"] for t in trials if t["valid"] and abs(t["load_ops_s"] - load) <= 0.1 * load]


def test_welch_on_real_trials_matches_scipy(sample):
    base = sample
    cur_trials = copy.deepcopy(base["trials"])
    for t in cur_trials:                          # tonight: every trial 3× slower + 40 ms
        t["mean_ms"] = 3 * t["mean_ms"] + 40
    cur = {"result": dict(base["result"], peak_rate=700.0, peak_rate_ci=[650.0, 1100.0]),
           "trials": cur_trials}
    v = compare_to_history(cur, [base])
    assert v.ref_load_ops_s == 900.0              # the baseline's measured load nearest λ* ≈ 899
    x, y = _near(cur_trials, 900.0), _near(base["trials"], 900.0)
    assert len(x) == len(y) >= 2 and v.welch_n_current == len(x)
    ref = stats.ttest_ind(x, y, equal_var=False, alternative="greater")
    assert v.welch_t == pytest.approx(ref.statistic, rel=1e-10)
    assert v.welch_df == pytest.approx(ref.df, rel=1e-10)
    assert v.welch_p == pytest.approx(ref.pvalue, rel=1e-10)
    assert v.welch_t > 0 and v.welch_p < 0.5      # slower, though the real trials at 900 vary a lot
    assert v.test == "welch" and v.mean_ms_current == pytest.approx(sum(x) / len(x))
    assert v.significant == (v.welch_p < 0.05)


def test_welch_alone_can_make_a_drop_significant():
    # λ* CIs unbounded (nothing to say from them), but the trials near 1000 ops/s are clearly slower
    base_trials = [trial(i, 1000, m) for i, m in enumerate([10.0, 11.0, 9.5, 10.5])]
    cur_trials = [trial(i, 1000, m) for i, m in enumerate([30.0, 34.0, 29.0])] + [trial(3, 1000, 1.0, False)]
    hist = [{"result": {"peak_rate": 1000, "peak_rate_ci": [900, math.inf]}, "trials": base_trials}]
    cur = {"result": {"peak_rate": 800, "peak_rate_ci": [700, math.inf]}, "trials": cur_trials}
    v = compare_to_history(cur, hist)
    ref = stats.ttest_ind([30.0, 34.0, 29.0], [10.0, 11.0, 9.5, 10.5], equal_var=False,
                          alternative="greater")
    assert v.welch_n_current == 3                 # the invalid trial is left out
    assert v.welch_p == pytest.approx(ref.pvalue, rel=1e-10)
    assert v.significant and v.regression and v.test == "welch"
    assert "Welch" in v.reason


def test_welch_needs_two_trials_per_side_near_the_load():
    base_trials = [trial(0, 900, 5.0), trial(1, 900, 6.0), trial(2, 450, 1.0)]
    cur_trials = [trial(0, 450, 5.0), trial(1, 450, 6.0), trial(2, 880, 90.0)]   # one near 900
    v = compare_to_history(rating(450, trials=cur_trials), [rating(900, trials=base_trials)])
    assert v.welch_n_current == 1 and v.welch_p is None and v.welch_t is None
    assert v.regression and v.test == "ci"       # decided by the CI of the difference alone


def test_to_dict_is_strict_json(sample):
    v = compare_to_history(sample, [sample, sample])
    d = json.loads(json.dumps(v.to_dict(), allow_nan=False))
    assert d["regression"] is False and d["baseline_peak"] == pytest.approx(898.890523085667)
    assert isinstance(d["diff_ci"], list) and len(d["diff_ci"]) == 2
    assert d["welch_p"] == pytest.approx(0.5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="confidence"):
        compare_to_history(rating(900), [rating(900)], confidence=1.5)
    with pytest.raises(ValueError, match="tolerance"):
        compare_to_history(rating(900), [rating(900)], tolerance=-0.1)


def test_disjoint_peak_rate_cis_are_significant_even_when_the_normal_ci_is_wide():
    # bracket CIs: tonight [300, 400] (400 confidently saturated), baseline [800, 3000]
    cur = {"result": {"peak_rate": 330.0, "peak_rate_ci": [300.0, 400.0]}, "trials": []}
    hist = [{"result": {"peak_rate": 900.0, "peak_rate_ci": [800.0, 3000.0]}, "trials": []}]
    v = compare_to_history({**cur, "ci_level": 0.95}, [{**hist[0], "ci_level": 0.95}], tolerance=0.25,
                           confidence=0.90)
    assert v.diff_ci[1] > 0                      # the normal approximation alone is inconclusive
    # 90 %: separation counts when its error bound (2.5 % + 2.5 % from two 95 % CIs) is ≤ α/2 = 5 %
    assert v.separation_error == pytest.approx(0.05)
    assert v.significant and v.regression and "disjoint" in v.reason
    # overlapping CIs: no separation; an unbounded CI never separates
    cur2 = {"result": {"peak_rate": 700.0, "peak_rate_ci": [600.0, 850.0]}, "trials": []}
    assert not compare_to_history(cur2, hist, tolerance=0.25).significant
    cur3 = {"result": {"peak_rate": 330.0, "peak_rate_ci": [300.0, None]}, "trials": []}
    assert not compare_to_history(cur3, hist, tolerance=0.25).significant


def test_one_warm_trial_among_overloaded_ones_keeps_the_drop_significant():
    # the nightly test's shape, measured on real Ganesha (read_iops 100 → 40): tonight's 6 seeded
    # trials at the baseline's reference load, one of them served from a warm cache (0.16 ms) and
    # five overloaded (seconds); the baseline's trials there at the knee (0.3–250 ms)
    base_trials = [trial(i, 900, m) for i, m in enumerate([16.0, 0.36, 37.0, 252.0, 0.26, 3.1])]
    x = [0.16, 5459.0, 2595.0, 2527.0, 2921.0, 1224.0]
    cur_trials = [trial(i, 900, m) for i, m in enumerate(x)] + [trial(6, 300, 8.0)]
    hist = [{"result": {"peak_rate": 899.0, "peak_rate_ci": [850.0, math.inf]}, "trials": base_trials[:3]},
            {"result": {"peak_rate": 897.0, "peak_rate_ci": [850.0, math.inf]}, "trials": base_trials[3:]}]
    cur = {"result": {"peak_rate": 346.0, "peak_rate_ci": [300.0, math.inf]}, "trials": cur_trials}
    v = compare_to_history(cur, hist, tolerance=0.25, confidence=0.95)
    y = [16.0, 0.36, 37.0, 252.0, 0.26, 3.1]
    ref = stats.ttest_ind(x, y, equal_var=False, alternative="greater")
    assert v.welch_p == pytest.approx(ref.pvalue, rel=1e-10) and v.welch_p < 0.05
    assert v.regression and v.test == "welch" and v.ref_load_ops_s == 900.0
    # with only the first 4 of tonight's trials the same drop is borderline (p ≈ 0.051): hence 6
    four = stats.ttest_ind(x[:4], y, equal_var=False, alternative="greater")
    assert 0.04 < four.pvalue < 0.06


def test_welch_decides_alone_when_it_has_a_sample():
    # disjoint λ* CIs at high levels but an insignificant Welch test: one pre-specified test decides
    # (an "or" over several tests at α each would raise the false-alarm rate)
    base_trials = [trial(i, 900, m) for i, m in enumerate([20.0, 35.0, 24.0])]
    cur_trials = [trial(i, 900, m) for i, m in enumerate([22.0, 30.0, 27.0])]
    hist = [{"result": {"peak_rate": 900.0, "peak_rate_ci": [850.0, 950.0]}, "trials": base_trials,
             "ci_level": 0.999}]
    cur = {"result": {"peak_rate": 600.0, "peak_rate_ci": [550.0, 650.0]}, "trials": cur_trials,
           "ci_level": 0.999}
    v = compare_to_history(cur, hist, tolerance=0.25)
    assert v.test == "welch" and v.welch_p > 0.05
    assert not v.significant and not v.regression and "not statistically significant" in v.reason


def test_reference_load_is_the_measured_load_nearest_the_baseline_mean():
    h1 = {"result": {"peak_rate": 850.0}, "trials": [trial(0, 400, 3.0), trial(1, 800, 20.0)]}
    h2 = {"result": {"peak_rate": 950.0}, "trials": [trial(0, 400, 3.0), trial(1, 920, 30.0),
                                                     trial(2, 1000, 5.0, valid=False)]}
    assert reference_load([h1, h2]) == 920.0      # mean λ* 900; the invalid 1000 does not count
    assert reference_load([]) is None
    assert reference_load([{"result": {"peak_rate": None}, "trials": []}]) is None


def test_separation_error_is_two_one_sided_misses():
    # (1 − c_t)/2 + (1 − c_b)/2 with the widest baseline level
    assert separation_error(0.95, [0.95]) == pytest.approx(0.05)
    assert separation_error(0.99, [0.99, 0.95, 0.98]) == pytest.approx(0.005 + 0.025)
    cur = {"result": {"peak_rate": 330.0, "peak_rate_ci": [300.0, 400.0]}, "trials": []}
    hist = [{"result": {"peak_rate": p, "peak_rate_ci": [800.0, 3000.0]}, "trials": []} for p in (900.0, 950.0)]
    # 95 % CIs: 5 % > α/2 = 2.5 %: separation alone proves nothing at c = 0.95
    v = compare_to_history(cur, hist, tolerance=0.25, confidence=0.95)
    assert v.separation_error == pytest.approx(0.05) and not v.significant
    # 99 % CIs: 1 % ≤ 2.5 %
    lv = [dict(h, ci_level=0.99) for h in hist]
    v = compare_to_history(dict(cur, ci_level=0.99), lv, tolerance=0.25, confidence=0.95)
    assert v.separation_error == pytest.approx(0.01) and v.significant and v.regression
    # one baseline at 80 % among 99 % ones: the widest level counts, 0.5 % + 10 %
    v = compare_to_history(dict(cur, ci_level=0.99), [lv[0], dict(hist[1], ci_level=0.8)], tolerance=0.25)
    assert not v.significant and v.separation_error == pytest.approx(0.105)
