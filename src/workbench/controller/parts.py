"""The controller's part of a rating request, split by meaning: `Goals` (what "rated" means),
`Budget` (what a rating may spend) and `Search` (the rules every policy shares). Each field is a
declared setting (`config.settings`): its type, bounds, default and help are written once, here;
`RatingSpec` (spec.py) is all three flat, with the policy (policy.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from workbench.config.settings import check_settings, setting
from workbench.config.vocabulary import MAX_GOALS, MAX_TRIAL_TASKS, STOP_RULES
from workbench.stats.intervals import region

# The finest latency a trial measures: fstress's histograms count whole microseconds
# (loadgen/internal/results: HistMinUs 1)
MIN_R_SAT_MS = 0.001


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x)


@dataclass(frozen=True)
class Goals:
    """What "rated" means: R_sat (and more goals), the peak-rate region's half-width s, L_sat, c,
    a."""

    r_sat_ms: float = setting(
        40.0,
        "R_sat: mean response time threshold (ms); the headline goal",
        lo=0,
        lo_open=True,
        form=dict(exclusiveMinimum=0, maximum=100000),
    )
    goals_ms: tuple[float, ...] | None = setting(
        None,
        "more R_sat goals (ms), e.g. [20, 80]: one search serves them all, the result gives λ* "
        "with its CI per goal",
        "numbers",
        lo=0,
        lo_open=True,
        form=dict(
            items=dict(type="number", exclusiveMinimum=0, maximum=100000),
            minItems=1,
            maxItems=MAX_GOALS - 1,
        ),
    )
    width: float = setting(
        0.10,
        "s: half-width of the peak-rate region, fraction of R_sat",
        lo=0,
        hi=1,
        lo_open=True,
        hi_open=True,
        form=dict(exclusiveMinimum=0, maximum=0.9),
        flag=True,
    )
    l_sat_ms: float = setting(
        2000.0,
        "L_sat: p95 threshold (ms)",
        lo=0,
        lo_open=True,
        inf_ok=True,
        form=dict(exclusiveMinimum=0, maximum=1000000),
    )
    goals_l_sat_ms: tuple[float | None, ...] | None = setting(
        None,
        "L_sat (p95, ms) of each goals_ms goal, in its order, e.g. [500, null]: null = l_sat_ms",
        "list",
        form=dict(
            items=dict(type=["null", "number"], exclusiveMinimum=0, maximum=1000000),
            minItems=1,
            maxItems=MAX_GOALS - 1,
        ),
    )
    p_sat: float | None = setting(
        None,
        "P_sat: fraction that must finish within L_sat (None: the p95 rule)",
        lo=0,
        hi=1,
        lo_open=True,
        hi_open=True,
    )
    confidence: float = setting(
        0.95,
        "c: confidence level",
        lo=0,
        hi=1,
        lo_open=True,
        hi_open=True,
        form=dict(minimum=0.5, maximum=0.999),
        flag=True,
    )
    accuracy: float = setting(
        0.90,
        "a: accuracy target (Eq. 2)",
        lo=0,
        hi=1,
        lo_open=True,
        hi_open=True,
        form=dict(minimum=0.1, maximum=0.999),
        flag=True,
    )

    def __post_init__(self) -> None:
        check_settings(self)
        self._check_goals()

    @property
    def goals(self) -> tuple[float, ...]:
        """All R_sat goals, ascending: r_sat_ms plus goals_ms."""
        return tuple(sorted({float(self.r_sat_ms), *(self.goals_ms or ())}))

    @property
    def region(self) -> tuple[float, float]:
        return region(self.r_sat_ms, self.width)

    def _check_goals(self) -> None:
        """goals_ms: finite numbers > 0; goals_l_sat_ms: one per goal, each > 0 or None."""
        name = type(self).__name__
        if self.goals_ms is not None:
            if any(math.isinf(x) for x in self.goals_ms):
                raise ValueError(
                    f"{name}.goals_ms must be a non-empty sequence of numbers > 0 (ms), "
                    f"got {self.goals_ms!r}"
                )
            object.__setattr__(self, "goals_ms", tuple(float(x) for x in self.goals_ms))
        if self.goals_l_sat_ms is not None:
            ls = self.goals_l_sat_ms
            if (
                isinstance(ls, (int, float, str))
                or len(ls) != len(self.goals_ms or ())
                or not all(x is None or (_num(x) and x > 0) for x in ls)
            ):
                raise ValueError(
                    f"{name}.goals_l_sat_ms must be one L_sat per goals_ms goal: a number > 0 "
                    f"(ms) or None (l_sat_ms), got {ls!r}"
                )
            object.__setattr__(
                self, "goals_l_sat_ms", tuple(None if x is None else float(x) for x in ls)
            )
        self._check_goal_sense()

    def _check_goal_sense(self) -> None:
        """Each goal measurable: R_sat at least the finest latency fstress records."""
        for r_sat in self.goals:
            if r_sat < MIN_R_SAT_MS:
                field = "r_sat_ms" if r_sat == float(self.r_sat_ms) else "goals_ms"
                raise ValueError(
                    f"{type(self).__name__}.{field}: {r_sat:g} ms is below {MIN_R_SAT_MS:g} ms, "
                    f"the finest latency a trial measures (fstress's 1 µs histogram unit)"
                )

    def p95_bound_below_goal(self) -> str | None:
        """Why a goal's L_sat (its p95 bound) below its R_sat is refused as a request, or None: a
        p95 under R_sat keeps the mean under it in all but the heaviest tails, so the mean goal
        would never be the one that rates. (The controller itself judges such a spec: its tests
        rate by the p95 rule that way.)"""
        for r_sat in self.goals:
            l_sat = self.l_sat_for(r_sat)
            if l_sat < r_sat:
                field = "l_sat_ms" if l_sat == self.l_sat_ms else "goals_l_sat_ms"
                return (
                    f"{field}: the p95 bound {l_sat:g} ms is below its mean goal {r_sat:g} ms, "
                    f"which could then never rate; give L_sat ≥ R_sat "
                    f"(e.g. --r-sat-ms {r_sat:g}/{2 * r_sat:g})"
                )
        return None

    def l_sat_for(self, r_sat_ms: float) -> float:
        """The L_sat of goal `r_sat_ms`: its own from goals_l_sat_ms, else l_sat_ms."""
        if float(r_sat_ms) != float(self.r_sat_ms) and self.goals_l_sat_ms is not None:
            own = self.goals_l_sat_ms[(self.goals_ms or ()).index(float(r_sat_ms))]
            return self.l_sat_ms if own is None else own
        return self.l_sat_ms


@dataclass(frozen=True)
class Budget:
    """What a rating may spend: trial runlengths, trials, loads and seconds."""

    runlength_s: float = setting(
        180.0,
        "runlength of a trial (s)",
        lo=0,
        lo_open=True,
        form=dict(minimum=1, maximum=3600),
        flag=True,
    )
    runlength_policy: str = setting(
        "fixed", "fixed | adaptive runlength", "choice", choices=("fixed", "adaptive")
    )
    runlength_min_s: float = setting(30.0, "adaptive runlength: lowest (s)", lo=0, lo_open=True)
    runlength_max_s: float = setting(900.0, "adaptive runlength: highest (s)", lo=0, lo_open=True)
    max_trials: int = setting(
        400,
        "trial cap (all trials, invalid and harness failures included)",
        "integer",
        lo=2,
        hi=10**7,
        form=dict(minimum=2, maximum=MAX_TRIAL_TASKS),
        flag=True,
    )
    max_loads: int = setting(60, "distinct loads", "integer", lo=2, hi=10**5)
    budget_s: float = setting(
        math.inf,
        "cost cap: Σ runlengths + overheads (s)",
        lo=0,
        lo_open=True,
        inf_ok=True,
        form=dict(minimum=10, maximum=604800),
        flag=True,
    )
    trial_overhead_s: float = setting(0.0, "per-trial setup/teardown cost (s)", lo=0)

    def __post_init__(self) -> None:
        check_settings(self)
        self._check_budget()

    def _check_budget(self) -> None:
        name = type(self).__name__
        if self.runlength_min_s > self.runlength_max_s:
            raise ValueError(
                f"{name}.runlength_min_s must be <= runlength_max_s ({self.runlength_max_s!r}), "
                f"got {self.runlength_min_s!r}"
            )
        if math.isinf(self.trial_overhead_s):
            raise ValueError(
                f"{name}.trial_overhead_s must be a finite number >= 0, got "
                f"{self.trial_overhead_s!r}"
            )


@dataclass(frozen=True)
class Search:
    """The rules every policy shares: where the search starts, how a load is classified, when the
    search stops."""

    first_load: float = setting(
        50.0,
        "first offered load (ops/s; Algorithm 3 step 1)",
        lo=0,
        lo_open=True,
        hi=1e7,
        flag=True,
    )
    seed_load: float | None = setting(
        None,
        "seeded search: start near this load and bracket around it (ops/s; §3.7)",
        lo=0,
        lo_open=True,
        hi=1e7,
        form=dict(exclusiveMinimum=0, maximum=1e7),
        flag=True,
    )
    seed_trials: int | None = setting(
        None, "valid trials at the seed load before it is classified", "integer", lo=2, hi=1000
    )
    seed_step: float = setting(
        0.10,
        "δ of the seeded bracketing steps seed·(1 + δ·2^k)",
        lo=0,
        hi=10,
        lo_open=True,
        hi_open=True,
    )
    stop_rule: str | None = setting(
        None,
        "inside | overlap (the paper's) | fit; None: the policy's",
        "choice",
        choices=STOP_RULES,
    )
    model_form: str = setting(
        "mm1",
        "R(λ) form of model steps and interpolation: mm1 R = 1/(a − bλ) (002) | "
        "hyperbolic R = a + b/λ (000)",
        "choice",
        choices=("mm1", "hyperbolic"),
    )
    min_trials: int = setting(
        2, "trials before the first CI (Algorithm 2 step 7)", "integer", lo=2, hi=1000
    )
    max_trials_per_load: int = setting(
        30, "then the load is classified by its mean alone", "integer", lo=2, hi=10**5
    )
    max_invalid_per_load: int = setting(
        3, "consecutive invalid trials before giving up", "integer", lo=1, hi=1000
    )
    max_harness_in_row: int = setting(
        3,
        "consecutive harness failures before giving up (each is re-run and "
        "is no sample of the server)",
        "integer",
        lo=1,
        hi=1000,
    )
    # re-runs of not-steady trials per load (steadiness.py); then the load is judged on all its
    # trials. 0: none (the verdict only recorded). < max_invalid_per_load: an excluded trial is an
    # invalid one to decide, and that many in a row would make the load unmeasurable first
    max_unsteady_reruns: int = setting(
        2, "re-runs of not-steady trials per load", "integer", lo=0, hi=999
    )
    resolution: float = setting(
        0.001, "stop when (hi − lo)/hi ≤ resolution", lo=0, hi=0.5, lo_open=True, hi_open=True
    )
    # inside rule: classify a potential peak as soon as its CI excludes R_sat (before accuracy a)
    early_side: bool = setting(True, "classify a potential peak once its CI excludes R_sat", "bool")
    # inside rule: keep sampling an accurate CI that straddles an edge only while
    # |R̄ − R_sat| ≤ edge_patience·s·R_sat
    edge_patience: float = setting(
        0.5,
        "sample an accurate CI straddling an edge only this near R_sat (× s·R_sat)",
        lo=0,
        hi=1e6,
    )
    # certification tries new loads inside the λ* interval while its half-width is above this share
    # of its low end (certifying._new_load_inside); None: only the tested loads tighten it, when
    # cheap. The quick and standard profiles set 0.10 (real walls); on the simulated families it
    # cost +3–7 % (mm 0.40× Binsearch) for a median width of 9.9 instead of 11.2 %
    # (docs/performance.md "Validity")
    interval_halfwidth: float | None = setting(
        None,
        "target half-width of the λ* interval, share of its "
        "low end (None: no new loads to tighten it)",
        lo=0,
        hi=1,
        lo_open=True,
    )
    bound_confidence: float | None = setting(
        None,
        "confidence of the certified λ* interval (None: c; controller/certify.py)",
        lo=0,
        hi=1,
        lo_open=True,
        hi_open=True,
    )

    def __post_init__(self) -> None:
        check_settings(self)
        self._check_search()

    def _check_search(self) -> None:
        """The bounds one setting takes from another."""

        def bad(name: str, rng: str) -> ValueError:
            return ValueError(
                f"{type(self).__name__}.{name} must be {rng}, got {getattr(self, name)!r}"
            )

        if self.seed_trials is not None and self.seed_load is None:
            raise bad("seed_trials", "set only with seed_load")
        if self.max_trials_per_load < self.min_trials:
            raise bad("max_trials_per_load", f"an integer in [{self.min_trials}, 100000]")
        if self.max_unsteady_reruns > self.max_invalid_per_load - 1:  # see the field
            raise bad("max_unsteady_reruns", f"an integer in [0, {self.max_invalid_per_load - 1}]")
