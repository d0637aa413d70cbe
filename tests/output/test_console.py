"""The console's trial line and result block (workbench.output.console): what a person reads."""
from __future__ import annotations

import io

from workbench.output.console import WIDTH, Progress, result_block, short, trial_line

LONG_DECISION = ("local: Binsearch step: midpoint of [3200, 6400] (no load on the curve within 0.5·R_sat yet: "
                 "the fit would extrapolate from the flat part)")
RECORDS = [
    {"n": 3, "load_ops_s": 4800.0, "runlength_s": 10, "mean_ms": 12.345, "p95_ms": 45.6, "achieved_rate": 4799.3,
     "valid": True, "decision": LONG_DECISION},
    {"n": 12, "load_ops_s": 912.5, "runlength_s": 20, "mean_ms": 1234.5, "p95_ms": 23456.0, "achieved_rate": 700.1,
     "valid": False, "decision": "local: re-run at the same load, longer (after a long warm-up)",
     "reason": "not steady: backlog (214 calls outstanding at the stop, 1.2 s of work by Little's law)"},
    {"n": 1, "load_ops_s": 800.0, "runlength_s": 2, "valid": False, "outcome": "harness", "decision": "x",
     "reason": "harness: load1: fstress run failed: killed by signal 9 (stderr: connection reset by peer)"},
]


def test_short_drops_asides_then_trailing_clauses_then_cuts():
    assert short("Binsearch step: midpoint of [3200, 6400] (no load on the curve)", 60) == \
        "Binsearch step: midpoint of [3200, 6400]"
    assert short("not steady: backlog and a trend", 20) == "not steady"
    assert short("load1: fstress run failed: killed by signal 9", 30) == "load1: fstress run failed"
    assert short("abcdefghij klmnop", 8) == "abcdefg…" and short("fits", 10) == "fits"


def test_a_trial_line_fits_120_columns_and_keeps_its_figures():
    for r in RECORDS:
        line = trial_line(r)
        assert len(line) <= WIDTH, line
        assert f"trial {r['n']:>3}:" in line and f"{r['runlength_s']:g} s" in line
    assert "[Binsearch step: midpoint of [3200, 6400]]" in trial_line(RECORDS[0])
    assert "achieved" not in trial_line(RECORDS[0])               # within 1 % of the offered load
    assert "achieved 700  INVALID: not steady" in trial_line(RECORDS[1])
    assert "HARNESS FAILURE: load1: fstress run failed" in trial_line(RECORDS[2])
    trend = {**RECORDS[0], "raw": {"steady": {"verdict": "trend up", "mk_p": 0.001}}}
    assert "NOT STEADY (trend up)  [Binsearch step" in trial_line(trend)
    whole = trial_line(RECORDS[0], None)                          # the task log: nothing cut
    assert LONG_DECISION.removeprefix("local: ") in whole and "achieved 4799" in whole


def test_progress_lines_fit_with_cost_and_wall_time_unless_verbose():
    for compact in (True, False):
        out = io.StringIO()
        p = Progress(600, 5, out, compact=compact)
        for r in RECORDS:
            p.trial(r)
        lines = out.getvalue().splitlines()
        assert lines and all(len(ln) <= WIDTH for ln in lines), [ln for ln in lines if len(ln) > WIDTH]
        assert "cost 15/600 s" in out.getvalue().replace("cost    ", "cost ")
    out = io.StringIO()
    Progress(600, 5, out, compact=True, verbose=True).trial(RECORDS[1])
    assert "1.2 s of work by Little's law" in out.getvalue()
    out = io.StringIO()                                           # issue 50: the trial's busiest resource
    tel = {"hosts": {"sut1": {"mean": {"disk_read_iops": 376.0, "disk_read_iops_limit": 400.0,
                                        "server_cpu_cores": 0.2, "server_cpu_limit_cores": 1.0}}}}
    Progress(600, 5, out).trial({**RECORDS[0], "raw": {"telemetry": tel}})
    assert out.getvalue().splitlines()[-1].endswith("s, busiest: disk read IOPS 94 %"), out.getvalue()


def test_the_mean_at_peak_is_never_an_interval_from_zero_or_an_accuracy_of_zero():
    """Issue 54: two trials far apart at the load nearest λ* gave Eq. 1's interval a negative lower
    end, printed as 'CI [0.00, 80.66] (… accuracy 0.000)'. Only its upper end is a statement then;
    a positive interval keeps its Eq. 2 accuracy (hand-computed: 1 − 15/75 = 0.8)."""
    import re
    from workbench.findings.peak_interval import mean_at_peak_text
    base = {"peak_rate": 4000.0, "bracket": [4000.0, 4200.0], "peak_rate_ci": [3800.0, 4400.0],
            "peak_rate_ci_level": 0.9, "mean_ms_at_peak": 38.31, "r_sat_ms": 40.0, "n_loads": 5,
            "n_trials": 20, "mean_load_ops_s": 4000.0, "converged": True, "reason": "r"}
    wide = {**base, "mean_ms_ci": [0.0, 80.66], "accuracy": 0.0, "n_trials_at_peak": 2}
    assert mean_at_peak_text(wide).startswith("38.31 ms, ≤ 80.66 ms (its CI's upper end")
    assert mean_at_peak_text({**base, "mean_ms_ci": [-4.0, 80.66]}).startswith("38.31 ms, ≤ 80.66 ms")
    assert mean_at_peak_text({**base, "mean_ms_ci": [30.0, 45.0]}) == (
        "38.31 ms, CI [30.00, 45.00] ms (R_sat 40 ms, accuracy 0.800)")
    assert mean_at_peak_text({**base, "mean_ms_ci": [None, None], "n_trials_at_peak": 1}) == (
        "38.31 ms (no CI: 1 trial(s) there; R_sat 40 ms)")
    for res in (wide, {**base, "mean_ms_ci": [-4.0, 80.66]}, {**base, "mean_ms_ci": [30.0, 45.0]}):
        block = " ".join(result_block(res).split())
        assert not re.search(r"\[0(\.0+)?,|accuracy 0\.000|-\d", block), block


