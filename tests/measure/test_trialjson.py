"""fstress's trial JSON → TrialResult, directly."""
from __future__ import annotations

from helpers import fstress_json

from workbench.measure.trialjson import result_from_json


def test_result_from_json_directly():
    t = result_from_json(fstress_json(ops_total=0, achieved_rate=500.0), 500, 5)
    assert not t.valid and "no operations" in t.reason
    t = result_from_json(fstress_json(), 500, 5, min_achieved=0.99)
    assert t.valid


def test_timeouts_in_an_overloaded_trial_stay_valid_with_overload_ms():
    raw = fstress_json(timeouts=40, mean_ms=900.0)
    assert not result_from_json(raw, 500, 5).valid
    t = result_from_json(raw, 500, 5, overload_ms=50.0)
    assert t.valid and t.reason.startswith("overloaded: 40 timeouts")
    # below the threshold, or with NFS errors, timeouts still invalidate
    assert not result_from_json(fstress_json(timeouts=4, mean_ms=20.0), 500, 5, overload_ms=50.0).valid
    assert not result_from_json(fstress_json(timeouts=4, errors=1, mean_ms=900.0), 500, 5, overload_ms=50.0).valid
