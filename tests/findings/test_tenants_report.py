"""Both tenants in result.json and the report (findings.tenants), against hand-computed medians."""
from __future__ import annotations

from analysis.report import rating_plots, rating_report_html
from workbench.findings.tenants import background_by_load, background_result


def _trial(n, load, mean, b_mean, valid=True, b_ops=150.0, errors=0):
    bg = {"workload": "web_server", "ops_s": 150.0, "offered_rate": b_ops, "achieved_rate": b_ops - 1.0,
          "mean_ms": b_mean, "p95_ms": 2 * b_mean, "errors": errors, "timeouts": 1}
    return {"n": n, "load_ops_s": load, "runlength_s": 2.0, "mean_ms": mean, "p95_ms": 2 * mean,
            "achieved_rate": load, "valid": valid, "raw": {"background": bg}}


TRIALS = [_trial(0, 100.0, 1.0, 0.5), _trial(1, 100.0, 3.0, 1.5, errors=2), _trial(2, 100.0, 2.0, 4.0),
          _trial(3, 200.0, 50.0, 30.0), _trial(4, 200.0, 90.0, 99.0, valid=False),
          {"n": 5, "load_ops_s": 300.0, "mean_ms": 5.0, "valid": True, "raw": {"background": {"missing": True}}}]


def test_per_a_load_medians_of_b_over_valid_trials():
    rows = background_by_load(TRIALS)
    assert [(r["load_ops_s"], r["n"]) for r in rows] == [(100.0, 3), (200.0, 1)]   # invalid and B-less left out
    low = rows[0]
    assert (low["a_mean_ms"], low["b_mean_ms"], low["b_p95_ms"], low["b_achieved_ops_s"]) == (2.0, 1.5, 3.0, 149.0)
    assert low["b_errors"] == 2 + 3 * 1                                         # errors + timeouts, summed
    assert rows[1]["b_mean_ms"] == 30.0


def test_the_report_shows_both_tenants():
    background = {"ops_s": 150.0, "workload": "web_server", "load_hosts": 1}
    result = {"peak_rate": 180.0, "converged": True, "r_sat_ms": 40.0, "background": background_result(background, TRIALS)}
    spec = {"workload": "web_server", "spec": {"r_sat_ms": 40.0}, "background": background}
    plots = rating_plots(spec, result, TRIALS)
    assert plots["tenants.png"].startswith(b"\x89PNG")
    html = rating_report_html(spec, result, TRIALS, plots=plots)
    assert "tenant B: web_server at 150 ops/s from 1 load host" in html and "Shared tenants" in html
    assert "tenants.png" not in rating_plots(spec, {"peak_rate": 180.0}, TRIALS)          # no tenant B
