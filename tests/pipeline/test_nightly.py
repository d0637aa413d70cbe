"""The nightly configuration and verdicts on recorded real nights (tests/data/nightly_store)."""
from __future__ import annotations

import pytest
from helpers import load_recorded_nights

from analysis.nightly_report import history_plots, night_report
from workbench.params.plan import ParamError
from workbench.pipeline import nightly, nightly_config
from workbench.store.local import LocalStore


def test_nightly_config_in_the_repo_is_valid(tmp_path):
    cfg = nightly_config.load_nightly_config("config/nightly.yml")
    assert cfg["baselines"] and 0 < cfg["tolerance"] < 1
    bad = tmp_path / "n.yml"
    bad.write_text("baselines:\n  - name: x\n    params: {disks: 0}\n")
    with pytest.raises(ParamError, match="disks"):
        nightly_config.load_nightly_config(bad)
    assert cfg["seed_trials"] == 6 == nightly.NIGHTLY_SEED_TRIALS
    assert cfg["canary"] in [b["name"] for b in cfg["baselines"]]
    bad.write_text("canary: nope\nbaselines:\n  - name: x\n    params: {}\n")
    with pytest.raises(ParamError, match="canary: 'nope' is not one of the baselines"):
        nightly_config.load_nightly_config(bad)
    for v in ("1", "true", "2.5", "21"):
        bad.write_text(f"seed_trials: {v}\nbaselines:\n  - name: x\n    params: {{}}\n")
        with pytest.raises(ParamError, match="seed_trials must be an integer in"):
            nightly_config.load_nightly_config(bad)


def test_recorded_nights_same_is_no_regression_worse_is(tmp_path):
    """compare and report on three recorded real nights: night 1 has no history (no verdict, a green
    night), night 2 (same configuration) is not a regression, night 3 (read_iops 40) is, judged
    against nights 1-2; the report says so and links the night's rating report."""
    store = LocalStore(tmp_path)
    load_recorded_nights(store, "2026-11-01")
    first = nightly.compare(store, "2026-11-01", [store.get_json("nightly/2026-11-01/web.json")])
    assert first[0]["reason"] == "no baseline yet" and not first[0]["regression"], first
    assert nightly.failures(first) is None
    load_recorded_nights(store, "2026-11-02")
    same = store.get_json("nightly/2026-11-02/web.json")
    v_same = nightly.compare(store, "2026-11-02", [same])
    assert not v_same[0]["regression"] and v_same[0]["history_nights"] == ["2026-11-01"], v_same
    assert nightly.failures(v_same) is None
    load_recorded_nights(store, "2026-11-03")
    worse = store.get_json("nightly/2026-11-03/web.json")
    assert worse["params"]["read_iops"] == 40 and worse["seed_load"]       # seeded from the history
    judged = nightly.compare(store, "2026-11-03", [worse])
    assert judged[0]["suspect"] and not judged[0]["regression"] and judged[0]["detector"] == "per-night test"
    assert judged[0]["history_nights"] == ["2026-11-01", "2026-11-02"] and nightly.needs_rerun(judged)

    def rate(st, night, baseline, key, rid):                # the re-run reads night 3 again
        st.put_json(key, {**worse, "rating_id": rid})
    assert nightly.confirm.rerun(store, "2026-11-03", judged, rate) == ["nightly/2026-11-03/rerun/web.0.json"]
    v_bad = nightly.decide(store, "2026-11-03", judged)
    assert v_bad[0]["regression"] and v_bad[0]["confirmed"] and v_bad[0]["canary"] == "none configured"
    assert v_bad[0]["rerun"]["rating_id"] == "nightly__2026-11-03__web__rerun0"
    assert {"setting": "params.read_iops", "before": 100, "after": 40} in v_bad[0]["changed"]
    assert v_bad[0]["change_point"]["last_good_night"] == "2026-11-02"
    assert store.get_json("nightly/2026-11-03/verdicts.json") == v_bad
    assert "web" in nightly.failures(v_bad)
    night_report(store, "2026-11-03", v_bad)
    page = store.get_bytes("nightly/2026-11-03/report.html").decode()
    assert "REGRESSION" in page and 'href="../../ratings/nightly__2026-11-03__web/report.html"' in page
    # the baseline's history is drawn: its three nights, tonight's last
    assert [p["date"] for p in v_bad[0]["history"]] == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert v_bad[0]["history"][-1]["peak_rate"] == v_bad[0]["current_peak"]
    assert list(history_plots(v_bad)) == ["history_web.png"] and "history_web.png" in page


