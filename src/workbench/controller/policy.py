"""Search policies as objects: each owns its knobs and names its picker and the per-load rules it
turns on ([CC] = Cutting Corners, shared/seeds/000_*, newer text 002_*; docs/controller.md).

A policy is a frozen dataclass of declared settings (`config.settings`): only the policy that reads
a knob has it, so `RatingSpec` carries none of them. `LocalPolicy()` is the recommended policy and
the default of `RatingSpec` (chosen by bench/validity.py; docs/performance.md "Issue 16").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from workbench.config.settings import check_settings, setting
from workbench.controller.fit import LocalFit
from workbench.controller.local import Local
from workbench.controller.pickers import Binsearch, Linear, Model, Picker
from workbench.controller.safeguarded import Safeguarded
from workbench.controller.state import SearchState


@dataclass(frozen=True)
class Policy:
    """A search policy. The class attributes are the per-load rules of summary.py, off by
    default."""

    name: ClassVar[str] = ""
    stop_rule: ClassVar[str] = "inside"  # the spec's stop rule unless it names one
    # trials before a load near R_sat is classified (0: min_trials)
    near_min_trials: ClassVar[int] = 0
    distrust_repeats: ClassVar[bool] = False  # a repeated trial mean makes the load's CI unbounded
    monotone_check: ClassVar[bool] = False  # a load reading far below a lower one stays open
    far_factor: ClassVar[float | None] = None  # one trial above far_factor·R_sat saturates a load
    throughput_rule: ClassVar[bool] = False  # a load completing too few operations is saturated
    strawman: ClassVar[bool] = False  # §3.1: fixed trials per load, no CI
    # The local fit of log R(λ) near R_sat (fit.local_fit at fit_confidence) may place the next
    # load (fit_place), stops the rating (stop rule "fit": strategies._local_fit_stop) and narrows
    # the certified λ* interval (certify.certified's use_fit); off: a stop rule "fit" uses
    # fit.fit_peak, and the certified interval is the bounds' alone.
    uses_fit: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_settings(self)

    def picker(self, spec: Any) -> Picker:
        raise NotImplementedError

    def far_threshold_ms(self, r_sat_ms: float) -> float | None:
        """The mean response time above which one trial saturates a load (far_factor·R_sat; None:
        off)."""
        return None if self.far_factor is None else self.far_factor * r_sat_ms

    def probe_runlength_s(self, spec: Any) -> float | None:
        """Runlength of a trial at a load away from R_sat (None: the spec's runlength)."""
        return None

    def fit_confidence(self, c: float) -> float:
        """Confidence of the local fit's stop tests at the spec's confidence c (uses_fit)."""
        return c

    def fit_ci_confidence(self, c: float) -> float:
        """Confidence of the λ* CI the local fit reports (uses_fit)."""
        return c

    def fit_place(
        self, spec: Any, st: SearchState, last_load: float | None, fit: LocalFit | None
    ) -> tuple[float, str] | None:
        """(load, reason) where the local fit of this decision puts the next trial, ahead of the
        picker (strategies.local_fit_step); None: no such load (the default: the picker's)."""
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **dataclasses.asdict(self)}


@dataclass(frozen=True)
class LinearPolicy(Policy):
    """[CC] §3.1 strawman (trials = t): start load, + step, exactly t trials per load, stop at the
    first saturated load. trials None: §5.2 Linear (adaptive trials, then bisection)."""

    name: ClassVar[str] = "linear"
    step_ops_s: float | None = setting(
        None, "Linear increment (ops/s; None: first_load)", lo=0, lo_open=True, hi=1e9
    )
    trials: int | None = setting(
        10,
        "valid trials at every load (None: Algorithm 2's adaptive trials)",
        "integer",
        lo=2,
        hi=10**5,
        none_ok=True,
    )

    @property
    def strawman(self) -> bool:  # type: ignore[override]
        return self.trials is not None

    def step(self, spec: Any) -> float:
        return self.step_ops_s or spec.first_load

    def picker(self, spec: Any) -> Picker:
        return Linear(self.step(spec), strawman=self.strawman)


@dataclass(frozen=True)
class BinsearchPolicy(Policy):
    """[CC] Algorithm 3: double from the start load until saturated, then bisect."""

    name: ClassVar[str] = "binsearch"

    def picker(self, spec: Any) -> Picker:
        return Binsearch(spec.seed_step)


@dataclass(frozen=True)
class ModelPolicy(Policy):
    """[CC] Algorithm 4: a two-point model of R(λ) solved at R_sat."""

    name: ClassVar[str] = "model"

    def picker(self, spec: Any) -> Picker:
        return Model(spec.model_form, spec.seed_step)


