"""Plots and HTML reports on real rating records (tests/data/report_*.json, from a real
web_server rating: 8 of its 23 trials; per-op histograms kept only at 900 ops/s, the load nearest λ*)."""
from __future__ import annotations

import copy
import io
import json
import re
from pathlib import Path

import matplotlib
import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
from hdrh.histogram import HdrHistogram
from scipy import stats as st

from analysis import (
    histograms,
    history_plot,
    nightly_report,
    plots,
    report,
    surface_plots,
    surface_report,
)
from workbench.controller.result import GOAL_FIELDS, goal_results
from workbench.controller.steadiness import records_as_read
from workbench.stats.rsm import fit_quadratic

DATA = Path(__file__).resolve().parents[1] / "data"
PNG_SIG = b"\x89PNG\r\n\x1a\n"


def _load(name):
    return json.loads((DATA / f"report_{name}.json").read_text())


@pytest.fixture
def rating():
    trials = _load("trials")
    # one real trial re-labelled invalid, as the validity rules / GX would do
    bad = next(t for t in trials if t["n"] == 7)
    bad["valid"], bad["reason"] = False, "achieved rate < 90% of offered <b>"
    bad["raw"]["host_steal_pct"] = 3.14159  # fstress: share of the load host's CPU time stolen in the window
    bad["drain_s"] = 2.71828                # fstress: the server's drain before the trial
    return {"spec": _load("spec"), "result": _load("result"), "trials": trials, "sysinfo": _load("sysinfo")}


def _decode_png(b: bytes) -> np.ndarray:
    assert b[:8] == PNG_SIG
    return mpimg.imread(io.BytesIO(b), format="png")


def _hist(values) -> HdrHistogram:
    h = HdrHistogram(1, 120_000_000, 3)
    for v in values:
        h.record_value(v)
    return h


# --------------------------------------------------------------------------- data functions

def test_backend_is_agg():
    assert matplotlib.get_backend().lower() == "agg"


def test_latency_cdf_hand_case_merges_and_ends_at_one():
    a = _hist([100, 200, 200, 1000])                     # µs
    b = _hist([1000, 1000])
    x, f = histograms.latency_cdf([a.encode(), b])            # base64 string and object both accepted
    np.testing.assert_allclose(x, [0.1, 0.2, 1.0])      # ms
    np.testing.assert_allclose(f, [1 / 6, 3 / 6, 1.0])
    assert a.get_total_count() == 4                      # inputs not mutated by the merge
    x0, f0 = histograms.latency_cdf([None, ""])
    assert x0.size == 0 and f0.size == 0


def test_latency_cdf_real_histograms_monotone_and_in_ms(rating):
    at_peak = [t for t in rating["trials"] if t["load_ops_s"] == 900.0]
    assert len(at_peak) >= 2
    hists = [t["raw"]["histogram"] for t in at_peak]
    merged = histograms.merge_histograms(hists)
    assert merged.get_total_count() == sum(HdrHistogram.decode(h).get_total_count() for h in hists)
    x, f = histograms.latency_cdf(hists)
    assert np.all(np.diff(x) > 0) and np.all(np.diff(f) >= 0) and f[-1] == 1.0 and f[0] > 0
    for t in at_peak:                                    # unit check: HDR µs → ms matches fstress p95_ms
        h = HdrHistogram.decode(t["raw"]["histogram"])
        assert h.get_value_at_percentile(95) * histograms.HDR_UNIT_MS == pytest.approx(t["p95_ms"], rel=1e-3)


def test_cdf_trials_picks_nearest_load_and_lowest(rating):
    groups = histograms.cdf_trials(rating["trials"], rating["result"]["peak_rate"])
    assert [g[0] for g in groups] == [900.0, 200.0]
    assert all(t["valid"] for _, ts in groups for t in ts)


