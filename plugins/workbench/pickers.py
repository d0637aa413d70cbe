"""Load pickers: tiny strategies that nominate the next offered load (MLRsearch style).

A picker sees only the per-load summaries derived from the trial log (`SearchState`) and
returns ``(load_ops_s, reason)``; it keeps no state of its own, so ``decide`` stays a pure
function of the log. Every summary carries a `side`: −1 (unsaturated: below the goal),
+1 (saturated) or 0 (undecided / in the peak-rate region), and `order`, the position of the
load's first trial in the log (the "sequence of test loads" of [CC] Algorithm 2).

Policies ([CC] = Cutting Corners, shared/seeds/000_*, newer text 002_*):
- Linear       §3.1/§5.2 strawman: start load, + fixed increment until saturated, then halve
               the bracket like Binsearch.
- Binsearch    Algorithm 3: 50, 100, 200, … doubling until saturated, then midpoints of
               [highest unsaturated, lowest saturated].
- Model        Algorithm 4: ×2 or ÷2 after the first load, then a two-point fit through the
               current load and the load whose mean is nearest R_sat; the next load solves the
               model at R_sat. Model forms: "mm1" R = 1/(a − bλ) (002 text, default) and
               "hyperbolic" R = a + b/λ (000 text).
- Seeding      §3.7 (002 text; §5.4 in 000): start at `seed_load` and bracket around it with
               growing steps seed·(1 + δ·2^k) (or seed/(1 + δ·2^k) when the seed saturates).
- Safeguarded  (new) Binsearch's opening; inside a bracket, a regula-falsi step on 1/R
               (exact for M/M/1) is accepted only strictly inside the bracket and only while
               the bracket at least halves every two steps (Brent's rule) and fewer than
               `max_bad` model steps have failed to halve it; otherwise bisection. It can
               never leave the bracket, so it never diverges, and after `max_bad` failures it
               is plain bisection: at most a constant number of extra loads over Binsearch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol, Sequence

from analysis.stats import MeanCI

__all__ = [
    "LoadSummary", "SearchState", "Picker", "Linear", "Binsearch", "Model", "Safeguarded",
    "make_picker", "bracket_of", "two_point_fit",
]


@dataclass(frozen=True)
class LoadSummary:
    load: float
    order: int                 # index of the load's first trial in the log
    n: int                     # valid trials
    mean: float                # (runlength-weighted) mean of the trial means, ms
    ci: MeanCI
    lat: float                 # mean of the latency-rule percentile (p95 by default), ms
    status: str                # "open", "below", "above", "peak", "below?", "above?"
    side: int                  # −1 unsaturated, +1 saturated, 0 undecided / peak
    confident: bool            # side established at confidence c (not by the trial cap)
    latency_saturated: bool = False
    runlengths: tuple[float, ...] = ()
    means: tuple[float, ...] = ()


@dataclass(frozen=True)
class SearchState:
    r_sat_ms: float
    loads: tuple[LoadSummary, ...]             # ordered by `order`
    lo: LoadSummary | None                     # highest unsaturated load below `hi`
    hi: LoadSummary | None                     # lowest saturated load
    start: float                               # first load (seed_load or first_load)
    seeded: bool
    params: dict = field(default_factory=dict)

    @property
    def tested(self) -> list[float]:
        return [s.load for s in self.loads]


def bracket_of(loads: Sequence[LoadSummary]) -> tuple[LoadSummary | None, LoadSummary | None]:
    """[highest unsaturated, lowest saturated]: hi = min load with side +1, lo = max load with
    side −1 below hi (noise can misorder sides; loads above hi never raise lo)."""
    sat = [s for s in loads if s.side > 0]
    hi = min(sat, key=lambda s: s.load) if sat else None
    uns = [s for s in loads if s.side < 0 and (hi is None or s.load < hi.load)]
    lo = max(uns, key=lambda s: s.load) if uns else None
    return lo, hi


class Picker(Protocol):
    name: str

    def next_load(self, st: SearchState) -> tuple[float, str]: ...


def _seeded_opening(st: SearchState, delta: float) -> tuple[float, str] | None:
    """§3.7 seeding: bracket around the seed with steps seed·(1+δ·2^k) up or seed/(1+δ·2^k) down."""
    if not st.loads:
        return st.start, "seed load"
    if st.lo is not None and st.hi is not None:
        return None
    if st.hi is None:      # everything so far unsaturated: step up from the seed
        k = sum(1 for s in st.loads if s.load > st.start * (1 + 1e-9))
        cand = st.start * (1.0 + delta * 2 ** k)
        top = max(s.load for s in st.loads)
        if cand <= top:
            cand = top * (1.0 + delta * 2 ** k)
        return cand, f"seed bracketing: up step {k} (×{1 + delta * 2 ** k:g})"
    k = sum(1 for s in st.loads if s.load < st.start * (1 - 1e-9))
    cand = st.start / (1.0 + delta * 2 ** k)
    bottom = min(s.load for s in st.loads)
    if cand >= bottom:
        cand = bottom / (1.0 + delta * 2 ** k)
    return cand, f"seed bracketing: down step {k} (÷{1 + delta * 2 ** k:g})"


def _bisect(st: SearchState) -> tuple[float, str]:
    """Algorithm 3 step 3 (set form): midpoint of [highest unsaturated, lowest saturated]."""
    assert st.lo is not None and st.hi is not None
    return (st.lo.load + st.hi.load) / 2.0, (
        f"bisect [{st.lo.load:g}, {st.hi.load:g}]")


class Binsearch:
    """[CC] Algorithm 3: start at 50, double until saturated, then bisect the bracket."""

    name = "binsearch"

    def __init__(self, seed_delta: float = 0.1):
        self.seed_delta = seed_delta

    def next_load(self, st: SearchState) -> tuple[float, str]:
        if st.seeded:
            op = _seeded_opening(st, self.seed_delta)
            if op is not None:
                return op
        if not st.loads:
            return st.start, "initial load (Algorithm 3 step 1)"
        if st.hi is None:      # geometric phase
            top = max(s.load for s in st.loads)
            return top * 2.0, f"geometric phase: 2 × {top:g}"
        if st.lo is None:      # even the first load saturated: halve below it
            return st.hi.load / 2.0, f"first load saturated: {st.hi.load:g} / 2"
        return _bisect(st)


class Linear:
    """[CC] §3.1/§5.2: fixed increment until saturated, then Binsearch's bisection."""

    name = "linear"

    def __init__(self, step: float):
        if not (step > 0):
            raise ValueError("linear step must be > 0")
        self.step = step

    def next_load(self, st: SearchState) -> tuple[float, str]:
        if not st.loads:
            return st.start, "initial load"
        if st.hi is None:
            top = max(s.load for s in st.loads)
            return top + self.step, f"linear phase: {top:g} + {self.step:g}"
        if st.lo is None:
            bottom = min(s.load for s in st.loads)
            nxt = bottom - self.step
            return (nxt, f"linear phase down: {bottom:g} − {self.step:g}") if nxt > 0 else (
                bottom / 2.0, f"linear phase down: {bottom:g} / 2")
        return _bisect(st)


