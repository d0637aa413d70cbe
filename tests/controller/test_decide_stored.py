"""Stored ratings of the last release load and resume: data/stored_ratings.json holds five ratings as
the controller of 8760c42 (before the typed steps) stored them — the spec (RatingSpec.to_dict), the
trial log (TrialResult.to_dict), the decision before each trial and the result (PeakResult.to_dict
without its trials). From every prefix of a stored log, decide places the trial that followed, with
the same reason and runlength; on the whole log it gives the stored result, figure for figure."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.controller.decide import Done, NextTrial, decide
from workbench.controller.spec import RatingSpec
from workbench.controller.trial import TrialResult

DATA = Path(__file__).parent / "data"
STORED = json.loads((DATA / "stored_ratings.json").read_text())["cases"]


def _canonical(d: dict) -> str:
    """JSON text of a dict (tuples as lists; NaN written alike on both sides)."""
    return json.dumps(json.loads(json.dumps(d)), sort_keys=True)


@pytest.mark.parametrize("case", STORED, ids=[c["name"] for c in STORED])
def test_a_stored_rating_resumes_from_every_trial_and_ends_as_stored(case):
    spec = RatingSpec.from_dict(case["spec"])
    assert _canonical(spec.to_dict()) == _canonical(case["spec"])
    log = [TrialResult.from_dict(t) for t in case["trials"]]
    assert len(case["decisions"]) == len(log)
    for k, (load, runlength, reason) in enumerate(case["decisions"]):
        d = decide(spec, log[:k])
        assert d == NextTrial(load, runlength, reason), f"trial {k}"
    end = decide(spec, log)
    assert isinstance(end, Done)
    got = end.result.to_dict()
    assert got.pop("trials") == case["trials"]
    assert _canonical(got) == _canonical(case["result"])


def test_the_stored_ratings_cover_each_ending():
    reasons = [c["result"]["reason"] for c in STORED]
    decisions = [d[2] for c in STORED for d in c["decisions"]]
    assert {c["result"]["policy"] for c in STORED} == {"local", "binsearch", "safeguarded", "linear"}
    assert any(r.startswith("fit: mean at") for r in reasons)  # the local fit's level stop
    assert any(r.startswith("fit: λ* CI") for r in reasons)
    assert any(r.startswith("CI inside") for r in reasons)
    assert any(r.startswith("linear strawman") for r in reasons)
    assert any("tighten" in d for d in decisions) and any("re-run" in d for d in decisions)
    assert any("harness failure" in d for d in decisions)
