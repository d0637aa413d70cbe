"""The measured cost of a rating (pipeline.steps.measured_cost): wall time from the start of
provisioning to the summary, split into provision, deploy, trials and orchestration."""
from __future__ import annotations

import pytest

from analysis.cost import cost_text
from workbench.pipeline.localstore import LocalStore
from workbench.pipeline.steps import measured_cost


def test_the_measured_cost_and_its_breakdown(tmp_path):
    store = LocalStore(tmp_path)
    rid = "r1"
    store.put_json(store.rating_key(rid, "timings/provision.json"), {"start_unix": 1000.0, "wall_s": 40.0})
    store.put_json(store.rating_key(rid, "timings/deploy.json"), {"start_unix": 1045.0, "wall_s": 25.0})
    for k, (start, wall) in enumerate([(1075.0, 12.0), (1090.0, 11.5), (1105.0, 12.5)]):
        store.put_trial(rid, k, {"n": k, "load_ops_s": 400.0, "mean_ms": 1.0, "valid": True,
                                 "started_unix": start, "wall_s": wall})
    out = measured_cost(store, rid, store.trials(rid), spec_cost_s=36.0, end_unix=1130.0)
    # 130 s from provisioning to the summary: 40 + 25 + 36 in the steps, 29 s between them
    assert out["cost_s"] == pytest.approx(130.0) and out["cost_spec_s"] == 36.0
    assert out["cost_breakdown_s"] == pytest.approx({"provision": 40.0, "deploy": 25.0, "trials": 36.0,
                                                     "orchestration": 29.0})
    assert cost_text(out) == ("130 s measured (provision 40, deploy 25, trials 36, orchestration 29); "
                              "controller's account 36 s")


def test_a_rating_without_timings_keeps_the_controller_s_account(tmp_path):
    store = LocalStore(tmp_path)
    store.put_trial("old", 0, {"n": 0, "load_ops_s": 400.0, "mean_ms": 1.0, "valid": True})
    out = measured_cost(store, "old", store.trials("old"), spec_cost_s=36.0, end_unix=2000.0)
    assert out == {"cost_spec_s": 36.0, "cost_breakdown_s": None}
    assert cost_text({"cost_s": 36.0, **out}) == "36 s (controller's account: runlength + overhead per trial)"
