"""The night's verdict from change points over a stored history (pipeline.nightly_confirm): twelve
synthetic nights of a baseline `web` and the canary in a local store, the last two of `web` 10 % lower
with one setting changed; compare suspects, the branch re-rates, decide names REGRESSION, LAB CHANGE,
NO VERDICT or ok, and the notification carries it."""
from __future__ import annotations

import numpy as np

from analysis.nightly_report import history_plots, night_report
from workbench.output import notify
from workbench.pipeline import nightly
from workbench.pipeline import nightly_confirm as confirm
from workbench.store.local import LocalStore

NIGHTS = [f"2026-10-{d:02d}" for d in range(1, 13)]
TONIGHT, FIRST_BAD, LAST_GOOD = NIGHTS[-1], NIGHTS[10], NIGHTS[9]
WEB = {"workload": "web_server", "nfs_threads": 16}
CANARY = {"workload": "web_server", "nfs_threads": 8}


def _record(store, night, name, peak, params, rid=None):
    rid = rid or f"nightly__{night}__{name}"
    rec = {"name": name, "night": night, "params": params, "rating_id": rid,
           "result": {"peak_rate": peak, "peak_rate_ci": [peak * 0.97, peak * 1.03], "converged": True}}
    store.put_json(store.spec_key(rid), {"spec": {"confidence": 0.9, "seed_load": peak}, "factors": params})
    return rec


def _store(tmp_path, web_drop=0.9, canary_drop=1.0):
    """Twelve nights; web's last two × web_drop (and nfs_threads 16 → 4), the canary's × canary_drop."""
    store = LocalStore(tmp_path)
    noise = np.exp(np.random.default_rng(5).normal(0.0, 0.01, (2, len(NIGHTS))))
    for i, night in enumerate(NIGHTS):
        late = i >= 10
        web = {**WEB, "nfs_threads": 4} if late else WEB
        store.put_json(store.baseline_key(night, "web"),
                       _record(store, night, "web", 1000.0 * noise[0, i] * (web_drop if late else 1.0), web))
        store.put_json(store.baseline_key(night, "canary"),
                       _record(store, night, "canary", 500.0 * noise[1, i] * (canary_drop if late else 1.0), CANARY))
    store.put_json(store.night_config_key(TONIGHT), {
        "tolerance": 0.15, "confidence": 0.95, "seed_trials": 6, "canary": "canary",
        "baselines": [{"name": "canary", "params": CANARY}, {"name": "web", "params": WEB}]})
    return store


def _rater(peaks):
    """A measurer stand-in: each re-run of a baseline stores the next λ* of peaks[name]."""
    calls = []

    def rate(store, night, baseline, key, rid):
        calls.append(rid)
        store.put_json(key, _record(store, night, baseline["name"], peaks[baseline["name"]].pop(0),
                                    baseline["params"], rid))
    return rate, calls


def _judged(store, night=TONIGHT):
    recs = [store.get_json(store.baseline_key(night, n)) for n in ("canary", "web")]
    return nightly.compare(store, night, recs)


def _by_name(verdicts):
    return {v["name"]: v for v in verdicts}


def test_a_confirmed_drop_with_the_canary_steady_is_a_regression_naming_night_and_setting(tmp_path):
    store = _store(tmp_path)
    judged = _by_name(_judged(store))
    web = judged["web"]
    assert web["detector"] == "change points" and web["suspect"] and not web["regression"]
    assert (web["change_point"]["first_night"], web["change_point"]["last_good_night"]) == (FIRST_BAD, LAST_GOOD)
    assert not judged["canary"]["suspect"] and nightly.needs_rerun(list(judged.values()))
    rate, calls = _rater({"web": [900.0], "canary": [501.0, 499.0, 500.0]})
    nightly.confirm.rerun(store, TONIGHT, list(judged.values()), rate)
    assert calls == [f"nightly__{TONIGHT}__web__rerun0", f"nightly__{TONIGHT}__canary__rerun0"]
    final = _by_name(nightly.decide(store, TONIGHT, list(judged.values())))
    web = final["web"]
    assert web["regression"] and web["confirmed"] and web["canary"] == "held" and not web["lab_change"]
    assert web["changed"] == [{"setting": "params.nfs_threads", "before": 16, "after": 4},
                              {"setting": "plan.factors.nfs_threads", "before": 16, "after": 4}]
    assert -0.13 < web["change_point"]["rel_change"] < -0.07
    assert f"from {FIRST_BAD} (last good night {LAST_GOOD})" in web["reason"]
    assert "nfs_threads 16 → 4" in web["reason"]
    assert not final["canary"]["regression"] and "regression: web" in nightly.failures(list(final.values()))
    assert store.get_json(store.verdicts_key(TONIGHT)) == list(final.values())


def test_the_canary_moving_too_is_a_lab_change_not_a_regression(tmp_path):
    store = _store(tmp_path, canary_drop=0.9)
    judged = _judged(store)
    assert _by_name(judged)["canary"]["suspect"]                 # the control's own new level
    rate, _ = _rater({"web": [900.0], "canary": [450.0]})
    nightly.confirm.rerun(store, TONIGHT, judged, rate)
    final = _by_name(nightly.decide(store, TONIGHT, judged))
    assert final["web"]["lab_change"] and not final["web"]["regression"] and final["web"]["canary"] == "moved"
    assert final["canary"]["lab_change"] and final["canary"]["canary"] == "is the canary"
    assert "the canary moved too: the lab changed" in final["web"]["reason"]
    assert nightly.failures(list(final.values())).startswith("lab change: canary")
    night_report(store, TONIGHT, list(final.values()))
    assert "LAB CHANGE" in store.get_bytes(store.nightly_report_key(TONIGHT)).decode()


