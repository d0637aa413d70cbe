"""Peak-rate search: `decide(spec, trials)` (a pure function of the trial log) and `find_peak`.

[CC] = Cutting Corners (shared/seeds/000_*, newer text 002_*), Algorithm 2. For each test load
the controller runs two trials, builds the CI of the mean response time at confidence c and
compares it with the peak-rate region [R_sat ± s·R_sat]:

* no overlap → the load is classified (unsaturated below / saturated above) and the picker
  nominates the next load;
* overlap → a potential peak: more trials until the stop rule holds.

Stop rules (`RatingSpec.stop_rule`, docs/controller.md "Decision rule"):
* "overlap" — the paper's rule: stop when the CI overlaps the region and its accuracy (Eq. 2)
  is ≥ a. On noisy servers this stops outside the region about a third of the time.
* "inside" (default) — stop only when the whole CI lies inside the region (and accuracy ≥ a).
  A potential peak whose accurate CI is not inside but excludes R_sat is classified below /
  above R_sat at confidence c and the search moves on inside the (narrower) bracket; a load that
  reaches `max_trials_per_load` is classified by its mean alone ("below?"/"above?").
  The search also stops when the bracket [highest unsaturated, lowest saturated] is narrower
  than `resolution`·λ (no measurable load left between them; λ* is then interpolated).

Everything — current load, bracket, picker state, runlength — is re-derived from the log on
every call: no hidden state, deterministic, resumable after a crash.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from analysis.stats import MeanCI, accuracy as _accuracy, mean_ci, region
from workbench.pickers import LoadSummary, SearchState, bracket_of, make_picker, two_point_fit
from workbench.runlength import next_runlength
from workbench.trial import TrialResult

__all__ = ["RatingSpec", "TrialResult", "NextTrial", "Done", "PeakResult", "decide", "find_peak",
           "summarize", "POLICIES"]

POLICIES = ("linear", "binsearch", "model", "safeguarded")
_LOAD_KEY_DIGITS = 6


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
    max_trials: int = 400                  # all trials, invalid included
    budget_s: float = math.inf             # total cost cap (runlengths + overheads), seconds
    trial_overhead_s: float = 0.0          # per-trial setup/teardown cost, seconds
    goals_ms: tuple[float, ...] | None = None   # extra R_sat goals (multi-goal; trials reused)
    stop_rule: str = "inside"              # inside (default, valid) | overlap (the paper's)
    min_trials: int = 2                    # trials before the first CI (Algorithm 2 step 7)
    max_trials_per_load: int = 30          # then the load is classified by its mean alone
    max_loads: int = 60                    # distinct loads
    max_invalid_per_load: int = 3          # consecutive invalid trials before giving up
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
        if self.goals_ms is not None:
            g = self.goals_ms
            if isinstance(g, (int, float)) or not all(_num(x) and 0 < x < math.inf for x in g) or len(g) == 0:
                raise bad("goals_ms", "a non-empty sequence of numbers > 0 (ms)")
            object.__setattr__(self, "goals_ms", tuple(float(x) for x in g))
        if self.stop_rule not in ("inside", "overlap"):
            raise bad("stop_rule", "'inside' or 'overlap'")
        integer("min_trials", 2, 1000)
        integer("max_trials_per_load", self.min_trials, 10**5)
        integer("max_loads", 2, 10**5)
        integer("max_invalid_per_load", 1, 1000)
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

    def min_trials_at(self, load: float) -> int:
        """Valid trials a load needs before it is classified: min_trials, or seed_trials at the seed
        load."""
        if self.seed_trials and self.seed_load is not None and _key(load) == _key(self.seed_load):
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

    def for_goal(self, r_sat_ms: float) -> "RatingSpec":
        return dataclasses.replace(self, r_sat_ms=float(r_sat_ms), goals_ms=None)


@dataclass(frozen=True)
class PeakResult:
    peak_rate: float                       # λ* (ops/s)
    converged: bool
    reason: str
    bracket: tuple[float, float]           # (highest unsaturated load, lowest saturated load)
    peak_rate_ci: tuple[float, float]      # CI for λ* at confidence c
    mean_ms_at_peak: float                 # mean response time at mean_load_ops_s
    mean_ms_ci: tuple[float, float]
    accuracy: float                        # Eq. 2 accuracy of mean_ms_ci
    n_loads: int
    n_trials: int                          # all trials, invalid included
    cost_s: float                          # Σ runlengths + n_trials × trial_overhead_s
    trials: list[TrialResult] = field(default_factory=list, repr=False)
    trace: list[tuple[float, float]] = field(default_factory=list, repr=False)
    per_goal: dict[float, "PeakResult"] = field(default_factory=dict, repr=False)
    r_sat_ms: float = 40.0
    n_invalid: int = 0
    n_trials_at_peak: int = 0
    peak_rate_ci_model: tuple[float, float] = (math.nan, math.nan)
    stop_rule: str = "inside"
    policy: str = "binsearch"
    mean_load_ops_s: float = math.nan      # the tested load whose trials give mean_ms_at_peak

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in (
            "peak_rate", "converged", "reason", "bracket", "peak_rate_ci", "mean_ms_at_peak",
            "mean_ms_ci", "accuracy", "n_loads", "n_trials", "cost_s", "trace", "r_sat_ms",
            "n_invalid", "n_trials_at_peak", "peak_rate_ci_model", "stop_rule", "policy",
            "mean_load_ops_s")}
        d["per_goal"] = {str(k): v.to_dict() for k, v in self.per_goal.items() if v is not self}
        d["trials"] = [t.to_dict() for t in self.trials]
        return d


@dataclass(frozen=True)
class NextTrial:
    load_ops_s: float
    runlength_s: float
    reason: str


@dataclass(frozen=True)
class Done:
    result: PeakResult


# --------------------------------------------------------------------------- log → summaries

def _key(load: float) -> float:
    return round(float(load), _LOAD_KEY_DIGITS)


def _lat_value(spec: RatingSpec, t: TrialResult) -> float:
    """Latency-rule statistic of one trial, in the form 'this percentile must be ≤ L_sat'.
    p_sat None → p95 (the paper's rule). p_sat given: raw["frac_within_l_sat"] if the harness
    reports it (then saturated when P < P_sat, mapped to ±inf), else p95 for p_sat ≤ 0.95 and p99
    (falling back to p95) above — a conservative reading of the P_sat form."""
    if spec.p_sat is None:
        return t.p95_ms
    raw = t.raw or {}
    frac = raw.get("frac_within_l_sat")
    if isinstance(frac, (int, float)):
        return 0.0 if frac >= spec.p_sat else math.inf
    if spec.p_sat <= 0.95:
        return t.p95_ms
    return t.p99_ms if t.p99_ms is not None else t.p95_ms


def _classify(spec: RatingSpec, r_sat: float, n: int, ci: MeanCI, lat: float,
              lat_ci: MeanCI, median_ms: float = math.nan) -> tuple[str, int, bool]:
    """(status, side, confident) of one load for goal r_sat (Algorithm 2 steps 7–10)."""
    if spec.strawman:
        # §3.1 strawman: a fixed number of trials t, then saturated iff the mean response time
        # exceeds R_sat (or the percentile rule breaks L_sat); no CI, no adaptive trial count
        if n < spec.linear_trials:
            return "open", 0, False
        if lat > spec.l_sat_ms or ci.mean > r_sat:
            return "above", +1, False
        return "below", -1, False
    if n < spec.min_trials:
        return "open", 0, False
    if lat > spec.l_sat_ms:     # percentile rule: saturated regardless of the mean
        return "above", +1, bool(lat_ci.low > spec.l_sat_ms) or math.isinf(lat)
    rlo, rhi = region(r_sat, spec.width)
    acc = ci.accuracy
    if ci.high < rlo:
        return "below", -1, True
    if ci.low > rhi:
        return "above", +1, True
    # the CI overlaps the peak-rate region: a potential peak
    if spec.stop_rule == "overlap":
        if acc >= spec.accuracy:
            return "peak", 0, True
    else:
        if rlo <= ci.low and ci.high <= rhi and acc >= spec.accuracy:
            return "peak", 0, True
        if (acc >= spec.accuracy or spec.early_side) and ci.high < r_sat:
            return "below", -1, True
        if (acc >= spec.accuracy or spec.early_side) and ci.low > r_sat:
            return "above", +1, True
        if acc >= spec.accuracy and abs(ci.mean - r_sat) > spec.edge_patience * spec.width * r_sat:
            # accurate, straddling a region edge and R_sat: fitting it inside would take many
            # trials; a load nearer R_sat is cheaper. Classified by its mean (not confident).
            return ("below?", -1, False) if ci.mean < r_sat else ("above?", +1, False)
    if n >= spec.max_trials_per_load:
        # Not confident: classify by the median trial mean, not the mean. One cold-start outlier
        # (316 ms among 0.25 ms trials) must not flip the side; with n this small Auto-pilot's
        # z-score warning (seed 001 §3.3) cannot flag it, since |z| ≤ (n−1)/√n (Shiffler 1988).
        centre = median_ms if math.isfinite(median_ms) else ci.mean
        return ("below?", -1, False) if centre < r_sat else ("above?", +1, False)
    return "open", 0, False


def summarize(spec: RatingSpec, trials: Sequence[TrialResult],
              r_sat_ms: float | None = None) -> list[LoadSummary]:
    """Per-load summaries of the valid trials, in order of each load's first trial."""
    r_sat = spec.r_sat_ms if r_sat_ms is None else r_sat_ms
    groups: dict[float, list[tuple[int, TrialResult]]] = {}
    for i, t in enumerate(trials):
        if t.load_ops_s is None or t.runlength_s is None:
            raise ValueError(f"trial {i} has no load_ops_s/runlength_s: tag it with .at(load, r)")
        groups.setdefault(_key(t.load_ops_s), []).append((i, t))
    out = []
    for key, items in groups.items():
        valid = [t for _, t in items if t.valid]
        means = tuple(t.mean_ms for t in valid)
        rls = tuple(float(t.runlength_s) for t in valid)
        w = None if len(set(rls)) <= 1 else rls
        ci = mean_ci(means, spec.confidence, weights=w) if valid else mean_ci([], spec.confidence)
        lats = [_lat_value(spec, t) for t in valid]
        if any(math.isinf(v) for v in lats):
            lat, lat_ci = (math.inf if sum(math.isinf(v) for v in lats) * 2 > len(lats) else 0.0), ci
        elif lats:
            lat_ci = mean_ci(lats, spec.confidence)
            lat = lat_ci.mean
        else:
            lat, lat_ci = math.nan, ci
        median_ms = float(np.median(means)) if means else math.nan
        lspec, n_min = spec, spec.min_trials_at(key)
        if n_min > spec.min_trials:             # the seed sample: n_min trials, even past the cap
            lspec = dataclasses.replace(spec, min_trials=n_min,
                                        max_trials_per_load=max(n_min, spec.max_trials_per_load))
        status, side, conf = _classify(lspec, r_sat, len(valid), ci, lat, lat_ci, median_ms)
        out.append(LoadSummary(
            load=items[0][1].load_ops_s, order=items[0][0], n=len(valid), mean=ci.mean, ci=ci,
            lat=lat, status=status, side=side, confident=conf,
            latency_saturated=bool(lat > spec.l_sat_ms), runlengths=rls, means=means))
    out.sort(key=lambda s: s.order)
    return out


# --------------------------------------------------------------------------- decide

def _cost(spec: RatingSpec, trials: Sequence[TrialResult]) -> float:
    return sum(float(t.runlength_s or 0.0) for t in trials) + spec.trial_overhead_s * len(trials)


def _state(spec: RatingSpec, r_sat: float, loads: list[LoadSummary]) -> SearchState:
    classified = [s for s in loads if s.status != "open"]
    lo, hi = bracket_of(classified)
    start = spec.seed_load if spec.seed_load is not None else spec.first_load
    return SearchState(r_sat, tuple(loads), lo, hi, start, spec.seed_load is not None)


def _unmeasurable(spec: RatingSpec, trials: Sequence[TrialResult]) -> dict[float, TrialResult]:
    """Loads with a run of ≥ max_invalid_per_load consecutive invalid trials → the run's last trial."""
    out: dict[float, TrialResult] = {}
    run = 0
    for i, t in enumerate(trials):
        same = i > 0 and _key(trials[i - 1].load_ops_s) == _key(t.load_ops_s)
        run = (run + 1 if same else 1) if not t.valid else 0
        if run >= spec.max_invalid_per_load:
            out[_key(t.load_ops_s)] = t
    return out


def _decide_goal(spec: RatingSpec, r_sat: float, trials: Sequence[TrialResult],
                 unmeasurable: Mapping[float, TrialResult] | None = None) -> tuple[str, Any]:
    """("next", (load, reason)) or ("done", (converged, reason, peak_summary|None, loads)).

    unmeasurable: loads never to nominate again (see decide); nominations at or above the lowest
    one above the bracket's low end are moved halfway between that low end (or 0) and it."""
    unmeasurable = unmeasurable or {}
    loads = [s for s in summarize(spec, trials, r_sat)
             if not (s.status == "open" and _key(s.load) in unmeasurable)]
    peaks = [s for s in loads if s.status == "peak"]
    if peaks:
        best = min(peaks, key=lambda s: (abs(s.mean - r_sat), s.order))
        rule = "CI inside" if spec.stop_rule == "inside" else "CI overlaps"
        return "done", (True, f"{rule} the peak-rate region at {best.load:g} ops/s with accuracy "
                              f"{best.ci.accuracy:.3f} ≥ {spec.accuracy:g}", best, loads)
    st = _state(spec, r_sat, loads)
    lo, hi = st.lo, st.hi
    # an undecided load inside the bracket: keep sampling it (Algorithm 2 step 6)
    open_in = [s for s in loads if s.status == "open"
               and (lo is None or s.load > lo.load) and (hi is None or s.load < hi.load)]
    if open_in:
        last = {(_key(t.load_ops_s)): i for i, t in enumerate(trials)}
        cur = max(open_in, key=lambda s: last[_key(s.load)])
        if cur.n < spec.min_trials:
            why = "first trials"
        elif cur.n < spec.min_trials_at(cur.load):
            why = f"seed sample: trial {cur.n + 1} of {spec.seed_trials} at the seed load"
        else:
            why = (f"potential peak: CI [{cur.ci.low:.4g}, {cur.ci.high:.4g}] ms, accuracy "
                   f"{cur.ci.accuracy:.3f}")
        return "next", (cur.load, why)
    if spec.strawman and lo is not None and hi is not None:
        step = spec.linear_step
        ok = (hi.load - lo.load) <= step * (1 + 1e-9)
        return "done", (ok, f"linear strawman: first saturated load {hi.load:g} ops/s "
                            f"({spec.linear_trials} trials each); λ* = last unsaturated load "
                            f"{lo.load:g}" + ("" if ok else f" (bracket wider than the increment {step:g})"),
                        None, loads)
    if lo is not None and hi is not None and (hi.load - lo.load) <= spec.resolution * hi.load:
        if hi.latency_saturated:
            return "done", (True, f"latency rule: bracket [{lo.load:g}, {hi.load:g}] resolved", None, loads)
        return "done", (True, f"bracket [{lo.load:g}, {hi.load:g}] narrower than resolution "
                              f"{spec.resolution:g}: λ* interpolated", None, loads)
    if len(loads) >= spec.max_loads:
        return "done", (False, f"max_loads ({spec.max_loads}) reached", None, loads)
    picker = make_picker(spec)
    load, why = picker.next_load(st)
    if not (math.isfinite(load) and load > 0):
        return "done", (False, f"picker proposed an invalid load {load!r}: {why}", None, loads)
    caps = [t for t in unmeasurable.values() if lo is None or t.load_ops_s > lo.load]
    if caps:
        cap = min(caps, key=lambda t: t.load_ops_s)
        floor = lo.load if lo is not None else 0.0
        if load >= cap.load_ops_s * (1 - 1e-9):
            if cap.load_ops_s - floor <= spec.resolution * cap.load_ops_s:
                return "done", (False, f"λ* ≥ {floor:g} ops/s: {cap.load_ops_s:g} ops/s cannot be measured "
                                       f"({cap.reason or 'invalid'}) and lies within the resolution of it",
                                None, loads)
            load, why = ((floor + cap.load_ops_s) / 2.0,
                         f"{cap.load_ops_s:g} ops/s cannot be measured ({cap.reason or 'invalid'}) → "
                         f"halfway below it")
    if _key(load) in unmeasurable:
        return "done", (False, f"{load:g} ops/s cannot be measured ({unmeasurable[_key(load)].reason})",
                        None, loads)
    same = [s for s in loads if _key(s.load) == _key(load)]
    if same and same[0].status != "open":
        if lo is not None and hi is not None:
            load, why = (lo.load + hi.load) / 2.0, f"{why}: already classified → bisect"
            if any(_key(s.load) == _key(load) and s.status != "open" for s in loads):
                return "done", (False, "no untested load left in the bracket", None, loads)
        else:
            return "done", (False, f"picker repeated the classified load {load:g}", None, loads)
    return "next", (load, f"{picker.name}: {why}")


def decide(spec: RatingSpec, trials: Sequence[TrialResult]) -> NextTrial | Done:
    """Algorithm 2 as a pure function of the trial log: the next trial to run, or the result."""
    trials = list(trials)
    for i, t in enumerate(trials):
        if not isinstance(t, TrialResult):
            raise TypeError(f"trial {i} is not a TrialResult")
    cost = _cost(spec, trials)
    goals = spec.goals
    done: dict[float, tuple] = {}
    nxt: tuple[float, str] | None = None
    stop_reason: str | None = None
    # Invalid trials never count and are re-run at the same load and runlength. After
    # max_invalid_per_load in a row the load is unmeasurable (a generator at its ceiling; a server so
    # far past λ* that its backlog delays the generator's sends): once another load has a valid
    # trial the search goes on below it (_decide_goal); it ends at twice that many invalid trials
    # in a row, or when no other load was ever measured (the harness itself is suspect).
    unmeasurable = _unmeasurable(spec, trials)
    if trials and not trials[-1].valid:
        last = trials[-1]
        tail = list(itertools.takewhile(lambda t: not t.valid, reversed(trials)))   # invalid, newest first
        run = len(tail)
        streak = len(list(itertools.takewhile(lambda t: _key(t.load_ops_s) == _key(last.load_ops_s), tail)))
        measured_elsewhere = any(t.valid and _key(t.load_ops_s) != _key(last.load_ops_s) for t in trials)
        if streak < spec.max_invalid_per_load:
            nxt = (last.load_ops_s, f"re-run invalid trial ({last.reason or 'invalid'})")
            rl = float(last.runlength_s)
        elif run >= 2 * spec.max_invalid_per_load or not measured_elsewhere:
            stop_reason = (f"{run} consecutive invalid trials"
                           + (f" at {last.load_ops_s:g} ops/s" if run == streak else
                              f", the last {streak} at {last.load_ops_s:g} ops/s")
                           + f" ({last.reason or 'no reason given'})")
    if nxt is None and stop_reason is None:
        for g in goals:
            kind, payload = _decide_goal(spec, g, trials, unmeasurable)
            if kind == "done":
                done[g] = payload
                continue
            load, why = payload
            nxt = (load, why if len(goals) == 1 else f"goal {g:g} ms: {why}")
            valid = [t for t in trials if t.valid and _key(t.load_ops_s) == _key(load)]
            rl = next_runlength(spec, [t.mean_ms for t in valid],
                                [float(t.runlength_s) for t in valid]).runlength_s
            break
    if nxt is not None and stop_reason is None:
        if len(trials) >= spec.max_trials:
            stop_reason = f"max_trials ({spec.max_trials}) exhausted"
        elif cost + rl + spec.trial_overhead_s > spec.budget_s * (1 + 1e-12):
            stop_reason = (f"budget exhausted: {cost:g} s spent, next trial needs "
                           f"{rl + spec.trial_overhead_s:g} s of {spec.budget_s:g} s")
        else:
            return NextTrial(float(nxt[0]), float(rl), nxt[1])
    return Done(_result(spec, trials, done, stop_reason))


# --------------------------------------------------------------------------- results

def _interp(lo: LoadSummary, hi: LoadSummary, r_sat: float, form: str) -> float:
    """λ where the response curve through the bracket ends crosses R_sat (1/R linear)."""
    p = two_point_fit((lo.load, lo.mean), (hi.load, hi.mean), r_sat, form)
    return p if math.isfinite(p) and lo.load <= p <= hi.load else (lo.load + hi.load) / 2.0


def _peak_ci(loads: Sequence[LoadSummary], r_sat: float, spec: RatingSpec) -> tuple[float, float]:
    """CI for λ*. R(λ) is monotone, so λ* > λ_i when load i's mean response is below R_sat and
    λ* < λ_i when above. L = the highest load whose CI lies below R_sat, H = the lowest load whose
    CI lies above (or which breaks the latency rule); [L, H] misses λ* only if the CI of L or of H
    misses on the wrong side (one-sided error ≤ (1 − c)/2 each, ≤ 1 − c together). A load sampled
    sequentially was looked at n − min_trials + 1 times, so its CI here is taken at
    c_i = 1 − (1 − c)/looks (Bonferroni over the looks: optional stopping would otherwise
    inflate the error). `bound_confidence` overrides c."""
    c = spec.bound_confidence if spec.bound_confidence is not None else spec.confidence
    lows, highs = [], []
    for s in loads:
        if s.n < 2:
            continue
        if s.latency_saturated:
            if s.confident or min(s.means) > r_sat * (1 + spec.width) * 4:
                highs.append(s.load)
            continue
        looks = max(1, s.n - spec.min_trials + 1)
        w = None if len(set(s.runlengths)) <= 1 else s.runlengths
        ci = mean_ci(s.means, 1.0 - (1.0 - c) / looks, weights=w)
        if ci.high < r_sat:
            lows.append(s.load)
        elif ci.low > r_sat:
            highs.append(s.load)
    L = max(lows) if lows else 0.0
    H = min(highs) if highs else math.inf
    if L > H:   # contradictory classifications: widen to the hull of the conflict
        L, H = H, L
    return (L, H)


def _model_ci(loads: Sequence[LoadSummary], r_sat: float, spec: RatingSpec) -> tuple[float, float]:
    """Local fit of 1/R̄ = a − bλ on the loads nearest λ* (weighted least squares, delta
    method on λ* = (a − 1/R_sat)/b). Reported beside `peak_rate_ci`; not used to stop."""
    from scipy import stats as st
    pts = [s for s in loads if s.n >= 2 and math.isfinite(s.ci.std) and s.mean > 0]
    if len(pts) < 2:
        return (math.nan, math.nan)
    pts.sort(key=lambda s: abs(1.0 / s.mean - 1.0 / r_sat))
    pts = pts[:4]
    if len({s.load for s in pts}) < 2:
        return (math.nan, math.nan)
    x = np.array([s.load for s in pts])
    y = np.array([1.0 / s.mean for s in pts])
    se = np.array([max(s.ci.std / math.sqrt(s.n), 1e-9) / s.mean ** 2 for s in pts])   # delta: Var(1/R̄)
    w = 1.0 / se ** 2
    X = np.column_stack([np.ones_like(x), x])
    cov = np.linalg.pinv(X.T @ (w[:, None] * X))
    beta = cov @ (X.T @ (w * y))
    c0, c1 = beta          # 1/R = c0 + c1·λ  (c1 = −b)
    if c1 >= 0:
        return (math.nan, math.nan)
    lam = (1.0 / r_sat - c0) / c1
    g = np.array([-1.0 / c1, -(1.0 / r_sat - c0) / c1 ** 2])
    sd = math.sqrt(float(g @ cov @ g))
    q = float(st.norm.ppf((1 + spec.confidence) / 2))
    return (float(lam - q * sd), float(lam + q * sd))


def _goal_result(spec: RatingSpec, r_sat: float, trials: Sequence[TrialResult], converged: bool,
                 reason: str, peak: LoadSummary | None, loads: list[LoadSummary] | None) -> PeakResult:
    if loads is None:
        loads = summarize(spec, trials, r_sat)
    st = _state(spec, r_sat, loads)
    lo, hi = st.lo, st.hi
    if peak is None:
        cands = [s for s in loads if s.n >= 1]
        if lo is not None and hi is not None and spec.strawman:
            lam, near = lo.load, lo          # §3.1: the largest load that does not saturate
        elif lo is not None and hi is not None:
            lam = _interp(lo, hi, r_sat, spec.model_form) if not hi.latency_saturated else lo.load
            near = min((lo, hi), key=lambda s: abs(s.load - lam))
        elif lo is not None:
            lam, near = lo.load, lo
        elif cands:
            near = min(cands, key=lambda s: abs(s.mean - r_sat))
            lam = near.load
        else:
            near, lam = None, math.nan
    else:
        near, lam = peak, peak.load
    bracket = (lo.load if lo is not None else 0.0, hi.load if hi is not None else math.inf)
    pci = _peak_ci(loads, r_sat, spec)
    if math.isfinite(lam):
        pci = (min(pci[0], lam), max(pci[1], lam))
    mean = near.mean if near is not None else math.nan
    mci = (near.ci.low, near.ci.high) if near is not None else (math.nan, math.nan)
    lf = lam if math.isfinite(lam) and lam > 0 else None
    trace, cum = [], 0.0
    for t in trials:
        cum += float(t.runlength_s or 0.0) + spec.trial_overhead_s
        trace.append((cum, t.load_ops_s / lf if lf else math.nan))
    return PeakResult(
        peak_rate=float(lam), converged=converged, reason=reason, bracket=bracket,
        peak_rate_ci=pci, mean_ms_at_peak=mean, mean_ms_ci=mci,
        accuracy=_accuracy(*mci) if near is not None else 0.0,
        n_loads=len({_key(t.load_ops_s) for t in trials}), n_trials=len(trials),
        cost_s=_cost(spec, trials), trials=list(trials), trace=trace, r_sat_ms=r_sat,
        n_invalid=sum(1 for t in trials if not t.valid),
        n_trials_at_peak=near.n if near is not None else 0,
        peak_rate_ci_model=_model_ci(loads, r_sat, spec), stop_rule=spec.stop_rule,
        policy=spec.policy, mean_load_ops_s=near.load if near is not None else math.nan)


def _result(spec: RatingSpec, trials: Sequence[TrialResult], done: dict[float, tuple],
            stop_reason: str | None) -> PeakResult:
    per: dict[float, PeakResult] = {}
    for g in spec.goals:
        if g in done:
            conv, why, peak, loads = done[g]
            per[g] = _goal_result(spec, g, trials, conv, why, peak, loads)
        else:
            per[g] = _goal_result(spec, g, trials, False, stop_reason or "not reached", None, None)
    main = per[float(spec.r_sat_ms)]
    if len(per) > 1:
        conv = all(r.converged for r in per.values())
        reason = main.reason if conv else (stop_reason or main.reason)
        main = dataclasses.replace(main, per_goal=per, converged=main.converged, reason=reason)
    else:
        main = dataclasses.replace(main, per_goal={float(spec.r_sat_ms): main})
    return main


def find_peak(spec: RatingSpec, measure: Callable[[float, float], TrialResult],
              trials: Sequence[TrialResult] = (),
              on_trial: Callable[[TrialResult], None] | None = None) -> PeakResult:
    """The loop around `decide` (one code path): ask, measure, append, repeat.

    `trials` resumes from an existing log. `measure(load_ops_s, runlength_s)` returns a
    TrialResult; it is tagged with `.at(load, runlength)` before it enters the log.
    """
    log = list(trials)
    while True:
        d = decide(spec, log)
        if isinstance(d, Done):
            return d.result
        t = measure(d.load_ops_s, d.runlength_s)
        if not isinstance(t, TrialResult):
            raise TypeError(f"measure() must return a TrialResult, got {type(t).__name__}")
        t = t.at(d.load_ops_s, d.runlength_s)
        log.append(t)
        if on_trial is not None:
            on_trial(t)
