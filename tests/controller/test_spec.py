"""RatingSpec: defaults from the paper, validation naming the field, goals."""
from __future__ import annotations

import dataclasses
import json
import math

import pytest

from workbench.controller.spec import RatingSpec


def test_spec_defaults_follow_the_paper():
    s = RatingSpec()
    assert (s.r_sat_ms, s.width, s.l_sat_ms, s.confidence, s.accuracy) == (40, 0.10, 2000, 0.95, 0.90)
    assert s.policy.name == "local" and s.first_load == 50 and s.seed_load is None     # the recommended policy
    assert RatingSpec(policy="binsearch").stop_rule == "inside" and s.stop_rule == "fit"
    assert s.region == pytest.approx((36, 44))
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.r_sat_ms = 10


@pytest.mark.parametrize("field,value", [
    ("r_sat_ms", 0), ("r_sat_ms", -1), ("r_sat_ms", math.nan), ("r_sat_ms", "40"),
    ("width", 0), ("width", 1.0), ("l_sat_ms", 0), ("p_sat", 1.5), ("p_sat", 0),
    ("confidence", 1.0), ("confidence", 0), ("accuracy", 1.0), ("accuracy", -0.1),
    ("policy", "random"), ("seed_load", 0), ("seed_load", -5), ("first_load", 0),
    ("runlength_s", 0), ("runlength_s", math.inf), ("runlength_policy", "auto"),
    ("runlength_min_s", -1), ("runlength_max_s", 0), ("max_trials", 1), ("max_trials", 2.5),
    ("budget_s", 0), ("trial_overhead_s", -1), ("goals_ms", []), ("goals_ms", [40, -1]),
    ("goals_ms", 40), ("stop_rule", "contain"), ("min_trials", 1), ("max_trials_per_load", 1),
    ("max_loads", 1), ("max_invalid_per_load", 0),
    ("model_form", "poly"), ("seed_step", 0), ("resolution", 0), ("bound_confidence", 1.0),
])
def test_spec_validation_names_field_and_range(field, value):
    with pytest.raises(ValueError) as e:
        RatingSpec(**{field: value})
    assert field in str(e.value) and "must be" in str(e.value)


def test_spec_runlength_bounds_ordered():
    with pytest.raises(ValueError, match="runlength_min_s"):
        RatingSpec(policy="binsearch", runlength_min_s=100, runlength_max_s=50)


def test_spec_goals():
    s = RatingSpec(policy="binsearch", goals_ms=[50, 30])
    assert s.goals == (30.0, 40.0, 50.0) and s.goals_ms == (50.0, 30.0)


def test_a_plan_spec_stored_with_flat_knobs_still_reads():
    """The spec of a plan stored with the flat knobs (linear_trials, linear_step_ops_s as fields,
    the policy a name; tests/data/store_spec.json's)."""
    old = dict(
        r_sat_ms=40.0, width=0.25, l_sat_ms=2000.0, p_sat=None, confidence=0.9, accuracy=0.8,
        policy="binsearch", seed_load=None, first_load=200.0, runlength_s=5.0,
        runlength_policy="fixed", runlength_min_s=30.0, runlength_max_s=900.0, max_trials=40,
        budget_s=330.0, trial_overhead_s=5.0, goals_ms=None, stop_rule="inside", min_trials=2,
        max_trials_per_load=4, max_loads=20, max_invalid_per_load=3, linear_step_ops_s=None,
        linear_trials=10, model_form="mm1", seed_step=0.1, resolution=0.05, early_side=True,
        edge_patience=0.5, bound_confidence=None,
    )
    spec = RatingSpec.from_dict(old)
    assert (spec.policy.name, spec.stop_rule, spec.runlength_s) == ("binsearch", "inside", 5.0)
    assert RatingSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