def test_load_summary_ci_matches_scipy_and_skips_invalid(rating):
    trials = rating["trials"]
    rows = {r["load_ops_s"]: r for r in plots.load_summary(trials, 0.9)}
    means = [t["mean_ms"] for t in trials if t["load_ops_s"] == 900.0]
    # [CC] Eq. 1: mean ± t_{(1+c)/2; N−1} · s/√N
    lo, hi = st.t.interval(0.9, len(means) - 1, loc=np.mean(means), scale=st.sem(means))
    assert rows[900.0]["ci_lo"] == pytest.approx(lo) and rows[900.0]["ci_hi"] == pytest.approx(hi)
    assert rows[1600.0]["n_invalid"] == 1 and rows[1600.0]["n_valid"] == 0
    assert np.isnan(rows[1600.0]["mean_ms"])


def test_harness_failures_are_shown_apart_from_invalid_trials(rating):
    trials = [dict(t) for t in rating["trials"]]
    at = max(i for i, t in enumerate(trials) if t["load_ops_s"] == 900.0)
    failed = dict(trials[at], n=len(trials), valid=False, harness_failure=True, outcome="harness",
                  reason="harness: load1: Run fstress unreachable: ssh", mean_ms=0.0, p95_ms=0.0, raw=None)
    rows = {r["load_ops_s"]: r for r in plots.load_summary(trials + [failed], 0.9)}
    before = {r["load_ops_s"]: r for r in plots.load_summary(trials, 0.9)}
    assert rows[900.0]["n_harness"] == 1 and rows[900.0]["n_invalid"] == before[900.0]["n_invalid"]
    assert rows[900.0]["mean_ms"] == before[900.0]["mean_ms"]
    result = dict(rating["result"], n_harness=1)
    html = report.rating_report_html(rating["spec"], result, trials + [failed],
                                     validation={"success": True, "excluded": {},
                                                 "harness": {str(failed["n"]): failed["reason"]}})
    assert html.count('<tr class="harness">') == 1 and "HARNESS FAILURE" in html
    assert "1 harness failure(s) not judged" in html and "trials / loads / invalid / harness failures" in html
    for png in report.rating_plots(rating["spec"], result, trials + [failed]).values():
        assert png.startswith(b"\x89PNG")


def test_trials_excluded_as_not_steady_are_marked_and_do_not_count(rating):
    trials = [copy.deepcopy(t) for t in rating["trials"]]
    at900 = [t for t in trials if t["load_ops_s"] == 900.0 and t["valid"]]
    gone, kept = at900[0], at900[1]
    gone["raw"]["steady"] = {"verdict": "stall", "stall_intervals": [3]}
    kept["raw"]["steady"] = {"verdict": "trend up"}
    why = "not steady: stall (interval 3)"
    result = dict(rating["result"], n_not_steady=1, not_steady={str(gone["n"]): why})
    html = report.rating_report_html(rating["spec"], result, trials)
    assert f'<tr class="excluded"><td>{gone["n"]}</td>' in html and html.count('<tr class="excluded">') == 1
    assert "<td>EXCLUDED</td>" in html and "stall: excluded, re-run" in html and why in html
    assert "trend up: counted (past R_sat, or re-runs at this load spent)" in html
    # a trend whose change is under s·R_sat counts (controller.steadiness): the cell says why
    kept["raw"]["steady"] = {"verdict": "trend up", "trend_change_ms": 0.63}
    html = report.rating_report_html(rating["spec"], result, trials)
    assert "trend up: counted (a change of +0.63 ms, under s·R_sat)" in html
    assert "<td>excluded as not steady</td><td class=\"l\">1 trial(s)" in html
    # not counted in the load's statistics (plots read the records as the controller did)
    rows = {r["load_ops_s"]: r for r in plots.load_summary(records_as_read(result["not_steady"], trials), 0.9)}
    before = {r["load_ops_s"]: r for r in plots.load_summary(trials, 0.9)}
    assert rows[900.0]["n_valid"] == before[900.0]["n_valid"] - 1
    assert rows[900.0]["mean_ms"] == pytest.approx(np.mean([t["mean_ms"] for t in at900[1:]]))
    # a result from before the controller acted on the verdict: the verdict alone
    old = report.rating_report_html(rating["spec"], rating["result"], trials)
    assert '<td class="l">stall</td>' in old and "EXCLUDED" not in old and "counted" not in old


