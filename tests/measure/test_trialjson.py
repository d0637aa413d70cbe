"""fstress's trial JSON → TrialResult, directly."""
from __future__ import annotations

import pytest
from helpers import fstress_json

from workbench.measure.trialjson import harness_result, result_from_json


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


def test_achieved_rate_counts_replies_not_timed_out_calls():
    """The real overloaded trial of issue 30: 12 800 ops/s for 10 s, fstress finished all 128 000 calls,
    93 857 of them by timing out: the server answered (128 000 − 93 857)/10 = 3 414.3 per second, which
    is what the controller's completions test reads; the generator kept its schedule (valid)."""
    raw = fstress_json(offered_rate=12800.0, achieved_rate=12800.0, duration_s=10.0, ops_total=128000,
                       timeouts=93857, mean_ms=7193.0)
    t = result_from_json(raw, 12800, 10, overload_ms=50.0)
    assert t.valid and t.achieved_rate == 3414.3
    assert result_from_json(fstress_json(), 500, 5).achieved_rate == 500.0        # no timeouts: as fstress says
    lagging = fstress_json(achieved_rate=400.0)                                   # the generator fell behind
    assert "achieved 400.0 ops/s < 95% of offered 500.0" in result_from_json(lagging, 500, 5).reason


def test_an_nfs41_server_s_full_slot_table_is_overload_not_a_saturated_generator():
    """The real trial of issue 35: 12 800 ops/s over NFSv4.1 on a server of λ* ≈ 3 600; its 64 session
    slots full, calls queued client-side for one (125 457 slot waits), so fstress sent 78 % on time and
    hit its outstanding-calls cap. Above overload_ms, with no NFS error, that is the server's overload
    (valid: the controller reads its mean); a lag-bound cause, an NFS error, v3 or a low mean are not."""
    reason = "sent 100387 of 128000 intended calls (78.43% < 99%); outstanding-calls cap 81024 hit"
    raw = fstress_json(offered_rate=12800.0, achieved_rate=10038.7, duration_s=10.0, ops_total=100387,
                       timeouts=60105, mean_ms=8542.0, generator_saturated=True, saturation_reason=reason,
                       nfs_version="4.1", nfs4={"slots": 64, "slot_waits": 125457, "sessions_recreated": 0})
    t = result_from_json(raw, 12800, 10, overload_ms=50.0)
    assert t.valid and t.mean_ms == 8542.0, t.reason
    assert t.reason == "overloaded: 60105 timeouts, mean 8542 ms >= 50 ms, 125457 calls waited for a session slot"
    assert not result_from_json(raw, 12800, 10).valid                             # overload_ms None: SPEC SFS
    for bad in ({"saturation_reason": reason + "; send-lag p99 3.1 ms > bound 2 ms (host steal 0.5 %)"},
                {"errors": 3}, {"nfs_version": None}, {"mean_ms": 20.0}, {"nfs4": {"slot_waits": 0}}):
        t = result_from_json({**raw, **bad}, 12800, 10, overload_ms=50.0)
        assert not t.valid, bad
    assert "generator saturated: sent 100387" in result_from_json({**raw, "nfs_version": None}, 12800, 10,
                                                                  overload_ms=50.0).reason


def test_drain_s_is_the_merged_drain_time():
    drain = {"drain_s": 1.75, "drained": True, "idle_rtt_us": 120.0, "limit_us": 1120.0, "probes": 60,
             "max_rtt_us": 950000.0, "first_rtts_us": [950000.0], "last_rtts_us": [130.0]}
    t = result_from_json(fstress_json(drain=drain), 500, 5)
    assert t.valid and t.drain_s == 1.75 and t.to_dict()["drain_s"] == 1.75
    assert result_from_json(fstress_json(), 500, 5).drain_s is None          # fstress did not probe
    assert result_from_json(fstress_json(drain={"drain_s": "x"}), 500, 5).drain_s is None


