"""The sweep plan: nearest-neighbour order for seeding, factor checks."""
from __future__ import annotations

import pytest

from analysis.surface_report import surface_plots, surface_report_step
from workbench.params.plan import ParamError, RatingPlan
from workbench.pipeline import sweep


def test_sweep_plan_orders_for_seeding_and_checks_factors():
    sw = sweep.plan_sweep({"workload": "web_server", "profile": "smoke",
                           "factors": {"memory_mb": [128, 256], "read_iops": [100, 200]}}, "sw")
    samples = [it["sample"] for it in sw["samples"]]
    assert len(samples) == 4 and samples[0] == {"memory_mb": 128, "read_iops": 100}
    # nearest-neighbour chain: consecutive samples differ in one factor
    for a, b in zip(samples, samples[1:]):
        assert sum(a[k] != b[k] for k in a) == 1
    assert [it["plan"]["rating_id"] for it in sw["samples"]] == [f"sw__s{i:02d}" for i in range(4)]
    with pytest.raises(ParamError, match="unknown factor 'colour'"):
        sweep.plan_sweep({"factors": {"colour": [1, 2]}}, "sw")
    with pytest.raises(ParamError, match="n_samples"):
        sweep.plan_sweep({"factors": {"memory_mb": [128, 256]}, "design": "dopt"}, "sw")


def test_a_retried_sample_keeps_the_seed_of_its_first_try(tmp_path, monkeypatch):
    """Seeding reads the finished samples, which grow while a sweep runs: a sample retried (on any
    worker) after another finished must resume its trial log with its first try's seed, not a new one."""
    from workbench.store.local import LocalStore

    store = LocalStore(tmp_path / "store")
    store.ensure_bucket()
    sw = sweep.plan_sweep({"workload": "web_server", "profile": "smoke",
                           "factors": {"read_iops": [90, 100, 105]}}, "sw")
    assert [it["sample"]["read_iops"] for it in sw["samples"]] == [90, 100, 105]
    head = {k: v for k, v in sw.items() if k != "samples"}
    seeds = []

    def fake_rating(plan, store_, log=print, report=None):
        seeds.append(plan.spec.get("seed_load"))
        store_.put_json(store_.rating_key(plan.rating_id, "spec.json"), plan.to_dict())
        if plan.rating_id.endswith("s01") and len(seeds) == 2:
            raise RuntimeError("worker lost")          # the first try of sample 1 dies mid-rating
        lam = 1000.0 + 100 * len(seeds)
        return {"peak_rate": lam, "converged": True, "n_trials": 5, "cost_s": 50.0, "bracket": [lam, lam],
                "peak_rate_ci": [lam, lam], "reason": "converged"}

    monkeypatch.setattr(sweep, "run_rating", fake_rating)
    first = sweep.rate_sample(store, head, sw["samples"][0], log=lambda m: None)
    with pytest.raises(RuntimeError, match="worker lost"):
        sweep.rate_sample(store, head, sw["samples"][1], log=lambda m: None)
    third = sweep.rate_sample(store, head, sw["samples"][2], log=lambda m: None)
    retried = sweep.rate_sample(store, head, sw["samples"][1], log=lambda m: None)
    assert seeds[:2] == [None, first["peak_rate"]]
    assert third["peak_rate"] != first["peak_rate"]    # 105, not 90, is 100's nearest finished sample now
    assert seeds[3] == first["peak_rate"] and retried["seed_load"] == first["peak_rate"], seeds
    # a sample already rated is not rated again
    assert sweep.rate_sample(store, head, sw["samples"][1], log=lambda m: None) == retried and len(seeds) == 4


def test_a_2x2_sweep_seeds_later_samples_and_ends_in_a_model_a_plot_and_a_report(tmp_path, monkeypatch):
    """The whole sweep in one process (fake ratings, local store): the first sample unseeded, every
    later one seeded from a finished one; the fit, the contour plot of the factor pair, the report
    linking each sample's rating report. (On real slots and two Celery workers: tests/dags/test_celery.py.)"""
    from workbench.store.local import LocalStore

    store = LocalStore(tmp_path / "store")
    store.ensure_bucket()
    jobs = sweep.start_sweep(store, {"workload": "web_server", "profile": "smoke",
                                     "factors": {"threads": [8, 16], "read_iops": [90, 100]}}, "sw")

    def fake_rating(plan, store_, log=print, report=None):
        f = plan.factors
        lam = 10.0 * f["read_iops"] + 0.5 * f["threads"]
        store_.put_json(store_.rating_key(plan.rating_id, "report.html"), {"fake": True})
        return {"peak_rate": lam, "converged": True, "n_trials": 5, "cost_s": 50.0, "bracket": [lam, lam],
                "peak_rate_ci": [lam, lam], "reason": "converged"}

    monkeypatch.setattr(sweep, "run_rating", fake_rating)
    rows = [sweep.rate_sample(store, j["sweep"], j["item"], log=lambda m: None) for j in jobs]
    assert [r["seed_load"] is None for r in rows] == [True, False, False, False]
    assert {r["seed_load"] for r in rows[1:]} <= {r["peak_rate"] for r in rows}
    summary = sweep.finish_sweep(store, "sw", rows)
    surface_report_step(store, "sw", rows)
    assert summary["n_samples"] == 4 and summary["coefficients"]
    keys = store.list_keys("surfaces/sw/")
    assert "surfaces/sw/plots/surface_read_iops_threads.png" in keys, keys       # factor names sorted
    page = store.get_bytes("surfaces/sw/report.html").decode()
    assert all(f'href="../../ratings/{r["rating_id"]}/report.html"' in page for r in rows)