def two_point_fit(p1: tuple[float, float], p2: tuple[float, float], r_sat: float,
                  form: str = "mm1") -> float:
    """[CC] Algorithm 4 step 2: fit the response curve through two (λ, R̄) points and solve
    it at R = R_sat. Returns nan when the fit is degenerate.

    form="mm1"        R = 1/(a − bλ)  (002 text, §3.6): 1/R is linear in λ,
                      b = (1/R1 − 1/R2)/(λ2 − λ1), a = 1/R1 + bλ1, λ = (a − 1/R_sat)/b.
    form="hyperbolic" R = a + b/λ     (000 text, §5.3): b = (R1 − R2)/(1/λ1 − 1/λ2),
                      a = R1 − b/λ1, λ = b/(R_sat − a).
    """
    (l1, r1), (l2, r2) = p1, p2
    try:
        if form == "mm1":
            if l1 == l2 or r1 <= 0 or r2 <= 0:
                return math.nan
            b = (1.0 / r1 - 1.0 / r2) / (l2 - l1)
            a = 1.0 / r1 + b * l1
            return (a - 1.0 / r_sat) / b if b != 0 else math.nan
        if form == "hyperbolic":
            if l1 == l2 or l1 <= 0 or l2 <= 0:
                return math.nan
            b = (r1 - r2) / (1.0 / l1 - 1.0 / l2)
            a = r1 - b / l1
            return b / (r_sat - a) if r_sat != a else math.nan
    except (ZeroDivisionError, OverflowError):
        return math.nan
    raise ValueError(f"model form must be 'mm1' or 'hyperbolic', got {form!r}")