def test_a_server_that_did_not_drain_is_a_harness_failure_with_its_drain_time():
    msg = ("load1: Run fstress: non-zero return code (rc 4): fstress: server not drained after 60.0 s: the median "
           "of its last NULL round trips (9000 9100 8800 9050 9020 µs) is above the limit 1120 µs")
    t = harness_result(500, 5, "harness: " + msg)
    assert t.harness_failure and not t.valid and t.drain_s == 60.0
    assert harness_result(500, 5, "harness: fetch failed").drain_s is None


def test_each_load_host_shows_its_own_drain():
    from workbench.measure.trialjson import per_host_figures
    parts = {"load1": fstress_json(drain={"drain_s": 0.04}), "load1b": fstress_json(drain={"drain_s": 1.2}),
             "old": fstress_json()}
    assert [h["drain_s"] for h in per_host_figures(parts)] == [0.04, 1.2, None]


def test_tenant_b_is_judged_apart_from_a():
    """Tenant B's figures (config.tenants) stay beside A's: B slow or with errors leaves A's trial
    valid (the server's answer to both); B's generator saturated, or no B result, invalidates it."""
    from workbench.measure.trialjson import background_figures
    b_plan = {"ops_s": 150.0, "workload": "web_server", "load_hosts": 1}
    slow = background_figures(b_plan, fstress_json(mean_ms=900.0, errors=3), {"load1b": fstress_json(mean_ms=900.0)})
    assert slow["mean_ms"] == 900.0 and slow["per_host"][0]["host"] == "load1b" and slow["workload"] == "web_server"
    t = result_from_json({**fstress_json(), "background": slow}, 500, 5)
    assert t.valid and t.mean_ms == fstress_json()["mean_ms"] and t.raw["background"]["errors"] == 3
    part = fstress_json(generator_saturated=True, saturation_reason="send lag p99 12 ms > 10 ms")
    sat = background_figures(b_plan, part, {"load1b": part})
    t = result_from_json({**fstress_json(), "background": sat}, 500, 5)
    assert not t.valid and t.reason == "background tenant: generator saturated on load1b: send lag p99 12 ms > 10 ms"
    t = result_from_json({**fstress_json(), "background": background_figures(b_plan, None, {})}, 500, 5)
    assert not t.valid and t.reason == "background tenant: no result from its load hosts"


def test_tenant_b_beside_share_is_the_part_of_a_window_b_was_sending():
    """beside_share by hand: A measures [100, 102) s; B sends from its warm-up's start to its
    window's end. A B that missed A (its start 1.6 s early) makes the trial a harness failure,
    named; one that ran beside all of A's window, or 0.1 s early (95 %), leaves it to be judged."""
    from workbench.measure.trialjson import background_figures, beside_share, missed_background
    a = fstress_json(start_unix_ns=100_000_000_000, duration_s=2.0)
    def b(start_s, warmup_s=1.0, duration_s=2.0):
        return fstress_json(start_unix_ns=int(start_s * 1e9), duration_s=duration_s, warmup_s=warmup_s)
    assert beside_share(a, b(100.0)) == 1.0
    assert beside_share(a, b(100.9)) == 1.0                   # late, but its warm-up covers A's start
    assert beside_share(a, b(101.5)) == pytest.approx(1.5 / 2)  # sending from 100.5 on
    assert beside_share(a, b(99.9)) == pytest.approx(0.95)      # ends at 101.9
    assert beside_share(a, b(97.0)) == 0.0 and beside_share(a, b(110.0)) == 0.0
    assert beside_share(a, {"duration_s": 2.0}) is None
    b_plan = {"ops_s": 120.0, "workload": "web_server", "load_hosts": 1}
    early = background_figures(b_plan, b(98.4), {}, a)
    assert early["beside_share"] == pytest.approx(0.2) and early["start_offset_s"] == -1.6
    assert missed_background(early) == (
        "harness: tenant B ran beside 20% of the measured window, under 90% (B started -1.60 s from A)")
    assert missed_background(background_figures(b_plan, b(99.9), {}, a)) is None
    assert missed_background(background_figures(b_plan, b(99.9), {})) is None   # A's window unknown