def test_per_op_rows_at_peak_load(rating):
    trials = rating["trials"]
    at = [t for t in trials if t["load_ops_s"] == 900.0]
    rows = report.per_op_rows(trials, 900.0)
    assert {r["op"] for r in rows} == set(at[0]["raw"]["ops"])
    assert sum(r["count"] for r in rows) == sum(t["raw"]["ops_total"] for t in at)
    assert sum(r["actual_pct"] for r in rows) == pytest.approx(100.0)
    assert sum(r["time_pct"] for r in rows) == pytest.approx(100.0)
    read = next(r for r in rows if r["op"] == "read")
    assert read["mix_target_pct"] == pytest.approx(28.0)
    n = sum(t["raw"]["ops"]["read"]["count"] for t in at)
    exact_mean = sum(t["raw"]["ops"]["read"]["exact"]["sum_ns"] for t in at) / n / 1e6
    assert read["mean_ms"] == pytest.approx(exact_mean)
    p95s = [t["raw"]["ops"]["read"]["p95_ms"] for t in at]      # a mixture's quantile lies between
    assert min(p95s) <= read["p95_ms"] <= max(p95s)
    # 200 ops/s: two trials without per-op histograms → no percentiles, counts still add up
    low = report.per_op_rows(trials, 200.0)
    assert all(np.isnan(r["p95_ms"]) for r in low)
    assert sum(r["count"] for r in low) == 2000


# --------------------------------------------------------------------------- PNGs

def test_rating_plots_are_pngs_of_the_expected_size(rating):
    out = report.rating_plots(rating["spec"], rating["result"], rating["trials"])
    assert set(out) == {"latency_vs_load.png", "load_curve.png", "search_trace.png", "latency_cdf.png",
                        "intervals.png"}
    for name, b in out.items():
        assert _decode_png(b).shape == (500, 800, 4), name


def test_plots_survive_empty_and_missing_histograms(rating):
    trials = copy.deepcopy(rating["trials"])
    for t in trials:
        t["raw"] = None
    assert _decode_png(histograms.latency_cdf_png(trials, rating["result"])).shape == (500, 800, 4)
    assert _decode_png(plots.latency_vs_load_png([], {}, None)).shape == (500, 800, 4)
    assert _decode_png(plots.search_trace_png([], {})).shape == (500, 800, 4)


def _grid():
    return pd.DataFrame({"disks": [1, 1, 4, 4], "threads": [4, 32, 4, 32],
                         "peak_rate": [310.0, 350.0, 620.0, 905.0]})


def test_surface_png_2x2_without_and_with_fit():
    df = _grid()
    assert _decode_png(surface_plots.surface_png(df, "disks", "threads")).shape == (550, 700, 4)
    fit = fit_quadratic(df[["disks", "threads"]].to_numpy(float), df["peak_rate"], degree=2)
    assert _decode_png(surface_plots.surface_png(df, "disks", "threads", fit)).shape == (550, 700, 4)
    # a model fitted on coded factors, with the coding passed in
    code = lambda rows: np.array([[(r["disks"] - 2.5) / 1.5, (r["threads"] - 18) / 14] for r in rows])  # noqa: E731
    coded = fit_quadratic(code(df.to_dict("records")), df["peak_rate"], degree=2)
    assert _decode_png(surface_plots.surface_png(df, "disks", "threads", coded, code=code)).shape == (550, 700, 4)


def test_surface_png_rejects_bad_inputs():
    df = _grid()
    with pytest.raises(ValueError, match="column 'memory_mb' missing"):
        surface_plots.surface_png(df, "disks", "memory_mb")
    fit3 = fit_quadratic(np.random.default_rng(0).random((12, 3)), np.arange(12.0) + 1, degree=2)
    with pytest.raises(ValueError, match="exactly 2 numeric factors"):
        surface_plots.surface_png(df, "disks", "threads", fit3)