def test_a_sweep_over_nfs_version_rates_each_sample_over_its_version(tmp_path, monkeypatch):
    """nfs_version is a categorical sweep factor: each sample's plan carries its version (to the
    harness's extra-vars), the fit codes it, an external filer takes it in a sweep; its levels are the
    strings "3" and "4.1" (YAML numbers are refused naming the factor)."""
    from workbench.store.local import LocalStore

    store = LocalStore(tmp_path / "store")
    store.ensure_bucket()
    jobs = sweep.start_sweep(store, {"workload": "web_server", "profile": "smoke",
                                     "factors": {"nfs_version": ["3", "4.1"], "read_iops": [90, 100]}}, "sw")
    plans = [RatingPlan.from_dict(j["item"]["plan"]) for j in jobs]
    assert sorted((p.factors["nfs_version"], p.factors["read_iops"]) for p in plans) == [
        ("3", 90), ("3", 100), ("4.1", 90), ("4.1", 100)]

    def fake_rating(plan, store_, log=print, report=None):
        lam = 10.0 * plan.factors["read_iops"] - (50.0 if plan.factors["nfs_version"] == "4.1" else 0.0)
        return {"peak_rate": lam, "converged": True, "n_trials": 5, "cost_s": 50.0, "bracket": [lam, lam],
                "peak_rate_ci": [lam, lam], "reason": "converged"}

    monkeypatch.setattr(sweep, "run_rating", fake_rating)
    rows = [sweep.rate_sample(store, j["sweep"], j["item"], log=lambda m: None) for j in jobs]
    summary = sweep.finish_sweep(store, "sw", rows)
    surface_report_step(store, "sw", rows)
    assert summary["n_samples"] == 4 and any("nfs_version" in str(t) for t in summary["coefficients"])
    # one numeric factor beside a categorical one: its curve, the model at nfs_version "3"
    assert "surfaces/sw/plots/curve_read_iops.png" in store.list_keys("surfaces/sw/")
    filer = {"server_address": "10.251.11.1", "server_export": "/export"}
    sw = sweep.plan_sweep({"factors": {"nfs_version": ["3", "4.1"]}, "fixed": filer}, "ext")
    assert [it["plan"]["factors"] for it in sw["samples"]] == [{"nfs_version": "3"}, {"nfs_version": "4.1"}]
    with pytest.raises(ParamError, match=r"nfs_version: expected string, got int 3"):
        sweep.plan_sweep({"factors": {"nfs_version": [3, 4.1]}}, "sw")
    with pytest.raises(ParamError, match=r"nfs_version: '4\.0' is not one of 3, 4\.1"):
        sweep.plan_sweep({"factors": {"nfs_version": ["3", "4.0"]}}, "sw")


def test_a_sweep_over_zipf_alpha_renders_each_sample_s_workload():
    """A workload factor is a numeric sweep factor next to the server factors: each sample's
    workload is the base plus its level, as fstress text; levels stay real numbers."""
    sw = sweep.plan_sweep({"workload": "web_server", "profile": "smoke",
                           "factors": {"zipf_alpha": [0.6, 0.9], "read_iops": [90, 100]}}, "sw")
    samples = [it["sample"] for it in sw["samples"]]
    assert sorted((s["zipf_alpha"], s["read_iops"]) for s in samples) == [(0.6, 90), (0.6, 100), (0.9, 90), (0.9, 100)]
    for it in sw["samples"]:
        plan = RatingPlan.from_dict(it["plan"])
        alpha = it["sample"]["zipf_alpha"]
        assert plan.workload == "web_server" and plan.workload_factors == {"zipf_alpha": alpha}
        assert plan.workload_text.startswith("base = web_server\n")
        assert f"file_popularity = zipf:{alpha:g}\n" in plan.workload_text
        assert plan.factors["read_iops"] == it["sample"]["read_iops"]
    space = sweep.space_of(sw)
    assert not space["zipf_alpha"].integer and space["read_iops"].integer


def test_one_numeric_factor_gets_its_curve_with_cis_and_the_fit():
    """A sweep over tenant B's load alone (the interference curve): no pair to contour, so the plot
    is λ* against B's load — the measured points with their CIs (one open above) and the quadratic."""
    import numpy as np
    plan = {"factors": {"background_ops_s": [0, 75, 150]}, "degree": 2, "design": "fullfact"}
    rows = [{"sample": {"background_ops_s": b}, "peak_rate": lam, "peak_rate_ci": ci}
            for b, lam, ci in ((0, 300.0, [280.0, 320.0]), (75, 250.0, [230.0, None]), (150, 185.0, [170.0, 200.0]))]
    model, summary = sweep.fit_surface(plan, rows)
    assert np.allclose(model.fitted, [300.0, 250.0, 185.0]) and summary["rank"] == 3      # 3 points, 3 terms
    plots = surface_plots(plan, rows, model)
    assert list(plots) == ["curve_background_ops_s.png"] and plots["curve_background_ops_s.png"][:4] == b"\x89PNG"
