"""Auto-pilot's warnings (findings.anomalies) against hand-computed cases and scipy."""
from __future__ import annotations

import math

import pytest
from scipy import stats

from workbench.findings.anomalies import history_trend, rating_warnings
from analysis.nightly_report import nightly_report_html
from analysis.report import rating_report_html


def _trials(load, means, start=0, valid=True):
    return [{"n": start + i, "load_ops_s": load, "mean_ms": m, "valid": valid} for i, m in enumerate(means)]


def test_an_outlier_needs_six_trials_at_its_load():
    # five equal means and one off: its z is (n − 1)/√n, the largest possible (Shiffler 1988)
    six = rating_warnings(_trials(800, [10, 10, 10, 10, 10, 30]))
    [w] = [w for w in six["warnings"] if w["kind"] == "outlier"]
    assert w["trials"] == [5] and w["z"] == pytest.approx(5 / math.sqrt(6), abs=1e-3)   # 2.041 > 2
    assert six["loads_unchecked_for_outliers"] == []
    # with five trials no |z| can pass 2 (4/√5 = 1.79): the load is listed as unchecked, not clean
    five = rating_warnings(_trials(800, [10, 10, 10, 10, 30]))
    assert not [w for w in five["warnings"] if w["kind"] == "outlier"]
    assert five["loads_unchecked_for_outliers"] == [800.0]


def test_drift_is_the_least_squares_slope_of_a_load_s_means_in_run_order():
    means = [1.0, 2.1, 2.9, 4.2, 5.1]
    trials = [{"n": n, "load_ops_s": 900, "mean_ms": m, "valid": True} for n, m in zip([1, 3, 4, 6, 9], means, strict=True)]
    [w] = rating_warnings(trials, confidence=0.95)["warnings"]
    ref = stats.linregress([1, 3, 4, 6, 9], means)
    assert w["kind"] == "drift" and w["slope_ms_per_trial"] == pytest.approx(ref.slope)
    assert w["p_value"] == pytest.approx(ref.pvalue) and "rose" in w["text"]
    # flat noise at a load, invalid trials and other loads: no drift
    flat = _trials(900, [5.0, 5.2, 4.9, 5.1, 5.0]) + _trials(700, [1, 50, 100], start=5, valid=False)
    assert rating_warnings(flat)["warnings"] == []


def test_a_leak_like_decline_over_nights():
    nights = ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]
    peaks = [1000.0, 990.0, 975.0, 962.0]
    ref = stats.linregress(range(4), peaks)
    w = history_trend(peaks, nights)
    assert w["slope_ops_s_per_night"] == pytest.approx(ref.slope) and w["p_value"] == pytest.approx(ref.pvalue)
    assert "leak-like" in w["text"] and w["nights"] == nights
    assert history_trend([1000.0, 1010.0, 1020.0, 1031.0], nights) is None        # rising: no warning
    assert history_trend([1000.0, None, 980.0], nights[:3]) is None               # 2 nights with a λ*
    assert history_trend([1000.0, 1003.0, 995.0, 1001.0], nights) is None         # no significant slope


def test_the_reports_show_the_warnings():
    res = {"peak_rate": 900.0, "converged": True,
           **rating_warnings(_trials(800, [10, 10, 10, 10, 10, 30]) + _trials(900, [1, 2], start=6))}
    page = rating_report_html({"workload": "web_server"}, res, [], plots={})
    assert "<h2>Warnings</h2>" in page and "trial 5 at 800 ops/s" in page and "fewer than 6 valid trials" in page
    quiet = rating_report_html({"workload": "web_server"}, {"peak_rate": 900.0, "warnings": []}, [], plots={})
    assert "<h2>Warnings</h2><p>none</p>" in quiet
    night = nightly_report_html("2026-11-04", [{"name": "web", "regression": False,
                                                "warnings": ["λ* fell by 12.7 ops/s per night"]}])
    assert "λ* fell by 12.7 ops/s per night" in night


def test_the_console_result_block_lists_the_warnings():
    from workbench.output.console import result_block
    res = {"peak_rate": 900.0, **rating_warnings(_trials(900, [1.0, 2.0, 3.0]))}
    assert "warning" in result_block(res) and "the mean rose by 1 ms per trial" in result_block(res)
    assert "warning" not in result_block({"peak_rate": 900.0, "warnings": []})