def test_a_rerun_at_the_old_level_does_not_confirm(tmp_path):
    store = _store(tmp_path)
    judged = _judged(store)
    rate, _ = _rater({"web": [1000.0], "canary": [500.0, 500.0, 500.0]})
    nightly.confirm.rerun(store, TONIGHT, judged, rate)
    web = _by_name(nightly.decide(store, TONIGHT, judged))["web"]
    assert web["confirmed"] is False and not web["regression"] and "did not confirm" in web["reason"]
    assert nightly.failures([web]) is None


def test_an_unsteady_canary_is_re_rated_up_to_three_times_then_no_verdict(tmp_path):
    store = _store(tmp_path)
    for night, peak in ((FIRST_BAD, 450.0), (TONIGHT, 500.0)):     # the canary down one night, back the next
        store.put_json(store.baseline_key(night, "canary"), _record(store, night, "canary", peak, CANARY))
    judged = _judged(store)
    rate, calls = _rater({"web": [900.0], "canary": [472.0, 472.0, 472.0]})     # halfway, again and again
    nightly.confirm.rerun(store, TONIGHT, judged, rate)
    assert sorted(calls) == sorted([f"nightly__{TONIGHT}__web__rerun0",
                                    *(f"nightly__{TONIGHT}__canary__rerun{k}" for k in range(3))])
    web = _by_name(nightly.decide(store, TONIGHT, judged))["web"]
    assert web["canary"] == "unsteady" and web["inconclusive"] and not web["regression"]
    assert "no verdict tonight" in web["reason"]


def test_no_suspect_takes_the_branch_straight_to_decide(tmp_path):
    store = _store(tmp_path, web_drop=1.0)
    judged = _judged(store)
    assert not nightly.needs_rerun(judged)
    rate, calls = _rater({})
    assert nightly.confirm.rerun(store, TONIGHT, judged, rate) == [] and calls == []
    assert all(not v["regression"] and v["reason"] for v in nightly.decide(store, TONIGHT, judged))


def test_a_new_level_reported_once_is_not_suspected_again_the_next_night(tmp_path):
    store = _store(tmp_path)
    judged = _judged(store)
    rate, _ = _rater({"web": [900.0], "canary": [500.0, 500.0, 500.0]})
    nightly.confirm.rerun(store, TONIGHT, judged, rate)
    assert _by_name(nightly.decide(store, TONIGHT, judged))["web"]["regression"]
    nxt = "2026-10-13"
    store.put_json(store.baseline_key(nxt, "web"), _record(store, nxt, "web", 905.0, {**WEB, "nfs_threads": 4}))
    store.put_json(store.baseline_key(nxt, "canary"), _record(store, nxt, "canary", 500.0, CANARY))
    store.put_json(store.night_config_key(nxt), store.get_json(store.night_config_key(TONIGHT)))
    assert not any(v["suspect"] for v in _judged(store, nxt))


def test_the_notification_carries_the_verdict_both_ratings_the_nights_and_the_setting(tmp_path):
    store = _store(tmp_path)
    judged = _judged(store)
    rate, _ = _rater({"web": [900.0], "canary": [500.0, 500.0, 500.0]})
    nightly.confirm.rerun(store, TONIGHT, judged, rate)
    nightly.decide(store, TONIGHT, judged)
    n = notify.night_notice(store, "nightly_regression", f"scheduled__{TONIGHT}T03:00:00+00:00", TONIGHT, "verdict")
    assert n.event == "regression" and n.title().endswith(f"{TONIGHT}: REGRESSION")
    b = n.payload()["baselines"][0]
    assert (b["name"], b["verdict"], b["first_night"], b["last_good_night"]) == ("web", "REGRESSION", FIRST_BAD,
                                                                                  LAST_GOOD)
    assert b["rating_id"] == f"nightly__{TONIGHT}__web" and b["rerun_rating_id"] == f"nightly__{TONIGHT}__web__rerun0"
    assert b["rerun_peak_rate"] == 900.0 and b["rel_ci"][0] < b["rel_change"] < b["rel_ci"][1]
    assert {"setting": "params.nfs_threads", "before": 16, "after": 4} in b["changed"]
    text = n.text()
    assert f"re-run nightly__{TONIGHT}__web__rerun0 λ* 900.0 ops/s" in text and "nfs_threads 16 → 4" in text


def test_the_history_plot_marks_the_change_point(tmp_path):
    store = _store(tmp_path)
    judged = _judged(store)
    plots = history_plots(judged)
    assert sorted(plots) == ["history_canary.png", "history_web.png"]
    plain = history_plots([{**_by_name(judged)["web"], "change_point": None}])["history_web.png"]
    assert plots["history_web.png"].startswith(b"\x89PNG") and plots["history_web.png"] != plain
    night_report(store, TONIGHT, judged)
    assert b"history_web.png" in store.get_bytes(store.nightly_report_key(TONIGHT))


def test_a_canary_without_nights_before_the_new_level_is_rated_once_and_says_so(tmp_path):
    store = _store(tmp_path)
    for night in NIGHTS[:9]:                       # the canary joined the config on night 10
        store.delete_prefix(store.baseline_key(night, "canary"))
    judged = _judged(store)
    rate, calls = _rater({"web": [900.0], "canary": [500.0]})
    nightly.confirm.rerun(store, TONIGHT, judged, rate)
    assert calls == [f"nightly__{TONIGHT}__web__rerun0", f"nightly__{TONIGHT}__canary__rerun0"]
    web = _by_name(nightly.decide(store, TONIGHT, judged))["web"]
    assert web["regression"] and web["canary"] == "too little history" and "canary: too little history" in web["reason"]