def test_history_png():
    hist = [{"date": "2026-11-20", "peak_rate": 900, "ci_lo": 850, "ci_hi": 950},
            {"date": "2026-11-21", "peak_rate": 920, "peak_rate_ci": [880, 990]}]
    cur = {"date": "2026-11-22", "peak_rate": 700, "ci_lo": 650, "ci_hi": 760, "regression": True}
    assert _decode_png(history_plot.history_png(hist, cur)).shape == (500, 800, 4)
    assert _decode_png(history_plot.history_png([], None)).shape == (500, 800, 4)


# --------------------------------------------------------------------------- HTML

_EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


def test_rating_report_html(rating):
    spec = copy.deepcopy(rating["spec"])
    spec["workload"] = "<script>alert(1)</script>"
    validation = {"success": False, "excluded": {"7": "mix error 12% > 5% on <read>"}, "gx": {"n": 1}}
    page = report.rating_report_html(spec, rating["result"], rating["trials"], rating["sysinfo"], validation)
    assert page.startswith("<!DOCTYPE html>")
    assert "898.9" in page and "CONVERGED" in page
    for t in rating["trials"]:
        row = '<tr class="invalid">' if not t["valid"] else "<tr>"
        assert f'{row}<td>{t["n"]}</td>' in page
    for op in rating["trials"][0]["raw"]["ops"]:
        assert f'<td class="l">{op}</td>' in page
    assert "mix error 12% &gt; 5% on &lt;read&gt;" in page
    assert "achieved rate &lt; 90% of offered &lt;b&gt;" in page
    assert "<th>host steal %</th>" in page and "<td>3.14</td>" in page   # absent elsewhere: "—"
    assert "<th>drain s</th>" in page and "<td>2.72</td>" in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert not _EXTERNAL.search(page)
    assert page.count('src="data:image/png;base64,') == 5
    assert "6.18.44-fc-v657" in page and "RPC_Ioq_ThrdMax" in page    # sysinfo: kernel, server config
    assert "<td>policy / stop rule</td><td class=\"l\">binsearch / inside</td>" in page   # who rated it


def test_the_headline_names_the_factor_pack_s_levels(rating):
    """A rating of an external filer with a factor pack: the headline names the filer, the pack's
    file and the levels it applied; without a pack, the factors alone."""
    spec = {**rating["spec"], "external": {"address": "10.251.11.1", "export": "/export"},
            "factor_pack": {"path": "/home/eng/packs/filer.yml"}, "pack_factors": {"nb_worker": 64, "cache_mode": "b"}}
    page = report.rating_report_html(spec, rating["result"], rating["trials"], rating["sysinfo"])
    head = page[page.index("<h1>"):page.index("</h1>")]
    assert "10.251.11.1" in head and "filer.yml: nb_worker=64, cache_mode=b" in head, head
    assert report.rated_text({"factors": {"threads": 4}}) == "threads=4"


