"""A policy's rules are its hooks (Policy.uses_fit, fit_place, fit_confidence): a new policy class
turns the local fit on or places loads with no edit elsewhere in the controller, which never asks a
policy its name."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import workbench.controller
from workbench.controller.decide import NextTrial, decide, find_peak
from workbench.controller.policy import POLICY_CLASSES, BinsearchPolicy, SafeguardedPolicy
from workbench.controller.spec import RatingSpec
from workbench.controller.trial import TrialResult
from workbench.measure.simulated import SimulatedServer


@dataclass(frozen=True)
class FittedSafeguarded(SafeguardedPolicy):
    """New to the controller: Safeguarded's picker with the local fit's stop and interval."""

    name: ClassVar[str] = "fitted-safeguarded"
    stop_rule: ClassVar[str] = "fit"
    uses_fit: ClassVar[bool] = True


@dataclass(frozen=True)
class Pinned(BinsearchPolicy):
    """New to the controller: once a load was tried, its 'fit' places every trial at 777 ops/s."""

    name: ClassVar[str] = "pinned"
    uses_fit: ClassVar[bool] = True

    def fit_place(self, spec, st, last_load, fit):
        return (777.0, "pinned: 777 ops/s") if st.loads else None

    def probe_runlength_s(self, spec):
        return 1.0  # a probe would show: the load the fit placed runs the full runlength


def _t(mean, load):
    return TrialResult(mean_ms=mean, p95_ms=2 * mean, achieved_rate=load).at(load, 60.0)


def test_a_new_policy_class_with_the_local_fit_stops_on_it():
    spec = RatingSpec(policy=FittedSafeguarded(), runlength_s=60.0)
    assert "fitted-safeguarded" not in POLICY_CLASSES and spec.stop_rule == "fit"
    res = find_peak(spec, SimulatedServer(capacity_ops_s=950, seed=1).measure)
    assert (res.policy, res.stop_rule, res.converged) == ("fitted-safeguarded", "fit", True)
    assert res.reason.startswith("fit: mean at λ̂*")  # the local fit's stop (its level test)
    plain = RatingSpec(policy="safeguarded", stop_rule="fit", runlength_s=60.0)
    other = find_peak(plain, SimulatedServer(capacity_ops_s=950, seed=1).measure)
    assert other.reason.startswith("CI inside") and other.n_trials > res.n_trials


def test_a_new_policy_class_places_loads_through_its_hook():
    spec = RatingSpec(policy=Pinned(), runlength_s=60.0)
    first = NextTrial(50.0, 1.0, "binsearch: initial load (Algorithm 3 step 1)")  # a probe
    assert decide(spec, []) == first
    log = [_t(5.0, 50.0), _t(5.2, 50.0)]
    assert decide(spec, log) == NextTrial(777.0, 60.0, "pinned: 777 ops/s")
    bare = decide(RatingSpec(policy="binsearch", runlength_s=60.0), log)
    assert isinstance(bare, NextTrial) and bare.load_ops_s == 100.0


def test_no_controller_module_asks_a_policy_its_name():
    src = Path(workbench.controller.__file__).parent
    asks = re.compile(r"policy\.name\s*[!=]=|isinstance\([^)]*Local(Policy)?\b")
    hits = [f"{p.name}:{i}" for p in sorted(src.glob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if asks.search(line)]
    assert not hits, hits
