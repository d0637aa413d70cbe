"""The per-interval figure (analysis.trial_series): the series of the trials at the load nearest λ*."""
from __future__ import annotations

import io

import matplotlib.image as mpimg

from analysis import trial_series

SPEC = {"spec": {"r_sat_ms": 40.0}}


def _trial(n, load, means, valid=True):
    series = {"interval_s": 1.0, "t_s": [-1.0, 0.0, 1.0, 2.0], "mean_ms": means, "ops": [5, 5, 5, 5]}
    return {"n": n, "load_ops_s": load, "valid": valid, "raw": {"timeseries": series}}


TRIALS = [_trial(0, 400.0, [1.0, 1.1, 1.2, 1.0]), _trial(1, 800.0, [9.0, 30.0, None, 41.0]),
          _trial(2, 800.0, [8.0, 20.0, 400.0, 25.0], valid=False), _trial(3, 1600.0, [50.0] * 4)]


def test_the_series_of_the_load_nearest_the_peak():
    near, series = trial_series.interval_series(TRIALS, peak_rate=900.0)
    assert near == 800.0 and [t["n"] for t, _, _ in series] == [1, 2]
    assert series[0][1:] == ([-1.0, 0.0, 2.0], [9.0, 30.0, 41.0])    # an interval without replies: left out
    assert trial_series.interval_series(TRIALS, peak_rate=None)[0] == 1600.0     # no λ*: the highest load
    assert trial_series.interval_series([{"n": 0, "load_ops_s": 400.0, "raw": {}}], 400.0) == (None, [])


def test_the_figure_is_a_png_with_and_without_series():
    for trials in (TRIALS, []):
        png = trial_series.intervals_png(trials, {"peak_rate": 900.0}, SPEC)
        assert mpimg.imread(io.BytesIO(png), format="png").shape == (500, 800, 4)
