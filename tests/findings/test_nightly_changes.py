"""findings.nightly_changes: a night's log-λ* standard error (hand-computed), the series, the suspects of
a short and a long history, the change point's round trip, the settings diff."""
from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.findings import changepoints as cpm
from workbench.findings import nightly_changes as nc


def test_log_se_from_a_nights_interval_hand_computed():
    # [900, 1100] at c 0.90: ln(1100/900) = 0.2006707 over 2·1.6448536 → 0.0610001
    assert nc.log_se([900.0, 1100.0], 0.90) == pytest.approx(0.2006707 / (2 * 1.6448536), rel=1e-6)
    assert nc.log_se([0.0, 1100.0], 0.90) is None and nc.log_se([900.0, None], 0.9) is None
    assert nc.log_se(None, 0.9) is None


def test_series_drops_nights_without_a_rate_and_fills_unknown_errors_with_the_median():
    pts = [{"date": "d1", "peak_rate": 100.0, "peak_rate_ci": [90.0, 110.0], "ci_level": 0.9},
           {"date": "d2", "peak_rate": None},
           {"date": "d3", "peak_rate": 120.0, "peak_rate_ci": [0.0, None], "ci_level": 0.9}]
    values, se, nights = nc.series(pts)
    assert values == [100.0, 120.0] and nights == ["d1", "d3"]
    assert se == [pytest.approx(nc.log_se([90.0, 110.0], 0.9))] * 2
    assert nc.series(pts[1:]) == ([120.0], None, ["d3"])


def test_a_short_history_suspects_what_the_per_night_test_flags():
    detector, cp = nc.suspect([1000.0, 1000.0, 500.0], None, per_night_regression=True)
    assert detector == nc.SHORT and cp.index == 2 and cp.before == pytest.approx(1000.0)
    assert cp.rel_change == pytest.approx(-0.5)
    assert nc.suspect([1000.0, 1000.0, 500.0], None, per_night_regression=False) == (nc.SHORT, None)
    # the re-run confirms when nearer the new level (600 is; 900 is not)
    assert nc.confirmed(nc.SHORT, [], None, 600.0, cp) and not nc.confirmed(nc.SHORT, [], None, 900.0, cp)
    assert not nc.confirmed(nc.SHORT, [], None, None, cp)


def test_a_long_history_suspects_a_recent_drop_only():
    rng = np.random.default_rng(1)
    y = np.exp(rng.normal(0, 0.01, 14)) * 1000.0
    drop, rise = y.copy(), y.copy()
    drop[12:] *= 0.9
    rise[12:] *= 1.1
    detector, cp = nc.suspect(list(drop), None, per_night_regression=False)
    assert detector == nc.DETECTOR and cp.index == 12 and cp.drop
    assert nc.suspect(list(rise), None, False) == (nc.DETECTOR, None)           # a new level up: no suspect
    assert nc.suspect(list(y), None, True) == (nc.DETECTOR, None)               # the per-night test ignored


def test_the_change_point_survives_its_json_round_trip():
    cp = cpm.ChangePoint(3, 1000.0, 900.0, -0.1, (-0.15, math.nan), math.nan, 0.02, 1)
    d = nc.change_summary(cp, ["a", "b", "c", "d", "e"])
    assert (d["first_night"], d["last_good_night"], d["rel_ci"], d["p"]) == ("d", "c", [-0.15, None], None)
    back = nc.from_summary(d)
    assert back.index == 3 and back.rel_ci[0] == -0.15 and math.isnan(back.rel_ci[1]) and math.isnan(back.p)


def test_settings_diff_names_each_changed_setting_by_its_path():
    before = {"params": {"read_iops": 100, "fs": "ext4"}, "sysinfo": {"kernel": "6.1", "pkgs": {"ganesha": "4.3"}},
              "plan": {"rating_id": "x1", "spec": {"seed_load": 900}}}
    after = {"params": {"read_iops": 40, "fs": "ext4", "disks": 2}, "sysinfo": {"kernel": "6.1",
             "pkgs": {"ganesha": "4.4"}}, "plan": {"rating_id": "x2", "spec": {"seed_load": 700}}}
    got = nc.settings_diff(before, after, ignore=frozenset({"rating_id", "seed_load"}))
    assert got == [{"setting": "params.disks", "before": None, "after": 2},
                   {"setting": "params.read_iops", "before": 100, "after": 40},
                   {"setting": "sysinfo.pkgs.ganesha", "before": "4.3", "after": "4.4"}]
    assert nc.settings_diff(before, before) == []


def test_what_differs_by_run_alone_is_not_a_changed_setting():
    """The rating id, the lease's fencing token and the like differ on every night: never "changed"."""
    from workbench.pipeline.nightly_confirm import VOLATILE
    before = {"plan": {"rating_id": "nightly__a__web", "lease_token": 1, "slot": "slot1"}}
    after = {"plan": {"rating_id": "nightly__b__web", "lease_token": 7, "slot": "slot1"}}
    assert nc.settings_diff(before, after, ignore=VOLATILE) == []