def test_a_baseline_of_two_goals_is_compared_per_goal_with_the_nights_that_rated_each(tmp_path):
    """The recorded nights with a second goal, R_sat 400 ms, added to nights 2 and 3 (night 1 rated
    R_sat 40 only) whose λ* held: night 3 gets one verdict per goal, REGRESSION at 40 ms against
    nights 1-2, no regression at 400 ms against night 2 alone."""
    store = LocalStore(tmp_path)
    load_recorded_nights(store, "2026-11-01", "2026-11-02", "2026-11-03")
    held = {"r_sat_ms": 400.0, "peak_rate": 990.0, "peak_rate_ci": [950.0, 1000.0], "bracket": [990.0, 1000.0],
            "converged": True, "reason": "CI inside the peak-rate region"}
    for night in ("2026-11-02", "2026-11-03"):
        rec = store.get_json(f"nightly/{night}/web.json")
        rec["result"]["per_goal"]["400"] = held
        store.put_json(f"nightly/{night}/web.json", rec)
    judged = nightly.compare(store, "2026-11-03", [store.get_json("nightly/2026-11-03/web.json")])
    assert [v["suspect"] for v in judged] == [True, False]
    store.put_json("nightly/2026-11-03/rerun/web.0.json", store.get_json("nightly/2026-11-03/web.json"))
    verdicts = nightly.decide(store, "2026-11-03", judged)
    by_goal = {v["r_sat_ms"]: v for v in verdicts}
    assert sorted(by_goal) == [40.0, 400.0] and all(v["n_goals"] == 2 for v in verdicts)
    assert by_goal[40.0]["regression"] and by_goal[40.0]["history_nights"] == ["2026-11-01", "2026-11-02"]
    low = by_goal[400.0]
    assert not low["regression"] and low["history_nights"] == ["2026-11-02"], low
    assert low["current_peak"] == low["baseline_peak"] == 990.0 and low["rel_change"] == 0.0
    assert nightly.failures(verdicts).startswith("regression: web at R_sat 40 ms: ")
    assert "R_sat 400 ms" not in nightly.failures(verdicts)


def test_a_ui_config_path_must_lie_in_a_configuration_directory(tmp_path, monkeypatch):
    """The DAG's config_path Param (a root task): config/ of the repository, or a directory the
    operator listed in WB_NIGHTLY_CONFIG_DIRS; anything else, a symlink out included, is refused
    naming the field, before the file is read."""
    from workbench.config.paths import REPO
    monkeypatch.delenv(nightly_config.CONFIG_DIRS_ENV, raising=False)
    assert nightly_config.confined_config("config/nightly.yml") == str((REPO / "config" / "nightly.yml").resolve())
    for bad in ("/etc/shadow", "config/../README.md", str(tmp_path / "n.yml"), "", "config/\0x"):
        with pytest.raises(ParamError, match="config_path: "):
            nightly_config.confined_config(bad)
    escape = tmp_path / "ok"
    escape.mkdir()
    (escape / "n.yml").write_text("baselines: []\n")
    (escape / "out.yml").symlink_to("/etc/passwd")
    monkeypatch.setenv(nightly_config.CONFIG_DIRS_ENV, str(escape))
    assert nightly_config.confined_config(str(escape / "n.yml")) == str((escape / "n.yml").resolve())
    with pytest.raises(ParamError, match="outside the configuration directories"):
        nightly_config.confined_config(str(escape / "out.yml"))
