"""The sweep plan: nearest-neighbour order for seeding, factor checks."""
from __future__ import annotations

import pytest

from workbench import pipeline
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
    with pytest.raises(pipeline.ParamError, match="unknown factor 'colour'"):
        sweep.plan_sweep({"factors": {"colour": [1, 2]}}, "sw")
    with pytest.raises(pipeline.ParamError, match="n_samples"):
        sweep.plan_sweep({"factors": {"memory_mb": [128, 256]}, "design": "dopt"}, "sw")
