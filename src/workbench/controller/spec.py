"""`RatingSpec`: what "rated" means (R_sat, region, c, a) and how to search for it."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable

from workbench.config.vocabulary import POLICIES, STOP_RULES
from workbench.controller.state import load_key
from workbench.stats.intervals import region


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x)


@dataclass(frozen=True)
class RatingSpec:
    """What "rated" means and how to search for it. Frozen; every field is range-checked."""

    r_sat_ms: float = 40.0                 # mean response time threshold R_sat (ms)
    width: float = 0.10                    # s: peak-rate region [R_sat ± s·R_sat]
    l_sat_ms: float = 2000.0               # latency threshold L_sat (ms) for the percentile rule
    p_sat: float | None = None             # P_sat fraction that must finish within L_sat (None: p95 rule)
    confidence: float = 0.95               # c
    accuracy: float = 0.90                 # a (Eq. 2)
    policy: str = "binsearch"              # linear | binsearch | model | safeguarded
    seed_load: float | None = None         # §3.7 seeding: start here and bracket around it
    seed_trials: int | None = None         # valid trials at the seed load before it is classified
                                           # (a fixed sample there, e.g. for the nightly comparison)
    first_load: float = 50.0               # Algorithm 3 step 1 (ops/s)
    runlength_s: float = 180.0             # fixed runlength / first trials with adaptive (3 min, §4.3)
    runlength_policy: str = "fixed"        # fixed | adaptive
    runlength_min_s: float = 30.0          # adaptive bounds
    runlength_max_s: float = 900.0
    max_trials: int = 400                  # all trials, invalid and harness failures included
    budget_s: float = math.inf             # total cost cap (runlengths + overheads), seconds
    trial_overhead_s: float = 0.0          # per-trial setup/teardown cost, seconds
    goals_ms: tuple[float, ...] | None = None   # extra R_sat goals (multi-goal; trials reused)
    goals_l_sat_ms: tuple[float | None, ...] | None = None   # L_sat of each goals_ms goal (None: l_sat_ms)
    stop_rule: str = "inside"              # inside (default, valid) | overlap (the paper's) | fit
                                           # (inside, or a local fit's λ* CI inside the region)
    min_trials: int = 2                    # trials before the first CI (Algorithm 2 step 7)
    max_trials_per_load: int = 30          # then the load is classified by its mean alone
    max_loads: int = 60                    # distinct loads
    max_invalid_per_load: int = 3          # consecutive invalid trials before giving up
    max_harness_in_row: int = 3            # consecutive harness failures before giving up (each is
                                           # re-run and is no sample of the server)
    max_unsteady_reruns: int = 2           # re-runs of not-steady trials per load (steadiness.py); then
                                           # the load is judged on all its trials. 0: none (the
                                           # verdict only recorded). < max_invalid_per_load: an
                                           # excluded trial is an invalid one to decide, and that
                                           # many in a row would make the load unmeasurable first
    linear_step_ops_s: float | None = None # Linear increment (default: first_load)
    linear_trials: int | None = 10         # Linear strawman (§3.1): exactly this many valid trials at
                                           # every load, classified by the mean (and the p95 rule),
                                           # stop at the first saturated load. None: the §5.2 Linear
                                           # (Algorithm 2's adaptive trials, then bisection)
    model_form: str = "mm1"                # mm1: R = 1/(a − bλ) (002) | hyperbolic: R = a + b/λ (000)
    seed_step: float = 0.10                # δ of the seeded bracketing steps seed·(1 + δ·2^k)
    resolution: float = 0.001              # stop when (hi − lo)/hi ≤ resolution
    early_side: bool = True                # inside rule: classify a potential peak as soon as its CI
                                           # excludes R_sat (before accuracy a is reached)
    edge_patience: float = 0.5             # inside rule: keep sampling an accurate CI that straddles
                                           # an edge only while |R̄ − R_sat| ≤ edge_patience·s·R_sat
    far_factor: float | None = None        # a load whose first valid trial lies above f·R_sat is
                                           # saturated by that trial alone (None: off)
    probe_runlength_s: float | None = None # policy "local": runlength of trials at loads outside the
                                           # local fit's window (None: runlength_s)
    throughput_rule: bool = False          # a load that completes significantly fewer operations than
                                           # offered (Poisson z < −3) is saturated
    fit_confidence: float | None = None    # policy "local": confidence of the local fit's stop tests
                                           # (None: c)
    fit_ci_confidence: float | None = None # policy "local": confidence of the fit's reported λ* CI
                                           # (None: c)
    bound_confidence: float | None = None  # confidence of the per-load bounds of the λ* CI
                                           # (None: c, Bonferroni over each load's looks)

    def __post_init__(self) -> None:
        def bad(name: str, rng: str) -> ValueError:
            return ValueError(f"RatingSpec.{name} must be {rng}, got {getattr(self, name)!r}")

        def pos(name: str, allow_inf: bool = False) -> None:
            v = getattr(self, name)
            if not _num(v) or v <= 0 or (not allow_inf and math.isinf(v)):
                raise bad(name, "a number > 0" + ("" if not allow_inf else " (inf allowed)"))

        def frac(name: str, lo_open: float = 0.0, hi_open: float = 1.0) -> None:
            v = getattr(self, name)
            if not _num(v) or not (lo_open < v < hi_open):
                raise bad(name, f"in ({lo_open:g}, {hi_open:g})")

        def integer(name: str, lo: int, hi: int) -> None:
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not (lo <= v <= hi):
                raise bad(name, f"an integer in [{lo}, {hi}]")

        pos("r_sat_ms")
        frac("width")
        pos("l_sat_ms", allow_inf=True)
        if self.p_sat is not None:
            frac("p_sat")
        frac("confidence")
        frac("accuracy")
        if self.policy not in POLICIES:
            raise bad("policy", "one of " + ", ".join(POLICIES))
        if self.seed_load is not None:
            pos("seed_load")
        if self.seed_trials is not None:
            integer("seed_trials", 2, 1000)
            if self.seed_load is None:
                raise bad("seed_trials", "set only with seed_load")
        pos("first_load")
        pos("runlength_s")
        if self.runlength_policy not in ("fixed", "adaptive"):
            raise bad("runlength_policy", "'fixed' or 'adaptive'")
        pos("runlength_min_s")
        pos("runlength_max_s")
        if self.runlength_min_s > self.runlength_max_s:
            raise bad("runlength_min_s", f"<= runlength_max_s ({self.runlength_max_s!r})")
        integer("max_trials", 2, 10**7)
        pos("budget_s", allow_inf=True)
        if not _num(self.trial_overhead_s) or self.trial_overhead_s < 0 or math.isinf(self.trial_overhead_s):
            raise bad("trial_overhead_s", "a finite number >= 0")
        self._check_goals(bad)
        if self.stop_rule not in STOP_RULES:
            raise bad("stop_rule", "'inside', 'overlap' or 'fit'")
        for name, lo, hi in (("min_trials", 2, 1000), ("max_trials_per_load", self.min_trials, 10**5),
                             ("max_loads", 2, 10**5), ("max_invalid_per_load", 1, 1000),
                             ("max_harness_in_row", 1, 1000)):
            integer(name, lo, hi)
        integer("max_unsteady_reruns", 0, self.max_invalid_per_load - 1)     # see the field
        if self.linear_step_ops_s is not None:
            pos("linear_step_ops_s")
        if self.linear_trials is not None:
            integer("linear_trials", 2, 10**5)
        if self.model_form not in ("mm1", "hyperbolic"):
            raise bad("model_form", "'mm1' or 'hyperbolic'")
        frac("seed_step", 0.0, 10.0)
        frac("resolution", 0.0, 0.5)
        if not _num(self.edge_patience) or not (0 <= self.edge_patience <= 1e6):
            raise bad("edge_patience", "a number >= 0")
        if self.bound_confidence is not None:
            frac("bound_confidence")
        if self.far_factor is not None and (not _num(self.far_factor) or not 1.0 < self.far_factor < 1e6):
            raise bad("far_factor", "None or a number in (1, 1e6)")
        if self.fit_confidence is not None:
            frac("fit_confidence")
        if self.fit_ci_confidence is not None:
            frac("fit_ci_confidence")
        if not isinstance(self.throughput_rule, bool):
            raise bad("throughput_rule", "a bool")
        if self.probe_runlength_s is not None:
            pos("probe_runlength_s")

    def min_trials_at(self, load: float) -> int:
        """Valid trials a load needs before it is classified: min_trials, or seed_trials at the seed
        load."""
        if self.seed_trials and self.seed_load is not None and load_key(load) == load_key(self.seed_load):
            return max(self.min_trials, self.seed_trials)
        return self.min_trials

    @property
    def strawman(self) -> bool:
        """policy "linear" with fixed `linear_trials`: the §3.1 strawman."""
        return self.policy == "linear" and self.linear_trials is not None

    @property
    def linear_step(self) -> float:
        return self.linear_step_ops_s or self.first_load

    @property
    def goals(self) -> tuple[float, ...]:
        """All R_sat goals, ascending: r_sat_ms plus goals_ms."""
        return tuple(sorted({float(self.r_sat_ms), *(self.goals_ms or ())}))

    @property
    def region(self) -> tuple[float, float]:
        return region(self.r_sat_ms, self.width)

    def _check_goals(self, bad: Callable[[str, str], ValueError]) -> None:
        """goals_ms: numbers > 0; goals_l_sat_ms: one per goal, each > 0 or None."""
        if self.goals_ms is not None:
            g = self.goals_ms
            if isinstance(g, (int, float)) or not all(_num(x) and 0 < x < math.inf for x in g) or len(g) == 0:
                raise bad("goals_ms", "a non-empty sequence of numbers > 0 (ms)")
            object.__setattr__(self, "goals_ms", tuple(float(x) for x in g))
        if self.goals_l_sat_ms is not None:
            ls = self.goals_l_sat_ms
            if isinstance(ls, (int, float, str)) or len(ls) != len(self.goals_ms or ()) or \
                    not all(x is None or (_num(x) and x > 0) for x in ls):
                raise bad("goals_l_sat_ms", "one L_sat per goals_ms goal: a number > 0 (ms) or None (l_sat_ms)")
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
