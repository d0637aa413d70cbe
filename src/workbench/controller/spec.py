"""`RatingSpec`: what "rated" means (R_sat, region, c, a) and how to search for it, flat: the public
contract (`from workbench import RatingSpec`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workbench.config.settings import check_settings
from workbench.controller.parts import Budget, Goals, Search
from workbench.controller.policy import RECOMMENDED, Policy, policy_from
from workbench.controller.state import load_key

# Knobs that were flat RatingSpec fields before policies were objects (RatingSpec.from_dict)
LEGACY_POLICY_FIELDS = (
    "linear_step_ops_s",
    "linear_trials",
    "far_factor",
    "throughput_rule",
    "probe_runlength_s",
    "fit_confidence",
    "fit_ci_confidence",
)


def _legacy_policy(name: str, legacy: Mapping[str, Any], d: Mapping[str, Any]) -> dict[str, Any]:
    """The policy dict of a spec stored with flat knobs."""
    if name == "linear":
        return {
            "name": name,
            "step_ops_s": legacy.get("linear_step_ops_s"),
            "trials": legacy.get("linear_trials", 10),
        }
    if name != "local":
        return {"name": name}
    c = float(d.get("confidence", 0.95))
    out: dict[str, Any] = {
        "name": name,
        "far_factor": legacy.get("far_factor"),
        "throughput_rule": bool(legacy.get("throughput_rule", False)),
    }
    probe = legacy.get("probe_runlength_s")
    out["probe_share"] = (
        None if probe is None else float(probe) / float(d.get("runlength_s", 180.0))
    )
    for key, share in (("fit_confidence", "fit_stop_share"), ("fit_ci_confidence", "fit_ci_share")):
        if legacy.get(key) is not None:
            out[share] = (1.0 - float(legacy[key])) / (1.0 - c)
    return out


@dataclass(frozen=True)
class RatingSpec(Search, Budget, Goals):
    """What "rated" means and how to search for it: the request's goals, budget and shared search
    rules (parts.py) flat, with the policy (policy.py), whose default is the recommended one.
    Frozen; every setting is declared once, its bounds are checked here, and the Params form and the
    command line are made from the same declarations."""

    # str / dict / Policy (policy_from)
    policy: Policy = dataclasses.field(default_factory=RECOMMENDED)

    def __post_init__(self) -> None:
        object.__setattr__(self, "policy", policy_from(self.policy))
        if self.stop_rule is None:
            object.__setattr__(self, "stop_rule", self.policy.stop_rule)
        check_settings(self)
        self._check_search()
        self._check_budget()
        self._check_goals()
        self._check_goals_fit_a_trial()

    def _check_goals_fit_a_trial(self) -> None:
        """A mean response time longer than the trial itself cannot be measured in it."""
        top = max(self.goals)
        if top > 1000.0 * float(self.runlength_s):
            field = "r_sat_ms" if top == float(self.r_sat_ms) else "goals_ms"
            raise ValueError(
                f"RatingSpec.{field}: {top:g} ms is longer than a trial (runlength_s "
                f"{float(self.runlength_s):g} s); a trial cannot measure a mean that long"
            )

    @classmethod
    def of(cls, goals: Goals, policy: Policy, budget: Budget, search: Search) -> RatingSpec:
        """The spec of a request's parts."""
        parts = {
            f.name: getattr(p, f.name)
            for p in (goals, budget, search)
            for f in dataclasses.fields(p)
        }
        return cls(policy=policy, **parts)

    def part(self, cls: type) -> Any:
        """One part of this spec (Goals, Budget or Search)."""
        return cls(**{f.name: getattr(self, f.name) for f in dataclasses.fields(cls)})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RatingSpec:
        """The spec of a stored dict, also of one written before policies were objects (their knobs
        were flat fields then)."""
        d = dict(d)
        legacy = {k: d.pop(k) for k in LEGACY_POLICY_FIELDS if k in d}
        if legacy and isinstance(d.get("policy", "binsearch"), str):
            d["policy"] = _legacy_policy(d.get("policy", "binsearch"), legacy, d)
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["policy"] = self.policy.to_dict()
        return out

    def is_seed_sample(self, load: float) -> bool:
        """`load` is the seed load of a fixed seed sample (seed_trials set)."""
        return (
            bool(self.seed_trials)
            and self.seed_load is not None
            and load_key(load) == load_key(self.seed_load)
        )

    def min_trials_at(self, load: float) -> int:
        """Valid trials a load needs before it is classified: min_trials, or seed_trials at the seed
        load."""
        if self.seed_trials is not None and self.is_seed_sample(load):
            return max(self.min_trials, self.seed_trials)
        return self.min_trials

    @property
    def strawman(self) -> bool:
        """policy "linear" with a fixed number of trials: the §3.1 strawman."""
        return self.policy.strawman

    def at_goal(self, r_sat_ms: float) -> RatingSpec:
        """The spec that judges goal `r_sat_ms` of this search: itself with that goal's L_sat."""
        l_sat = self.l_sat_for(r_sat_ms)
        return self if l_sat == self.l_sat_ms else dataclasses.replace(self, l_sat_ms=l_sat)

    def for_goal(self, r_sat_ms: float) -> RatingSpec:
        return dataclasses.replace(
            self,
            r_sat_ms=float(r_sat_ms),
            l_sat_ms=self.l_sat_for(r_sat_ms),
            goals_ms=None,
            goals_l_sat_ms=None,
        )
