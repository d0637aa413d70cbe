"""Slot leases: exclusive, idempotent for a retry, taken over when stale."""
from __future__ import annotations

import os

import pytest

from workbench import pipeline
from workbench.config import paths
from workbench.pipeline import leases


def test_slot_leases_are_exclusive_idempotent_and_expire(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "LEASES", tmp_path / "leases")
    monkeypatch.setattr(paths, "WORKDIR", tmp_path)
    a = pipeline.plan_from_params({"profile": "smoke"}, "rating-a")
    b = pipeline.plan_from_params({"profile": "smoke"}, "rating-b")
    c = pipeline.plan_from_params({"profile": "smoke"}, "rating-c")
    assert pipeline.lease_slot(a) == "slot1" and pipeline.lease_slot(a) == "slot1"   # a retry gets it again
    assert pipeline.lease_slot(b) == "slot2"
    with pytest.raises(RuntimeError, match="slot1 is held by rating rating-a"):
        pipeline.lease_slot(c)
    # rating-a's run died before teardown: after LEASE_STALE_S without activity its lease is taken over
    old = os.path.getmtime(tmp_path / "leases" / "slot1") - leases.LEASE_STALE_S - 5
    os.utime(tmp_path / "leases" / "slot1", (old, old))
    assert pipeline.lease_slot(c) == "slot1"
    assert not pipeline.release_slot(a.with_slot("slot1")) and pipeline.release_slot(c.with_slot("slot1"))
    assert pipeline.teardown(b.with_slot("slot1")) .startswith("slot slot1 not held")
