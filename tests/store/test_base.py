"""The store's layout: every object name the pipeline writes or reads is built by a Store method, and
each gives the key the layout had before the names moved into the store, byte for byte."""
from __future__ import annotations

import pytest

from workbench.store.base import Store
from workbench.store.local import LocalStore

RID, SID, NIGHT = "rate_peak__manual__2026-11-24T10_00_00_00_00", "map_surface__s1", "2026-11-03"

# helper → the key as the pipeline spelled it (ratings/, surfaces/, nightly/, comparisons/)
KEYS = [
    (lambda s: s.rating_prefix(RID), f"ratings/{RID}/"),
    (lambda s: s.spec_key(RID), f"ratings/{RID}/spec.json"),
    (lambda s: s.workload_key(RID), f"ratings/{RID}/workload.wl"),
    (lambda s: s.sysinfo_key(RID), f"ratings/{RID}/sysinfo.json"),
    (lambda s: s.timing_key(RID, "provision"), f"ratings/{RID}/timings/provision.json"),
    (lambda s: s.timing_key(RID, "deploy"), f"ratings/{RID}/timings/deploy.json"),
    (lambda s: s.gx_key(RID), f"ratings/{RID}/gx.json"),
    (lambda s: s.result_key(RID), f"ratings/{RID}/result.json"),
    (lambda s: s.rating_plot_key(RID, "latency_vs_load.png"), f"ratings/{RID}/plots/latency_vs_load.png"),
    (lambda s: s.rating_report_key(RID), f"ratings/{RID}/report.html"),
    (lambda s: s.trials_prefix(RID), f"ratings/{RID}/trials/"),
    (lambda s: s.trial_key(RID, 0), f"ratings/{RID}/trials/00000.json"),
    (lambda s: s.trial_key(RID, 123456), f"ratings/{RID}/trials/123456.json"),
    (lambda s: s.trials_parquet_key(RID), f"ratings/{RID}/trials.parquet"),
    (lambda s: s.telemetry_parquet_key(RID), f"ratings/{RID}/telemetry.parquet"),
    (lambda s: s.load_curve_csv_key(RID), f"ratings/{RID}/load_curve.csv"),
    (lambda s: s.surface_prefix(SID), f"surfaces/{SID}/"),
    (lambda s: s.sweep_plan_key(SID), f"surfaces/{SID}/plan.json"),
    (lambda s: s.sample_key(SID, 7), f"surfaces/{SID}/samples/007.json"),
    (lambda s: s.round_key(SID, 12), f"surfaces/{SID}/rounds/012.json"),
    (lambda s: s.model_key(SID), f"surfaces/{SID}/model.json"),
    (lambda s: s.samples_parquet_key(SID), f"surfaces/{SID}/samples.parquet"),
    (lambda s: s.surface_plot_key(SID, "surface_threads_read_iops.png"),
     f"surfaces/{SID}/plots/surface_threads_read_iops.png"),
    (lambda s: s.surface_report_key(SID), f"surfaces/{SID}/report.html"),
    (lambda s: s.nightly_prefix(NIGHT), f"nightly/{NIGHT}/"),
    (lambda s: s.night_config_key(NIGHT), f"nightly/{NIGHT}/config.json"),
    (lambda s: s.baseline_key(NIGHT, "web"), f"nightly/{NIGHT}/web.json"),
    (lambda s: s.verdicts_key(NIGHT), f"nightly/{NIGHT}/verdicts.json"),
    (lambda s: s.nightly_report_key(NIGHT), f"nightly/{NIGHT}/report.html"),
    (lambda s: s.comparison_verdict_key("rate_peak__a", "rate_peak__b"),
     "comparisons/rate_peak__a__vs__rate_peak__b/verdict.json"),
    (lambda s: s.comparison_report_key("rate_peak__a", "rate_peak__b"),
     "comparisons/rate_peak__a__vs__rate_peak__b/report.html"),
]


@pytest.mark.parametrize("helper, key", KEYS, ids=[k for _, k in KEYS])
def test_each_helper_gives_the_layouts_key(tmp_path, helper, key):
    assert helper(LocalStore(tmp_path)) == key


def test_the_helpers_refuse_unsafe_ids(tmp_path):
    s = LocalStore(tmp_path)
    for call in (lambda: s.result_key("a/b"), lambda: s.sweep_plan_key(".."), lambda: s.verdicts_key(""),
                 lambda: s.comparison_report_key("ok", "has space"), lambda: s.trial_key(RID, -1)):
        with pytest.raises(ValueError):
            call()


def test_every_layout_method_is_pinned():
    """A new key helper on Store gets its line in KEYS."""
    called = {h.__code__.co_names[0] for h, _ in KEYS}
    layout = {"rating_prefix", "spec_key", "workload_key", "sysinfo_key", "timing_key", "gx_key", "result_key",
              "rating_plot_key", "rating_report_key", "trials_prefix", "trial_key", "trials_parquet_key",
              "telemetry_parquet_key", "load_curve_csv_key",
              "surface_prefix", "sweep_plan_key", "sample_key", "round_key", "model_key", "samples_parquet_key",
              "surface_plot_key", "surface_report_key", "nightly_prefix", "night_config_key", "baseline_key",
              "verdicts_key", "nightly_report_key", "comparison_verdict_key", "comparison_report_key"}
    assert called == layout
    helpers = {n for n in dir(Store) if n.endswith(("_key", "_prefix"))} - {"delete_prefix"}
    assert helpers - layout == {"rating_key", "surface_key", "nightly_key", "comparison_key"}


def test_listings_find_the_objects_the_keys_name(tmp_path):
    s = LocalStore(tmp_path)
    for key in (s.sample_key(SID, 1), s.sample_key(SID, 0), s.surface_key(SID, "samples/notes.txt"),
                s.round_key(SID, 1), s.round_key(SID, 0), s.baseline_key("2026-11-02", "web"),
                s.baseline_key("2026-11-01", "web"), s.baseline_key("2026-11-01", "db"),
                s.night_config_key("2026-11-01"), s.nightly_key("2026-11-01", "web/deeper.json")):
        s.put_json(key, {})
    assert s.sample_keys(SID) == [f"surfaces/{SID}/samples/000.json", f"surfaces/{SID}/samples/001.json"]
    assert s.round_keys(SID) == [f"surfaces/{SID}/rounds/000.json", f"surfaces/{SID}/rounds/001.json"]
    assert s.baseline_nights("web") == [("2026-11-01", "nightly/2026-11-01/web.json"),
                                        ("2026-11-02", "nightly/2026-11-02/web.json")]
    assert s.baseline_nights("config") == [("2026-11-01", "nightly/2026-11-01/config.json")]  # as before