def _is_tested(st: SearchState, load: float, rel: float = 1e-6) -> bool:
    return any(abs(s.load - load) <= rel * max(s.load, load) for s in st.loads)


class Model:
    """[CC] Algorithm 4, unsafeguarded (it may wander: the paper's own caveat)."""

    name = "model"

    def __init__(self, form: str = "mm1", seed_delta: float = 0.1, max_factor: float = 1e3):
        self.form = form
        self.seed_delta = seed_delta
        self.max_factor = max_factor

    def next_load(self, st: SearchState) -> tuple[float, str]:
        if not st.loads:
            return st.start, "initial load (Algorithm 4 step 1)"
        cur = max(st.loads, key=lambda s: s.order)
        if len(st.loads) == 1:
            if st.seeded:
                op = _seeded_opening(st, self.seed_delta)
                if op is not None:
                    return op
            if cur.mean < st.r_sat_ms:
                return cur.load * 2.0, "Algorithm 4 step 1: one load, unsaturated → ×2"
            return cur.load / 2.0, "Algorithm 4 step 1: one load, saturated → ÷2"
        prev = [s for s in st.loads if s is not cur]
        near = min(prev, key=lambda s: (abs(s.mean - st.r_sat_ms), -s.order))
        pred = two_point_fit((cur.load, cur.mean), (near.load, near.mean), st.r_sat_ms, self.form)
        why = (f"model {self.form} through ({cur.load:g}, {cur.mean:.3g} ms) and "
               f"({near.load:g}, {near.mean:.3g} ms) → {pred:.6g}")
        top = max(s.load for s in st.loads)
        # sanity only (not a safeguard): a load must be a positive finite number, not absurdly
        # far from what was tested, and new
        if not math.isfinite(pred) or pred <= 0 or pred > self.max_factor * top or _is_tested(st, pred):
            return self._fallback(st, why)
        return pred, why

    @staticmethod
    def _fallback(st: SearchState, why: str) -> tuple[float, str]:
        if st.lo is not None and st.hi is not None:
            load, r = _bisect(st)
        elif st.hi is None:
            top = max(s.load for s in st.loads)
            load, r = top * 2.0, f"2 × {top:g}"
        else:
            load, r = st.hi.load / 2.0, f"{st.hi.load:g} / 2"
        return load, f"{why} unusable → {r}"


