"""The latency split: client mean against server + server queue + network round trip + client queueing
(hand cases)."""
from __future__ import annotations

import pytest

from workbench.findings.latency_split import rating_split, split_line, trial_split


def _raw(read_ms=2.0, getattr_ms=0.5, server_read=1.6, server_getattr=0.1, rtt=0.2, lag=0.1, null_n=50, queue_ms=0.05):
    return {"mean_ms": (300 * read_ms + 100 * getattr_ms) / 400, "send_lag_ms": {"mean": lag, "p99": 1.0},
            "null_rtt_ms": {"n": null_n, "mean": rtt},
            "ops": {"read": {"count": 300, "mean_ms": read_ms}, "getattr": {"count": 100, "mean_ms": getattr_ms}},
            "telemetry": {"hosts": {"sut1": {"server_ops": {"v3": {"READ": {"n": 290, "mean_ms": server_read},
                                                                   "GETATTR": {"n": 99, "mean_ms": server_getattr}}},
                                                "rpc_queue": {"wait_ms": queue_ms, "mean_bytes": 10.0,
                                                              "rx_bytes": 40000.0}}}}}


def test_a_trial_split_by_hand():
    """client 1.625 ms; server (300·1.6 + 100·0.1)/400 = 1.225; + 0.05 + 0.2 + 0.1 = 1.575 → −3.08 %."""
    s = trial_split(_raw())
    assert s["client_ms"] == pytest.approx(1.625) and s["server_ms"] == pytest.approx(1.225)
    assert s["server_queue_ms"] == pytest.approx(0.05)
    assert s["parts_ms"] == pytest.approx(1.575) and s["gap_pct"] == pytest.approx(-100 * 0.05 / 1.625)
    assert s["ops"]["read"]["gap_pct"] == pytest.approx(-2.5) and s["ops"]["getattr"]["gap_pct"] == pytest.approx(-10.0)


def test_the_server_queue_of_two_hosts_is_weighted_by_the_bytes_each_received():
    raw = _raw()
    hosts = raw["telemetry"]["hosts"]
    hosts["sut2"] = {"rpc_queue": {"wait_ms": 1.0, "mean_bytes": 5.0, "rx_bytes": 10000.0}}
    assert trial_split(raw)["server_queue_ms"] == pytest.approx((0.05 * 40000 + 1.0 * 10000) / 50000)
    for fig in hosts.values():
        fig.pop("rpc_queue")
    assert trial_split(raw)["missing"] == "server receive queue"


def test_a_missing_part_is_named_never_filled_in():
    assert "network round trip" in trial_split(_raw(null_n=0))["missing"]
    raw = _raw()
    del raw["telemetry"]["hosts"]["sut1"]["server_ops"]["v3"]["GETATTR"]
    assert trial_split(raw)["missing"] == "server statistics of getattr"
    raw["telemetry"] = {"hosts": {}}
    assert "server statistics (Ganesha, NFSv3)" in trial_split(raw)["missing"]


def test_the_rating_split_weights_trials_at_a_load_and_looks_below_the_peak():
    records = [{"valid": True, "load_ops_s": 100, "raw": _raw()},
               {"valid": True, "load_ops_s": 100, "raw": _raw(read_ms=3.0)},
               {"valid": True, "load_ops_s": 200, "raw": _raw(read_ms=2.2)},
               {"valid": False, "load_ops_s": 300, "raw": _raw()},
               {"valid": True, "load_ops_s": 400, "raw": _raw(rtt=5.0)},          # at λ*: not below it
               {"valid": True, "load_ops_s": 150, "raw": _raw(null_n=0)}]
    out = rating_split({"peak_rate": 400}, records)
    assert [r["load_ops_s"] for r in out["loads"]] == [100, 200, 400]
    at100 = out["loads"][0]
    assert at100["trials"] == 2 and at100["client_ms"] == pytest.approx((1.625 + 2.375) / 2)
    assert out["at_peak"]["load_ops_s"] == 200
    gaps = [abs(r["gap_pct"]) for r in out["loads"][:2]]
    assert out["max_abs_gap_pct_below_peak"] == pytest.approx(max(gaps))
    assert list(out["missing"].values()) == [1]
    line = split_line(out)
    assert line.startswith("1.775 ms at 200 ops/s = server 1.225 + server queue 0.050 + network 0.200"
                           " + client queueing 0.100")
    assert split_line({"loads": [], "at_peak": None}).startswith("not split")


def test_the_report_draws_and_tabulates_the_split():
    from analysis.split_report import split_png, split_table_rows
    records = [{"valid": True, "load_ops_s": load, "raw": _raw()} for load in (100, 200, 400)]
    result = {"peak_rate": 400, "latency_split": rating_split({"peak_rate": 400}, records)}
    assert split_png(result).startswith(b"\x89PNG") and split_png({"latency_split": {"loads": []}}).startswith(b"\x89PNG")
    headers, rows = split_table_rows(result)
    assert headers[1] == "client mean ms" and len(rows) == 3
    assert rows[0][1:7] == ["1.625", "1.225", "0.050", "0.200", "0.100", "1.575"] and rows[2][0] == "400 (≥ λ*)"
    old = {"peak_rate": 400, "latency_split": {"loads": [{k: v for k, v in row.items() if k != "server_queue_ms"}
                                                         for row in result["latency_split"]["loads"]]}}
    assert split_table_rows(old)[1][0][3] == "—" and split_png(old).startswith(b"\x89PNG")   # before the part


def test_the_network_part_is_the_median_null_round_trip():
    """One late NULL moves the mean of a trial's round trips, not its median (what fstress's p50 gives)."""
    raw = _raw(rtt=0.3)
    raw["null_rtt_ms"]["p50"] = 0.2
    assert trial_split(raw)["network_ms"] == pytest.approx(0.2)


def test_the_network_part_is_the_tcp_minimum_round_trip_when_the_sampler_read_one():
    """The NULL round trip holds the server's RPC layer waking on an idle connection; the kernel's TCP
    minimum round trip of the NFS connections does not, and wins when present (the least of the
    server hosts'): 1.225 + 0.05 + 0.03 + 0.1 = 1.405 of 1.625."""
    raw = _raw(rtt=0.2)
    raw["telemetry"]["hosts"]["sut1"]["rpc_queue"]["min_rtt_ms"] = 0.03
    raw["telemetry"]["hosts"]["sut2"] = {"rpc_queue": {"wait_ms": 0.05, "mean_bytes": 1.0, "rx_bytes": 1.0,
                                                       "min_rtt_ms": 0.04}}
    s = trial_split(raw)
    assert s["network_ms"] == pytest.approx(0.03) and s["parts_ms"] == pytest.approx(1.405)
