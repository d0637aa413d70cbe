"""fstress's per-interval series: exact merge across load hosts, compact form, trial log column."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from hdrh.histogram import HdrHistogram
from helpers import fstress_json

from workbench.measure.timeseries import SeriesError, merge_series
from workbench.measure.trialjson import result_from_json, with_timeseries
from workbench.store.local import LocalStore


def _hist(*us: int) -> str:
    h = HdrHistogram(1, 120_000_000, 3)      # fstress's geometry (results.HistMinUs..HistMaxUs, 3 digits)
    for v in us:
        h.record_value(v)
    return h.encode().decode()


def _iv(k, count, errors, timeouts, *lat_ms):
    us = [int(x * 1000) for x in lat_ms]
    return {"k": k, "t_s": float(k), "len_s": 1.0, "warmup": k < 0, "sent": count, "count": count,
            "errors": errors, "timeouts": timeouts, "retransmits": 0,
            "exact": {"n": len(us), "sum_ns": sum(us) * 1000, "sumsq_ns2": "0", "max_ns": max(us, default=0) * 1000},
            "histogram": _hist(*us), "arrived": count}


HOST_A = {"interval_s": 1, "outstanding_at_stop": 3, "stop_replied": 2, "stop_errors": 0, "stop_timeouts": 1,
          "intervals": [_iv(-1, 1, 0, 0, 0.5), _iv(0, 3, 0, 1, 1, 3), _iv(1, 1, 0, 0, 2)]}
HOST_B = {"interval_s": 1, "outstanding_at_stop": 1, "stop_replied": 1, "stop_errors": 0, "stop_timeouts": 0,
          "intervals": [_iv(0, 2, 1, 0, 5, 5)]}          # one of its replies an NFS error


def test_merge_of_two_hosts_by_hand():
    m = merge_series([HOST_A, HOST_B])
    assert m["t_s"] == [-1.0, 0.0, 1.0]
    assert m["ops"] == [1, 5, 1]                   # k=0: 3 + 2 finished calls
    assert m["errors"] == [0, 2, 0]                # k=0: A's timeout + B's NFS error
    # k=0: replies 1, 3, 5, 5 ms → mean 14/4 = 3.5 ms; p95 rank ⌊0.95·4 + 0.5⌋ = 4 → 5 ms, whose
    # HDR bucket (4 µs wide from 4096 µs) tops out at 5003 µs
    assert m["mean_ms"] == [0.5, 3.5, 2.0]
    assert m["p95_ms"] == [0.5, 5.003, 2.0]
    assert (m["outstanding_at_stop"], m["stop_replied"], m["stop_timeouts"]) == (4, 3, 1)
    assert m["interval_s"] == 1
    # one host: its own figures; an empty interval has no latency
    solo = merge_series([{**HOST_B, "intervals": [*HOST_B["intervals"], _iv(1, 0, 0, 0)]}])
    assert solo["mean_ms"] == [5.0, None] and solo["p95_ms"] == [5.003, None] and solo["ops"] == [2, 0]


def test_merge_refuses_what_is_not_exact():
    assert merge_series([HOST_A, None]) is None    # a host without series: none
    with pytest.raises(SeriesError, match="interval_s"):
        merge_series([HOST_A, {**HOST_B, "interval_s": 0.5}])
    bad = {**HOST_B, "intervals": [{**HOST_B["intervals"][0], "histogram": _hist(1000)}]}
    with pytest.raises(SeriesError, match="histogram holds 1 values"):
        merge_series([bad])


def test_trial_keeps_the_compact_series_only():
    raw = fstress_json()
    raw["series"] = HOST_A
    t = result_from_json(raw, 500, 5)
    assert t.valid and "series" not in t.raw and "series" in raw
    assert t.raw["timeseries"]["ops"] == [1, 3, 1] and t.raw["timeseries"]["outstanding_at_stop"] == 3
    # a series that does not merge is named, and does not change the verdict
    raw["series"] = {**HOST_A, "intervals": [{**HOST_A["intervals"][0], "histogram": "garbage"}]}
    t2 = result_from_json(raw, 500, 5)
    assert t2.valid and "timeseries" not in t2.raw and t2.raw["timeseries_error"]
    # merged by an fstress without series: the hosts' own, merged here
    ts = with_timeseries(fstress_json(), {"a": {"series": HOST_A}, "b": {"series": HOST_B}})["timeseries"]
    assert ts["ops"] == [1, 5, 1]


def test_trial_log_column(tmp_path):
    store = LocalStore(tmp_path)
    store.ensure_bucket()
    raw = fstress_json()
    raw["series"] = HOST_A
    rec = result_from_json(raw, 500, 5).to_dict()
    store.put_trial("r1", 0, {**rec, "decision": "x"})
    store.put_trial("r1", 1, {**result_from_json(fstress_json(), 500, 5).to_dict(), "decision": "x"})
    df = store.trials_df("r1")
    assert json.loads(df.loc[0, "timeseries"])["mean_ms"] == [0.5, 2.0, 2.0]
    assert df.loc[0, "outstanding_at_stop"] == 3 and pd.isna(df.loc[1, "timeseries"])
    store.write_trials_parquet("r1")
