"""`RatingSpec`: what "rated" means (R_sat, region, c, a) and how to search for it."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

from workbench.config.settings import check_settings, setting
from workbench.config.vocabulary import MAX_GOALS, MAX_TRIAL_TASKS, STOP_RULES
from workbench.controller.policy import RECOMMENDED, Policy, policy_from
from workbench.controller.state import load_key
from workbench.stats.intervals import region


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x)


# Knobs that were flat RatingSpec fields before policies were objects (RatingSpec.from_dict)
LEGACY_POLICY_FIELDS = ("linear_step_ops_s", "linear_trials", "far_factor", "throughput_rule",
                        "probe_runlength_s", "fit_confidence", "fit_ci_confidence")


def _legacy_policy(name: str, legacy: Mapping[str, Any], d: Mapping[str, Any]) -> dict[str, Any]:
    """The policy dict of a spec stored with flat knobs."""
    if name == "linear":
        return {"name": name, "step_ops_s": legacy.get("linear_step_ops_s"), "trials": legacy.get("linear_trials", 10)}
    if name != "local":
        return {"name": name}
    c = float(d.get("confidence", 0.95))
    out: dict[str, Any] = {"name": name, "far_factor": legacy.get("far_factor"),
                           "throughput_rule": bool(legacy.get("throughput_rule", False))}
    probe = legacy.get("probe_runlength_s")
    out["probe_share"] = None if probe is None else float(probe) / float(d.get("runlength_s", 180.0))
    for key, share in (("fit_confidence", "fit_stop_share"), ("fit_ci_confidence", "fit_ci_share")):
        if legacy.get(key) is not None:
            out[share] = (1.0 - float(legacy[key])) / (1.0 - c)
    return out


@dataclass(frozen=True)
class RatingSpec:
    """What "rated" means and how to search for it. Frozen; every setting is declared once
    (`config.settings`): its bounds are checked here, and the Params form and the command line are
    made from the same declarations (`form` / `flag`). The policy's own knobs live on the policy
    (`controller.policy`); the default is the recommended one."""

    r_sat_ms: float = setting(40.0, "R_sat: mean response time threshold (ms); the headline goal", lo=0,
                              lo_open=True, form=dict(exclusiveMinimum=0, maximum=100000))
    width: float = setting(0.10, "s: half-width of the peak-rate region, fraction of R_sat", lo=0, hi=1,
                           lo_open=True, hi_open=True, form=dict(exclusiveMinimum=0, maximum=0.9))
    l_sat_ms: float = setting(2000.0, "L_sat: p95 threshold (ms)", lo=0, lo_open=True, inf_ok=True,
                              form=dict(exclusiveMinimum=0, maximum=1000000))
    p_sat: float | None = setting(None, "P_sat: fraction that must finish within L_sat (None: the p95 rule)",
                                  lo=0, hi=1, lo_open=True, hi_open=True)
    confidence: float = setting(0.95, "c: confidence level", lo=0, hi=1, lo_open=True, hi_open=True,
                                form=dict(minimum=0.5, maximum=0.999), flag=True)
    accuracy: float = setting(0.90, "a: accuracy target (Eq. 2)", lo=0, hi=1, lo_open=True, hi_open=True,
                              form=dict(minimum=0.1, maximum=0.999), flag=True)
    policy: Policy = dataclasses.field(default_factory=RECOMMENDED)   # str / dict / Policy (policy_from)
    seed_load: float | None = setting(None, "seeded search: start near this load and bracket around it "
                                            "(ops/s; §3.7)", lo=0, lo_open=True, hi=1e7,
                                      form=dict(exclusiveMinimum=0, maximum=1e7), flag=True)
    seed_trials: int | None = setting(None, "valid trials at the seed load before it is classified",
                                      "integer", lo=2, hi=1000)
    first_load: float = setting(50.0, "first offered load (ops/s; Algorithm 3 step 1)", lo=0, lo_open=True,
                                hi=1e7, flag=True)
    runlength_s: float = setting(180.0, "runlength of a trial (s)", lo=0, lo_open=True,
                                 form=dict(minimum=1, maximum=3600), flag=True)
    runlength_policy: str = setting("fixed", "fixed | adaptive runlength", "choice", choices=("fixed", "adaptive"))
    runlength_min_s: float = setting(30.0, "adaptive runlength: lowest (s)", lo=0, lo_open=True)
    runlength_max_s: float = setting(900.0, "adaptive runlength: highest (s)", lo=0, lo_open=True)
    max_trials: int = setting(400, "trial cap (all trials, invalid and harness failures included)", "integer",
                              lo=2, hi=10**7, form=dict(minimum=2, maximum=MAX_TRIAL_TASKS))
    budget_s: float = setting(math.inf, "cost cap: Σ runlengths + overheads (s)", lo=0, lo_open=True,
                              inf_ok=True, form=dict(minimum=10, maximum=604800), flag=True)
    trial_overhead_s: float = setting(0.0, "per-trial setup/teardown cost (s)", lo=0)
    goals_ms: tuple[float, ...] | None = setting(
        None, "more R_sat goals (ms), e.g. [20, 80]: one search serves them all, the result gives λ* with its "
              "CI per goal", "numbers", lo=0, lo_open=True,
        form=dict(items=dict(type="number", exclusiveMinimum=0, maximum=100000), minItems=1,
                  maxItems=MAX_GOALS - 1))
    goals_l_sat_ms: tuple[float | None, ...] | None = setting(
        None, "L_sat (p95, ms) of each goals_ms goal, in its order, e.g. [500, null]: null = l_sat_ms", "list",
        form=dict(items=dict(type=["null", "number"], exclusiveMinimum=0, maximum=1000000), minItems=1,
                  maxItems=MAX_GOALS - 1))
    stop_rule: str | None = setting(None, "inside | overlap (the paper's) | fit; None: the policy's", "choice",
                                    choices=STOP_RULES)
    min_trials: int = setting(2, "trials before the first CI (Algorithm 2 step 7)", "integer", lo=2, hi=1000)
    max_trials_per_load: int = setting(30, "then the load is classified by its mean alone", "integer",
                                       lo=2, hi=10**5)
    max_loads: int = setting(60, "distinct loads", "integer", lo=2, hi=10**5)
    max_invalid_per_load: int = setting(3, "consecutive invalid trials before giving up", "integer", lo=1,
                                        hi=1000)
    max_harness_in_row: int = setting(3, "consecutive harness failures before giving up (each is re-run and "
                                         "is no sample of the server)", "integer", lo=1, hi=1000)
    # re-runs of not-steady trials per load (steadiness.py); then the load is judged on all its
    # trials. 0: none (the verdict only recorded). < max_invalid_per_load: an excluded trial is an
    # invalid one to decide, and that many in a row would make the load unmeasurable first
    max_unsteady_reruns: int = setting(2, "re-runs of not-steady trials per load", "integer", lo=0, hi=999)
    model_form: str = setting("mm1", "R(λ) form of model steps and interpolation: mm1 R = 1/(a − bλ) (002) | "
                                     "hyperbolic R = a + b/λ (000)", "choice", choices=("mm1", "hyperbolic"))
    seed_step: float = setting(0.10, "δ of the seeded bracketing steps seed·(1 + δ·2^k)", lo=0, hi=10,
                               lo_open=True, hi_open=True)
    resolution: float = setting(0.001, "stop when (hi − lo)/hi ≤ resolution", lo=0, hi=0.5, lo_open=True,
                                hi_open=True)
    # inside rule: classify a potential peak as soon as its CI excludes R_sat (before accuracy a)
    early_side: bool = setting(True, "classify a potential peak once its CI excludes R_sat", "bool")
    # inside rule: keep sampling an accurate CI that straddles an edge only while
    # |R̄ − R_sat| ≤ edge_patience·s·R_sat
    edge_patience: float = setting(0.5, "sample an accurate CI straddling an edge only this near R_sat "
                                        "(× s·R_sat)", lo=0, hi=1e6)
    bound_confidence: float | None = setting(None, "confidence of the per-load bounds of the λ* CI (None: c, "
                                                   "Bonferroni over each load's looks)", lo=0, hi=1,
                                             lo_open=True, hi_open=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "policy", policy_from(self.policy))
        if self.stop_rule is None:
            object.__setattr__(self, "stop_rule", self.policy.stop_rule)
        check_settings(self)
        self._check_relations()
        self._check_goals()

    def _check_relations(self) -> None:
        """The bounds one setting takes from another."""
        def bad(name: str, rng: str) -> ValueError:
            return ValueError(f"RatingSpec.{name} must be {rng}, got {getattr(self, name)!r}")
        if self.seed_trials is not None and self.seed_load is None:
            raise bad("seed_trials", "set only with seed_load")
        if self.runlength_min_s > self.runlength_max_s:
            raise bad("runlength_min_s", f"<= runlength_max_s ({self.runlength_max_s!r})")
        if math.isinf(self.trial_overhead_s):
            raise bad("trial_overhead_s", "a finite number >= 0")
        if self.max_trials_per_load < self.min_trials:
            raise bad("max_trials_per_load", f"an integer in [{self.min_trials}, 100000]")
        if self.max_unsteady_reruns > self.max_invalid_per_load - 1:     # see the field
            raise bad("max_unsteady_reruns", f"an integer in [0, {self.max_invalid_per_load - 1}]")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RatingSpec":
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

    def min_trials_at(self, load: float) -> int:
        """Valid trials a load needs before it is classified: min_trials, or seed_trials at the seed
        load."""
        if self.seed_trials and self.seed_load is not None and load_key(load) == load_key(self.seed_load):
            return max(self.min_trials, self.seed_trials)
        return self.min_trials

    @property
    def strawman(self) -> bool:
        """policy "linear" with a fixed number of trials: the §3.1 strawman."""
        return self.policy.strawman

    @property
    def goals(self) -> tuple[float, ...]:
        """All R_sat goals, ascending: r_sat_ms plus goals_ms."""
        return tuple(sorted({float(self.r_sat_ms), *(self.goals_ms or ())}))

    @property
    def region(self) -> tuple[float, float]:
        return region(self.r_sat_ms, self.width)

    def _check_goals(self) -> None:
        """goals_ms: finite numbers > 0; goals_l_sat_ms: one per goal, each > 0 or None."""
        if self.goals_ms is not None:
            if any(math.isinf(x) for x in self.goals_ms):
                raise ValueError(f"RatingSpec.goals_ms must be a non-empty sequence of numbers > 0 (ms), "
                                 f"got {self.goals_ms!r}")
            object.__setattr__(self, "goals_ms", tuple(float(x) for x in self.goals_ms))
        if self.goals_l_sat_ms is not None:
            ls = self.goals_l_sat_ms
            if isinstance(ls, (int, float, str)) or len(ls) != len(self.goals_ms or ()) or \
                    not all(x is None or (_num(x) and x > 0) for x in ls):
                raise ValueError(f"RatingSpec.goals_l_sat_ms must be one L_sat per goals_ms goal: a number > 0 "
                                 f"(ms) or None (l_sat_ms), got {ls!r}")
            object.__setattr__(self, "goals_l_sat_ms", tuple(None if x is None else float(x) for x in ls))

    def l_sat_for(self, r_sat_ms: float) -> float:
        """The L_sat of goal `r_sat_ms`: its own from goals_l_sat_ms, else l_sat_ms."""
        if float(r_sat_ms) != float(self.r_sat_ms) and self.goals_l_sat_ms is not None:
            own = self.goals_l_sat_ms[self.goals_ms.index(float(r_sat_ms))]
            return self.l_sat_ms if own is None else own
        return self.l_sat_ms

    def at_goal(self, r_sat_ms: float) -> "RatingSpec":
        """The spec that judges goal `r_sat_ms` of this search: itself with that goal's L_sat."""
        l_sat = self.l_sat_for(r_sat_ms)
        return self if l_sat == self.l_sat_ms else dataclasses.replace(self, l_sat_ms=l_sat)

    def for_goal(self, r_sat_ms: float) -> "RatingSpec":
        return dataclasses.replace(self, r_sat_ms=float(r_sat_ms), l_sat_ms=self.l_sat_for(r_sat_ms), goals_ms=None,
                                   goals_l_sat_ms=None)
