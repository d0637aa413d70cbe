"""The active design and the sweep budget and deadline through the sweep pipeline (local store,
ratings answered from the simulated server's web-family surface; on real slots and Celery workers:
tests/dags/test_celery.py)."""
from __future__ import annotations

import datetime as dt
import time

import pytest
from helpers import web_surface_ratings

from analysis.surface_report import surface_report_step
from workbench.params.plan import ParamError
from workbench.pipeline import sweep
from workbench.store.local import LocalStore

ACTIVE = {"workload": "web_server", "profile": "smoke", "design": "active", "mape_target_pct": 15.0,
          "factors": {"threads": [2, 4, 6, 8], "disks": [1, 2, 3]}, "fixed": {"fs": "btrfs"}}


@pytest.fixture
def store(tmp_path):
    s = LocalStore(tmp_path / "store")
    s.ensure_bucket()
    return s


@pytest.fixture
def web_ratings(monkeypatch):
    rated = []
    monkeypatch.setattr(sweep, "run_rating", web_surface_ratings(rated))
    return rated


def _sweep(store, params, sid="sw"):
    """The DAG's path in one process: round 0, then next_k / round_k+1 until done; the decisions."""
    jobs, decisions = sweep.start_sweep(store, params, sid), []
    for k in range(sweep.MAX_ROUNDS):
        for j in jobs:
            sweep.rate_sample(store, j["sweep"], j["item"], log=lambda m: None)
        decisions.append(sweep.decide_round(store, sid, k))
        if decisions[-1]["done"]:
            return decisions
        jobs = sweep.round_jobs(store, sid, k + 1)
    raise AssertionError("no round said done")


def test_an_active_sweep_stops_at_its_target_with_fewer_samples_than_the_grid(store, web_ratings):
    ds = _sweep(store, ACTIVE)
    # start: the 7 of a D-optimal quadratic set (6 terms + 1); LOO undefined there, then one a round
    assert [(d["n_samples"], d["done"]) for d in ds] == [(7, False), (8, False), (9, True)]
    assert ds[0]["mape_loo_pct"] is None and ds[1]["mape_loo_pct"] > 15.0 >= ds[2]["mape_loo_pct"]
    assert ds[-1]["reason"].startswith("MAPE target reached") and len(web_ratings) == 9 < 12
    assert [it["i"] for d in ds[:-1] for it in d["items"]] == [7, 8]        # ids continue round to round
    assert sweep.decide_round(store, "sw", 2, now_s=time.time() + 1e9) == ds[-1]   # a retry: same decision
    summary = sweep.finish_sweep(store, "sw")
    surface_report_step(store, "sw")
    assert summary["stopped"] == ds[-1]["reason"] and summary["n_samples"] == 9
    assert summary["mape_by_samples"] == [[d["n_samples"], d["mape_loo_pct"]] for d in ds]
    assert summary["mape_loo_pct"] == pytest.approx(ds[-1]["mape_loo_pct"])
    page = store.get_bytes("surfaces/sw/report.html").decode()
    assert "surfaces/sw/plots/mape_vs_samples.png" in store.list_keys("surfaces/sw/plots/")
    assert "MAPE target reached" in page and page.count("data:image/png;base64,") == 2


def test_the_sweep_budget_cuts_a_one_shot_design_and_pays_every_rating_from_it(store, web_ratings):
    """fullfact 4 × 3 with 250 s: smoke's ratings cap at 120 s, so 2 are planned; the rest unrated."""
    ds = _sweep(store, {**ACTIVE, "design": "fullfact", "sweep_budget_s": 250.0})
    assert len(web_ratings) == 2 and all(p.spec["budget_s"] == 120.0 for p in web_ratings)
    assert ds == [{**ds[0], "done": True, "items": [],
                   "reason": "one-shot design: 2 of 12 samples rated; 10 not paid by the sweep budget"}]
    summary = sweep.finish_sweep(store, "sw")
    surface_report_step(store, "sw")
    assert summary["cost_spec_s"] == 100.0 <= 250.0 and summary["cost_s"] == 160.0 and summary["not_rated"] == 10
    # active: the start set is cut to its D-optimal 2 (opposite corners), then each round buys one
    # more rating from what is left: 150 s → 120, 100 s → the rest, 50 s → the rest
    ds = _sweep(store, {**ACTIVE, "sweep_budget_s": 250.0}, "sw2")
    start = [(p.factors["threads"], p.factors["disks"]) for p in web_ratings[2:4]]
    assert sorted(start) in ([(2, 1), (8, 3)], [(2, 3), (8, 1)]), start
    assert [d["n_samples"] for d in ds] == [2, 3, 4, 5] and ds[-1]["reason"] == \
        "budget end: 250 s of 250 s spent after 5 samples"
    assert [p.spec["budget_s"] for p in web_ratings[2:]] == [120.0, 120.0, 120.0, 100.0, 50.0]


def test_no_rating_starts_after_the_deadline_but_a_started_one_resumes(store, web_ratings, monkeypatch):
    soon = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=30)).isoformat()
    jobs = sweep.start_sweep(store, {**ACTIVE, "deadline": soon}, "sw")
    first = jobs[1]["item"]["plan"]
    store.put_json(store.rating_key(first["rating_id"], "spec.json"), first)       # its first try began
    later = time.time() + 60
    monkeypatch.setattr(sweep.time, "time", lambda: later)
    rows = [sweep.rate_sample(store, j["sweep"], j["item"], log=lambda m: None) for j in jobs]
    assert [r["peak_rate"] is not None for r in rows] == [False, True] + [False] * 5, rows
    assert rows[0]["reason"] == f"not rated: the deadline {soon} passed" and len(web_ratings) == 1
    d = sweep.decide_round(store, "sw", 0)
    assert d["done"] and d["reason"] == "deadline passed after 1 samples"
    with pytest.raises(ParamError, match="deadline: .* has passed"):
        sweep.plan_sweep({**ACTIVE, "deadline": "2026-01-01T00:00:00Z"}, "sw3")
    with pytest.raises(ParamError, match="sweep_budget_s: 5 "):
        sweep.plan_sweep({**ACTIVE, "sweep_budget_s": 5}, "sw3")