def test_the_result_block_opens_with_a_sentence_and_keeps_its_figures():
    res = {"peak_rate": 4105.3, "converged": True, "reason": "bracket [4000, 4200] narrower than resolution 0.05",
           "bracket": [4000.0, 4200.0], "peak_rate_ci": [3990.2, 4230.0], "peak_rate_ci_level": 0.9, "mean_ms_at_peak": 38.2,
           "mean_ms_ci": [30.0, 45.0], "accuracy": 0.92, "n_loads": 6, "n_trials": 14, "cost_s": 312.0,
           "r_sat_ms": 40.0, "l_sat_ms": 2000.0, "n_invalid": 1, "mean_load_ops_s": 4000.0,
           "workload": "web_server", "slot": "slot1",
           "cost_breakdown_s": {"provision": 20, "deploy": 30, "trials": 200, "orchestration": 62}, "cost_spec_s": 250}
    text = result_block(res, 400.0)
    sentence = " ".join(text.split("\n\n")[0].split())
    assert sentence == ("web_server on slot1: peak rate λ* = 4105.3 ops/s, the highest offered load with mean "
                        "response time ≤ 40 ms and p95 ≤ 2000 ms; 90 % CI [3990.2, 4230] ops/s, anytime-valid; converged after "
                        "14 trials at 6 loads."), sentence
    for figure in ("bracket           [4000.0, 4200.0] ops/s", "R̄ at 4000 ops/s  38.20 ms", "14 (1 invalid) at 6 loads",
                   "controller's account 250 s", "wall time 400 s"):
        assert figure in text, figure
    assert all(len(ln) <= WIDTH for ln in text.splitlines())
    assert "λ* interval       90 % CI [3990.2, 4230] ops/s, anytime-valid" in text
    why = {"resource": "disk read IOPS", "line": "disk read IOPS — 398/400 at 4000 ops/s, server CPU 31 % of 1 core"}
    assert "bottleneck        disk read IOPS — 398/400 at 4000 ops/s, server CPU 31 % of 1 core" in result_block(
        {**res, "bottleneck": why})                                   # issue 50: the verdict, one row
    assert "bottleneck" not in text                                     # a result stored before it: no row
    split = {"at_peak": {"load_ops_s": 3800.0, "client_ms": 2.0, "server_ms": 1.7, "network_ms": 0.2,
                         "queueing_ms": 0.05, "gap_pct": -2.5}}
    block = " ".join(result_block({**res, "latency_split": split, "overall_response_time_ms": 0.5}).split())
    assert ("latency split 2.000 ms at 3800 ops/s = server 1.700 + network 0.200 + client queueing 0.050 (-2.5 %)"
            in block and "overall response time 0.5 ms" in block), block       # a result stored before the queue
    split["at_peak"].update(server_queue_ms=0.03, gap_pct=-1.0)
    assert ("= server 1.700 + server queue 0.030 + network 0.200 + client queueing 0.050 (-1.0 %)"
            in " ".join(result_block({**res, "latency_split": split}).split()))
    assert "CI [4000, ∞) ops/s" in result_block({**res, "peak_rate_ci": [4000.0, None]})     # open: said so
    assert "NOT converged after 3 trials (budget exhausted)" in " ".join(
        result_block({**res, "converged": False, "n_trials": 3, "reason": "budget exhausted"}).split())


def test_the_trials_row_accounts_for_every_not_steady_line():
    """A NOT STEADY trial line is either excluded (re-run) or counted (a saturated rise, or its
    load's re-runs spent); the trials row says how many of each, so the lines add up."""
    def t(n, verdict, valid=True):
        return {"n": n, "valid": valid, "raw": {"steady": {"verdict": verdict}}}
    res = {"n_trials": 5, "n_invalid": 0, "n_loads": 3, "n_not_steady": 1, "not_steady": {"2": "not steady: backlog"},
           "trials": [t(0, "steady"), t(1, "trend up"), t(2, "backlog", valid=False), t(3, "stall"), t(4, "short")]}
    text = " ".join(result_block(res).split())
    assert "5 (0 invalid, 1 excluded as not steady, 2 not steady but counted) at 3 loads" in text, text
    assert "but counted" not in result_block({**res, "trials": res["trials"][:1] + res["trials"][2:3]})