def test_several_goals_give_a_row_and_a_line_each(rating):
    """A two-goal result (the recorded rating's goal and a hand-made lower one): the report's goals
    table has one row per goal, the latency-vs-load plot one λ* line per goal in its own colour."""
    res = copy.deepcopy(rating["result"])
    head = {f: res.get(f) for f in GOAL_FIELDS}
    low = {**head, "r_sat_ms": 10.0, "l_sat_ms": 500.0, "peak_rate": 850.5, "peak_rate_ci": [800.0, 880.0], "bracket": [800.0, 900.0],
           "converged": False, "reason": "budget exhausted <b>"}
    res["per_goal"] = {"40": head, "10": low}
    page = report.rating_report_html(rating["spec"], res, rating["trials"])
    table = page.split("<h2>Goals: one search, one trial log</h2>")[1].split("<h2>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", table)[1:]
    assert [re.findall(r"<td[^>]*>(.*?)</td>", r)[:5] for r in rows] == [    # recorded before L_sat per goal: —
        ["10", "500", "850.5", "[800, 880]", "[800, 900]"], ["40", "—", "898.9", "[875, 1200]", "[875, 900]"]]
    assert "<td>NO</td>" in rows[0] and "budget exhausted &lt;b&gt;" in rows[0] and "<td>yes</td>" in rows[1]
    assert "Goals:" not in report.rating_report_html(rating["spec"], rating["result"], rating["trials"])
    ax = matplotlib.figure.Figure().add_subplot()
    plots._goal_lines(ax, goal_results(res))
    lam = [ln for ln in ax.lines if ln.get_label().startswith("R_sat")]
    assert [ln.get_label() for ln in lam] == ["R_sat 10 ms: λ* = 850.5 ops/s", "R_sat 40 ms: λ* = 898.9 ops/s"]
    assert [ln.get_xdata()[0] for ln in lam] == [850.5, res["peak_rate"]]
    assert len({ln.get_color() for ln in lam}) == 2
    assert _decode_png(plots.latency_vs_load_png(rating["trials"], res, rating["spec"])).shape == (500, 800, 4)


def test_the_report_shows_the_load_curve_its_csv_and_the_ort(rating):
    """The load curve's figure with its caption and the link to its CSV; the ORT in the headline table:
    the loads that met R_sat 40 ms (200, 875 and 900 ops/s; 1000 missed it, 1600's one trial is
    invalid here), achieved = offered in these records, trapezoids up to 900 ÷ 900."""
    trials = rating["trials"]
    mean = lambda load: np.mean([t["mean_ms"] for t in trials if t["load_ops_s"] == load])  # noqa: E731
    ort = ((875 - 200) * (mean(200) + mean(875)) / 2 + (900 - 875) * (mean(875) + mean(900)) / 2) / 900
    page = report.rating_report_html(rating["spec"], rating["result"], trials, curve_href="load_curve.csv")
    assert f'<td>overall response time (ORT)</td><td class="l">{ort:.3g} ms</td>' in page
    assert '<img alt="load_curve.png"' in page and "one point per offered load, the mean of its valid trials" in page
    assert 'Data: <a href="load_curve.csv">load_curve.csv</a>' in page
    recorded = dict(rating["result"], overall_response_time_ms=None)       # as result.json holds it: undefined
    page = report.rating_report_html(rating["spec"], recorded, trials)
    assert '<td>overall response time (ORT)</td><td class="l">—</td>' in page and "load_curve.csv" not in page


def test_rating_report_uses_given_plots(rating):
    png = history_plot.history_png([], None)
    page = report.rating_report_html(rating["spec"], rating["result"], rating["trials"], plots={"only.png": png})
    assert page.count("data:image/png;base64,") == 1 and "only.png" in page
    assert "no great_expectations result recorded" in page


def test_surface_report_html():
    samples = [dict(r, rating_id=f"r{i}", n_trials=5, seed_load=None) for i, r in enumerate(_grid().to_dict("records"))]
    samples[0]["rating_id"] = "<img src=x>"
    page = surface_report.surface_report_html(
        {"sweep_id": "sw1", "factors": ["disks", "threads"], "levels": {"disks": [1, 4], "threads": [4, 32]},
         "design": "fullfact"},
        samples, {"mape_loo": 12.5, "mape_all": 3.25, "r2": 0.97, "coefficients": {"1": 546.25, "disks": 216.2}},
        {"surface.png": surface_plots.surface_png(_grid(), "disks", "threads")})
    assert "fullfact" in page and "12.5" in page and "3.25" in page and "216.2" in page and "905" in page
    assert "&lt;img src=x&gt;" in page and "<img src=x>" not in page
    assert not _EXTERNAL.search(page)
    samples[0]["peak_rate_ci"] = [3148.55, 3657.41]           # each λ* with its interval, side by side
    page = surface_report.surface_report_html({"sweep_id": "sw1", "factors": ["disks", "threads"]}, samples, None)
    assert "<th>peak_rate_ci</th>" in page.replace(' class="l"', "") and "[3149, 3657]" in page
    samples[1]["report_href"] = "../../ratings/r1/report.html"
    samples[0]["report_href"] = '../../ratings/"x/report.html'
    page = surface_report.surface_report_html({"sweep_id": "sw1", "factors": ["disks", "threads"]}, samples, None)
    assert '<a href="../../ratings/r1/report.html">r1</a>' in page
    assert '<a href="../../ratings/&quot;x/report.html">&lt;img src=x&gt;</a>' in page
    assert '<td class="l">r2</td>' in page or ">r2</td>" in page       # no href: plain text


