"""The verdict on the recorded trials of bench/bottleneck.py's constructions: each built limit named.

The full ratings (quick profile, one each) are the bench's; these replay their trial logs, trimmed
to what the verdict reads (tests/data/bottleneck/*.json), so a change to the rules that would
misname a construction fails here in milliseconds rather than in an hour of bench."""
from __future__ import annotations

import json

import pytest

from workbench.findings.bottleneck import verdict
from workbench.config.paths import REPO

DATA = REPO / "tests" / "data" / "bottleneck"
BUILT = {"read_iops": "disk read IOPS", "cpu": "server CPU", "network": "network", "memory": "memory",
         "network_resets": "network",      # a connection reset flags fstress saturated: not the generator
         "generator": "generator",
         "external": "unknown"}


@pytest.mark.parametrize("construction", sorted(BUILT))
def test_each_constructed_limit_is_named(construction):
    case = json.loads((DATA / f"{construction}.json").read_text())
    v = verdict(case["result"], case["records"])
    assert v["resource"] == BUILT[construction], v["line"]
    assert v["line"].startswith(BUILT[construction]), v["line"]


def test_the_external_filer_says_what_the_client_saw():
    case = json.loads((DATA / "external.json").read_text())
    line = verdict(case["result"], case["records"])["line"]
    assert "missing" in line and "client side at" in line and "idle NULL round trip" in line, line
