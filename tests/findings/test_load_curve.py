"""The load curve (findings.load_curve): SPEC SFS's overall response time by hand, its guards, the
curve's rows and CSV from a small synthetic trial log (helpers.curve_log; its figure:
tests/reports/test_load_curve_plot.py)."""
from __future__ import annotations

import csv
import io
import math

import pytest

from helpers import curve_log, curve_trial
from workbench.findings.load_curve import (CSV_COLUMNS, curve_csv, curve_rows, ort_curve, ort_of, ort_text,
                                           overall_response_time_ms, rating_ort_ms)

# (offered ops/s, achieved ops/s, mean ms)
LINE = [(100.0, 100.0, 1.0), (200.0, 200.0, 2.0), (400.0, 400.0, 4.0)]


def test_ort_by_hand():
    """(1/400)·[100·(1+2)/2 + 200·(2+4)/2] = (150 + 600)/400 = 1.875 ms; from the origin
    (the older convention) 100·(0+1)/2 = 50 more: 800/400 = 2.0 ms."""
    assert overall_response_time_ms(LINE) == pytest.approx(1.875)
    assert overall_response_time_ms(reversed(LINE)) == pytest.approx(1.875)      # any input order
    assert overall_response_time_ms(LINE, from_origin=True) == pytest.approx(2.0)


def test_points_past_the_peak_throughput_are_left_out():
    """Offered 800 completed only 350 ops/s at 50 ms: past the peak (400), not in the area."""
    past = LINE + [(800.0, 350.0, 50.0)]
    assert [p[0] for p in ort_curve(past)] == [100.0, 200.0, 400.0]
    assert overall_response_time_ms(past) == pytest.approx(1.875)


def test_the_curve_is_integrated_in_achieved_throughput_order():
    """Below the peak, offered 200 achieved 250 and offered 300 only 200: integrated along achieved
    throughput, (100,1) (200,3) (250,2) (400,4): [100·2 + 50·2.5 + 150·3]/400 = 775/400."""
    pts = [(100.0, 100.0, 1.0), (200.0, 250.0, 2.0), (300.0, 200.0, 3.0), (400.0, 400.0, 4.0)]
    assert [p[1] for p in ort_curve(pts)] == [100.0, 200.0, 250.0, 400.0]
    assert overall_response_time_ms(pts) == pytest.approx(775.0 / 400.0)


def test_fewer_than_two_points_leave_the_ort_undefined():
    assert overall_response_time_ms([]) is None
    assert overall_response_time_ms(LINE[:1]) is None
    assert overall_response_time_ms([(100.0, 500.0, 1.0), (200.0, 300.0, 2.0)]) is None   # the peak comes first
    assert overall_response_time_ms([(100.0, math.nan, 1.0), (200.0, 200.0, 2.0)]) is None
    assert ort_text({"overall_response_time_ms": None}, []) == "—"


def test_curve_rows_count_what_the_controller_counted():
    result, trials = curve_log()
    rows = {r["offered_ops_s"]: r for r in curve_rows(result, trials)}
    assert sorted(rows) == [100, 200, 300, 400, 500]
    assert (rows[100]["trials"], rows[100]["valid"]) == (2, 2)
    assert rows[100]["achieved_ops_s"] == pytest.approx(99.0) and rows[100]["mean_ms"] == pytest.approx(1.5)
    assert rows[100]["p99_ms"] == pytest.approx(4.0) and rows[100]["p95_ms"] == pytest.approx(3.0)
    assert (rows[200]["trials"], rows[200]["valid"], rows[200]["mean_ms"]) == (2, 1, 3.0)   # harness failure: no trial
    assert (rows[300]["trials"], rows[300]["valid"], rows[300]["mean_ms"]) == (3, 1, 5.0)
    assert rows[200]["p99_ms"] is None
    # in the ORT: the loads that met the goal, up to the peak throughput (300: 296 ops/s); 400 missed
    # R_sat, 500 comes after the peak
    assert [r["in_ort"] for r in rows.values()] == [True, True, True, False, False]
    # (1/296)·[(199−99)·(1.5+3)/2 + (296−199)·(3+5)/2]
    assert rating_ort_ms(result, trials) == pytest.approx((100 * 2.25 + 97 * 4.0) / 296)
    assert ort_of(result, trials) == rating_ort_ms(result, trials)          # a result without the key
    assert ort_of({**result, "overall_response_time_ms": 1.25}, trials) == 1.25
    assert ort_text({**result, "overall_response_time_ms": 1.25}, trials) == "1.25 ms"


def test_the_csv_opens_as_a_table_with_units_in_its_header():
    result, trials = curve_log()
    text = curve_csv(curve_rows(result, trials))
    assert text.startswith(",".join(CSV_COLUMNS) + "\r\n")
    assert CSV_COLUMNS == ("offered_ops_s", "achieved_ops_s", "mean_ms", "p95_ms", "p99_ms", "trials", "valid", "in_ort")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0] == {"offered_ops_s": "100", "achieved_ops_s": "99", "mean_ms": "1.5", "p95_ms": "3",
                       "p99_ms": "4", "trials": "2", "valid": "2", "in_ort": "1"}
    assert rows[1]["p99_ms"] == "" and rows[3]["in_ort"] == "0" and len(rows) == 5
    invalid_only = curve_csv(curve_rows({}, [curve_trial(0, 100, 50.0, 9.0, valid=False)]))
    assert invalid_only.splitlines()[1] == "100,,,,,1,0,0"          # a load without a valid trial: empty cells