def test_nightly_report_shows_regression():
    verdicts = [
        {"name": "web-mem128", "config": {"memory_mb": 96}, "current_peak": 600.0, "baseline_peak": 900.0,
         "rel_change": -1 / 3, "diff_ci": [-350.0, -250.0], "welch_p": 0.001, "regression": True,
         "test": "welch", "reason": "λ* down 33% (significant, beyond 10% tolerance)", "report_url": "s3://workbench/ratings/x/report.html"},
        {"name": "db-tp", "config": {"disks": 2}, "current_peak": 505.0, "baseline_peak": 500.0, "rel_change": 0.01,
         "diff_ci": [-20.0, 30.0], "welch_p": 0.6, "regression": False, "reason": "within tolerance",
         "report_url": None},
    ]
    page = nightly_report.nightly_report_html("2026-11-22", verdicts, {"history.png": history_plot.history_png([], None)})
    assert '<span class="status bad">REGRESSION</span>' in page
    assert '<span class="status ok">OK</span>' in page
    assert "1 of 2 baseline(s) regressed" in page and "-33.3 %" in page
    assert "<th>R_sat ms</th>" in page
    assert ">decided by</th>" in page and ">Welch</td>" in page
    assert ">s3://workbench/ratings/x/report.html</td>" in page     # no href: the URL as text
    linked = nightly_report.nightly_report_html("2026-11-22", [{**verdicts[0], "report_href": "../../ratings/x/report.html"}])
    assert '<a href="../../ratings/x/report.html">s3://workbench/ratings/x/report.html</a>' in linked
    ok_page = nightly_report.nightly_report_html("2026-11-22", verdicts[1:], None)
    assert "REGRESSION" not in ok_page and "ALL OK" in ok_page
    stuck = {**verdicts[1], "inconclusive": True, "reason": "tonight's rating did not converge (...)"}
    grey = nightly_report.nightly_report_html("2026-11-22", [stuck], None)
    assert grey.count('<span class="status na">NO VERDICT</span>') == 2 and "ALL OK" not in grey
    assert not _EXTERNAL.search(page)


def test_rating_report_on_40_trials(rating):
    base = [t for t in rating["trials"] if t["valid"]]
    trials = []
    for n in range(40):
        t = copy.deepcopy(base[n % len(base)])
        t["n"] = n
        trials.append(t)
    page = report.rating_report_html(rating["spec"], rating["result"], trials)
    assert all(f"<tr><td>{n}</td>" in page for n in range(40))


def test_mean_at_peak_names_its_load_and_has_no_negative_bound(rating):
    # the real rating: λ* 898.9 interpolated, the tested load nearest it 900 ops/s; the t-interval
    # of its 4 trial means is [−62.4, 215.9] ms: only its upper end is a statement (issue 54: not
    # an interval from 0, no accuracy of 0)
    page = report.rating_report_html(rating["spec"], rating["result"], rating["trials"])
    assert "mean at 900 ops/s (tested load nearest λ*)" in page
    assert "76.75 ms, ≤ 215.89 ms (its CI&#x27;s upper end; its lower end reaches 0 ms" in page
    assert "-62.39" not in page and "CI [0," not in page and "accuracy 0.000" not in page