class Safeguarded:
    """Model steps accepted only strictly inside the bracket, while it shrinks fast enough and
    at most `max_model` times; every other step is the step Binsearch itself would take.

    The non-model steps follow a *shadow Binsearch*: the bisection sequence of the bracket at
    which the opening ended, advanced for free past midpoints the current (narrower) bracket
    already decides, and tested only when its midpoint lies inside the current bracket. On a
    noise-free server the region [R_sat ± s·R_sat] lies inside the current bracket, so every load
    at which Binsearch would stop is also tested here: Safeguarded needs at most `max_model`
    more loads than Binsearch (and usually far fewer: one good model step ends the search).
    """

    name = "safeguarded"

    def __init__(self, form: str = "mm1", seed_delta: float = 0.1, margin: float = 0.02,
                 max_model: int = 2, curve_limit: float = 4.0, near: float = 0.5):
        self.near = near
        self.form = form
        self.seed_delta = seed_delta
        self.margin = margin
        self.max_model = max_model
        self.curve_limit = curve_limit
        self._opening = Binsearch(seed_delta)

    def _fit_points(self, st: SearchState) -> tuple[LoadSummary, LoadSummary]:
        """Two loads still on the response curve (mean ≤ curve_limit·R_sat: an overloaded
        server's R̄ grows with the runlength and says nothing about the curve), the two nearest
        R_sat in 1/R; the bracket ends when fewer than two qualify."""
        on = [s for s in st.loads if s.n >= 1 and 0 < s.mean <= self.curve_limit * st.r_sat_ms]
        if len(on) < 2:
            return st.lo, st.hi
        on.sort(key=lambda s: (abs(1.0 / s.mean - 1.0 / st.r_sat_ms), s.order))
        return on[0], on[1]

    @staticmethod
    def _bracket_phase(st: SearchState) -> tuple[LoadSummary, LoadSummary, list[LoadSummary], list[float]]:
        """(lo0, hi0) = the first complete bracket in log order, the loads tested after it, and
        the bracket widths after each of those loads."""
        loads = sorted(st.loads, key=lambda s: s.order)
        for j in range(1, len(loads) + 1):
            lo, hi = bracket_of(loads[:j])
            if lo is not None and hi is not None:
                widths = [hi.load - lo.load]
                for k in range(j + 1, len(loads) + 1):
                    a, b = bracket_of(loads[:k])
                    widths.append(b.load - a.load)
                return lo, hi, loads[j:], widths
        raise AssertionError("no bracket")

    @staticmethod
    def _dyadic(x: float, lo: float, hi: float, depth: int = 30) -> bool:
        """Is x a Binsearch midpoint of (lo, hi), i.e. lo + k/2^j·(hi − lo)? (Model steps are not.)"""
        f = (x - lo) / (hi - lo)
        return any(abs(f * 2 ** j - round(f * 2 ** j)) <= 1e-12 * 2 ** j for j in range(1, depth + 1))

    def _shadow(self, st: SearchState, lo0: float, hi0: float) -> tuple[float, str]:
        """The next load of Binsearch started from (lo0, hi0), skipping decided midpoints."""
        a, b = lo0, hi0
        by_load = {round(s.load, 6): s for s in st.loads}
        for _ in range(200):
            m = (a + b) / 2.0
            s = by_load.get(round(m, 6))
            if s is not None:
                side = s.side or (-1 if s.mean < st.r_sat_ms else 1)
                a, b = (m, b) if side < 0 else (a, m)
            elif m <= st.lo.load:
                a = m
            elif m >= st.hi.load:
                b = m
            else:
                return m, f"Binsearch step: midpoint of [{a:g}, {b:g}]"
        return _bisect(st)

    def next_load(self, st: SearchState) -> tuple[float, str]:
        if st.lo is None or st.hi is None or not st.loads:
            return self._opening.next_load(st)
        lo, hi = st.lo, st.hi
        w = hi.load - lo.load
        lo0, hi0, after, widths = self._bracket_phase(st)
        used = sum(1 for s in after if not self._dyadic(s.load, lo0.load, hi0.load))
        if used >= self.max_model:
            load, r = self._shadow(st, lo0.load, hi0.load)
            return load, f"{r} ({used} model steps used)"
        if len(widths) >= 3 and widths[-1] > 0.5 * widths[-3] * (1 + 1e-9):
            load, r = self._shadow(st, lo0.load, hi0.load)
            return load, f"{r} (bracket did not halve in two steps: Brent safeguard)"
        p1, p2 = self._fit_points(st)
        pred = two_point_fit((p1.load, p1.mean), (p2.load, p2.mean), st.r_sat_ms, self.form)
        why = (f"model step {used + 1}: {self.form} fit through {p1.load:g} and {p2.load:g} "
               f"→ {pred:.6g} inside [{lo.load:g}, {hi.load:g}]")
        if max(p1.mean, p2.mean) < self.near * st.r_sat_ms:
            load, r = self._shadow(st, lo0.load, hi0.load)
            return load, (f"{r} (no load on the curve within {self.near:g}·R_sat yet: the fit "
                          f"would extrapolate from the flat part)")
        if not (math.isfinite(pred) and lo.load + self.margin * w < pred < hi.load - self.margin * w):
            load, r = self._shadow(st, lo0.load, hi0.load)
            return load, f"{r} (model proposal {pred:.6g} not strictly inside the bracket)"
        if self._dyadic(pred, lo0.load, hi0.load):
            pred = pred * (1 + 1e-9)
        return pred, why


def make_picker(spec) -> Picker:
    """The picker named by `spec.policy` ("linear", "binsearch", "model", "safeguarded")."""
    if spec.policy == "binsearch":
        return Binsearch(spec.seed_step)
    if spec.policy == "linear":
        return Linear(spec.linear_step_ops_s or spec.first_load)
    if spec.policy == "model":
        return Model(spec.model_form, spec.seed_step)
    if spec.policy == "safeguarded":
        return Safeguarded(spec.model_form, spec.seed_step)
    raise ValueError(f"policy must be one of linear, binsearch, model, safeguarded; got {spec.policy!r}")