@dataclass(frozen=True)
class SafeguardedPolicy(Policy):
    """A galloping opening, then model steps kept inside the bracket (safeguarded.py)."""

    name: ClassVar[str] = "safeguarded"

    def picker(self, spec: Any) -> Picker:
        return Safeguarded(spec.model_form, spec.seed_step)


@dataclass(frozen=True)
class LocalPolicy(Policy):
    """Safeguarded's opening, then the local fit of log R(λ) near R_sat places every trial and stops
    the rating (local.py, fit.py; docs/controller.md "The local policy")."""

    name: ClassVar[str] = "local"
    stop_rule: ClassVar[str] = "fit"
    uses_fit: ClassVar[bool] = True
    near_min_trials: ClassVar[int] = 3
    distrust_repeats: ClassVar[bool] = True
    monotone_check: ClassVar[bool] = True
    # A knob of this policy where the others have a fixed rule (the base's ClassVar): mypy cannot
    # express a class attribute that a subclass turns into a dataclass field.
    far_factor: float | None = setting(  # type: ignore[misc]
        4.0,
        "one trial above far_factor·R_sat saturates a load (None: off)",
        lo=1.0,
        hi=1e6,
        lo_open=True,
        hi_open=True,
        none_ok=True,
    )
    throughput_rule: bool = setting(  # type: ignore[misc]  # (as far_factor)
        True,
        "a load that completes significantly fewer operations than offered "
        "(Poisson z < −5) is saturated",
        "bool",
    )
    probe_share: float | None = setting(
        0.5,
        "trials away from R_sat run this share of runlength_s (None: all run runlength_s)",
        lo=0.0,
        hi=1.0,
        lo_open=True,
        none_ok=True,
    )
    # The fit's per-look error as a share of 1 − c: 0.5 cost up to 15 % more, 1.0 fell below 90 % in
    # region on the knee and cold families (docs/performance.md, issue 16 fifth stage).
    fit_stop_share: float = setting(
        0.8, "the fit's stop tests run at 1 − share·(1 − c)", lo=0.0, hi=1.0, lo_open=True
    )
    fit_ci_share: float = setting(
        0.2, "the fit's reported λ* CI is at 1 − share·(1 − c)", lo=0.0, hi=1.0, lo_open=True
    )
    # issue 30 (d): after the gallop's first overloaded load, the next load is its completion rate
    # × (1 + capacity_cut) (safeguarded.Safeguarded._capacity_cut)
    capacity_cut: float | None = setting(
        None,
        "after an overloaded gallop load, try its completion rate × (1 + this) next (None: off)",
        lo=0.0,
        hi=1.0,
        none_ok=True,
    )

    def picker(self, spec: Any) -> Local:
        return Local(spec)

    def fit_confidence(self, c: float) -> float:
        """Confidence of the fit's stop tests: tested after every trial, a stricter per-look level
        keeps the sequential error near 1 − c."""
        return round(1.0 - self.fit_stop_share * (1.0 - c), 6)

    def fit_ci_confidence(self, c: float) -> float:
        return round(1.0 - self.fit_ci_share * (1.0 - c), 6)

    def probe_runlength_s(self, spec: Any) -> float | None:
        return None if self.probe_share is None else self.probe_share * spec.runlength_s

    def fit_place(
        self, spec: Any, st: SearchState, last_load: float | None, fit: LocalFit | None
    ) -> tuple[float, str] | None:
        return self.picker(spec).place(st, last_load, fit)


POLICY_CLASSES: dict[str, type[Policy]] = {
    c.name: c for c in (LinearPolicy, BinsearchPolicy, ModelPolicy, SafeguardedPolicy, LocalPolicy)
}
RECOMMENDED = LocalPolicy


def policy_from(value: Any) -> Policy:
    """A Policy from itself, its name (default knobs) or its dict ({"name": ..., knobs})."""
    if isinstance(value, Policy):
        return value
    if isinstance(value, str) and value in POLICY_CLASSES:
        return POLICY_CLASSES[value]()
    if isinstance(value, Mapping) and value.get("name") in POLICY_CLASSES:
        cls = POLICY_CLASSES[value["name"]]
        knobs = {k: v for k, v in value.items() if k != "name"}
        unknown = sorted(set(knobs) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"policy {value['name']}: unknown setting(s) {', '.join(unknown)}")
        return cls(**knobs)
    raise ValueError(
        f"RatingSpec.policy must be one of {', '.join(POLICY_CLASSES)} (or a Policy), got {value!r}"
    )
