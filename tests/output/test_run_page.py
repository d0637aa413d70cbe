"""Which ratings a DAG run made, found in a local store from the run's ids alone: a rate_peak run's
one rating, a sweep's planned and rated samples (a real `start_sweep` plan), a night's baselines and
its confirming re-run (the recorded nights of tests/data/nightly_store); and which objects the page
may serve. The page itself, through the plugin's app: tests/plugins/test_workbench_ui.py."""
from __future__ import annotations

import pytest
from helpers import load_recorded_nights

from workbench.output import run_page
from workbench.params.plan import rating_id_for
from workbench.pipeline import sweep
from workbench.store.local import LocalStore

RUN = "manual__2026-11-28T10:00:00+00:00"
NIGHT_RUN = "scheduled__2026-11-03T03:00:00+00:00"


@pytest.fixture
def store(tmp_path):
    s = LocalStore(tmp_path / "store")
    s.ensure_bucket()
    return s


def test_a_rate_peak_run_is_one_rating_even_before_anything_is_stored(store):
    runs = run_page.run_ratings(store, "rate_peak", RUN)
    rid = rating_id_for("rate_peak", RUN)
    assert (runs.kind, runs.rating_ids) == ("rating", (rid,))
    assert run_page.no_result_line(store, rid).startswith("No rating yet: nothing stored")
    store.put_json(store.spec_key(rid), {"spec": {}})
    for n in range(3):
        store.put_trial(rid, n, {"n": n, "load_ops_s": 100.0 * (n + 1)})
    assert run_page.trial_count(store, rid) == 3
    assert "has 3 trials so far" in run_page.no_result_line(store, rid)


def test_a_run_of_a_dag_that_rates_nothing_says_so(store):
    runs = run_page.run_ratings(store, "compare_ratings", RUN)
    assert runs.kind == "none" and "compare_ratings" in runs.note and not runs.prefixes(store)


def test_a_sweep_has_its_planned_samples_ratings_rated_or_not(store):
    sid = rating_id_for("map_surface", RUN)
    jobs = sweep.start_sweep(store, {"workload": "web_server", "profile": "smoke",
                                     "factors": {"threads": [8, 16], "read_iops": [90, 100]}}, sid)
    planned = tuple(j["item"]["plan"]["rating_id"] for j in jobs)
    runs = run_page.run_ratings(store, "map_surface", RUN)
    assert (runs.kind, runs.subject, runs.rating_ids) == ("sweep", sid, planned) and len(planned) == 4
    assert runs.report_key == store.surface_report_key(sid)
    # a sample rated in a later round (an active design) joins from its record
    store.put_json(store.sample_key(sid, 4), {"i": 4, "rating_id": f"{sid}__s04", "peak_rate": 900.0})
    assert run_page.run_ratings(store, "map_surface", RUN).rating_ids == (*planned, f"{sid}__s04")


def test_a_night_has_its_baselines_ratings_and_its_reruns_and_names_the_pending_ones(store):
    load_recorded_nights(store, "2026-11-03")
    cfg = store.get_json(store.night_config_key("2026-11-03"))
    cfg["baselines"].append({"name": "db", "params": {"profile": "smoke"}})     # still rating
    store.put_json(store.night_config_key("2026-11-03"), cfg)
    store.put_json(store.verdicts_key("2026-11-03"),
                   [{"name": "web", "rerun": {"rating_id": "nightly__2026-11-03__web__rerun0"}}])
    runs = run_page.run_ratings(store, "nightly_regression", NIGHT_RUN)
    assert (runs.kind, runs.subject) == ("night", "2026-11-03")
    assert runs.rating_ids == ("nightly__2026-11-03__web", "nightly__2026-11-03__web__rerun0")
    assert runs.pending == ("db",) and runs.report_key == store.nightly_report_key("2026-11-03")
    assert run_page.run_ratings(store, "nightly_regression", "manual_no_date").kind == "none"


def test_only_the_runs_own_plots_reports_and_tables_are_servable(store):
    runs = run_page.run_ratings(store, "rate_peak", RUN)
    rid = runs.subject
    ok = {f"ratings/{rid}/plots/utilization.png": "image/png",
          f"ratings/{rid}/report.html": "text/html; charset=utf-8",
          f"ratings/{rid}/load_curve.csv": "text/csv; charset=utf-8"}
    assert {k: run_page.servable(store, runs, k) for k in ok} == ok
    for refused in (f"ratings/{rid}/result.json", f"ratings/{rid}/spec.json",     # not a page's object
                    f"ratings/{rid}x/report.html", "ratings/other/report.html",   # another rating
                    f"ratings/{rid}/../other/report.html", f"/ratings/{rid}/report.html",
                    "surfaces/x/report.html"):
        assert run_page.servable(store, runs, refused) is None, refused


def test_plots_are_every_png_with_the_curve_and_the_telemetry_first(store):
    rid = rating_id_for("rate_peak", RUN)
    for name in ("search_trace.png", "utilization.png", "intervals.png", "load_curve.png", "notes.txt"):
        store.put_bytes(store.rating_plot_key(rid, name), b"x")
    assert [k.rsplit("/", 1)[1] for k in run_page.plot_keys(store, rid)] == [
        "load_curve.png", "utilization.png", "intervals.png", "search_trace.png"]
