"""Load pickers: tiny strategies that nominate the next offered load (MLRsearch style).

A picker sees only the per-load summaries derived from the trial log (`SearchState`) and
returns ``(load_ops_s, reason)``; it keeps no state of its own, so ``decide`` stays a pure
function of the log. Every summary carries a `side`: −1 (unsaturated: below the goal),
+1 (saturated) or 0 (undecided / in the peak-rate region), and `order`, the position of the
load's first trial in the log (the "sequence of test loads" of [CC] Algorithm 2).

Policies ([CC] = Cutting Corners, shared/seeds/000_*, newer text 002_*):
- Linear       §3.1 strawman (RatingSpec.linear_trials = t, default 10): start load, + fixed
               increment, exactly t trials per load, stop at the first saturated load
               (λ* = the last unsaturated load). linear_trials=None: §5.2 Linear — the same
               linear phase under Algorithm 2's adaptive trials, then halve the bracket like
               Binsearch.
- Binsearch    Algorithm 3: 50, 100, 200, … doubling until saturated, then midpoints of
               [highest unsaturated, lowest saturated].
- Model        Algorithm 4: ×2 or ÷2 after the first load, then a two-point fit through the
               current load and the load whose mean is nearest R_sat; the next load solves the
               model at R_sat. Model forms: "mm1" R = 1/(a − bλ) (002 text, default) and
               "hyperbolic" R = a + b/λ (000 text).
- Seeding      §3.7 (002 text; §5.4 in 000): start at `seed_load` and bracket around it with
               growing steps seed·(1 + δ·2^k) (or seed/(1 + δ·2^k) when the seed saturates).
- Safeguarded  (new) a galloping opening (×4 from the start load, then the skipped doubling:
               it reaches Binsearch's opening bracket in ≤ as many loads, except for λ* below
               2·start: +1, charged to the model allowance); inside a bracket, a regula-falsi step on 1/R
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
    """[CC] §3.1 strawman (`strawman=True`, RatingSpec.linear_trials set): start load, + fixed
    increment, a fixed number of trials at each (enforced by `decide`), stop at the first
    saturated load. [CC] §5.2 Linear (`strawman=False`): the same linear phase under Algorithm 2's
    adaptive trial counts, then Binsearch's bisection of the bracket."""

    name = "linear"

    def __init__(self, step: float, strawman: bool = False):
        if not (step > 0):
            raise ValueError("linear step must be > 0")
        self.step = step
        self.strawman = strawman
        if strawman:
            self.name = "linear strawman"

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
    at which Binsearch would stop is also tested here. A model step is *good* when the bracket
    after it excludes the midpoint the shadow had pending (it replaced one Binsearch load) and
    free; *bad* steps use the `max_model` allowance (`max_total` caps all model steps). The
    galloping opening (×`gallop`, then the skipped doublings) reaches Binsearch's opening bracket
    in no more loads, except +1 when λ* < 2·start, which is charged as a bad step. Hence
    Safeguarded needs at most `max_model` more loads than Binsearch on a noise-free server.
    """

    name = "safeguarded"

    def __init__(self, form: str = "mm1", seed_delta: float = 0.1, margin: float = 0.02,
                 max_model: int = 2, curve_limit: float = 4.0, near: float = 0.5,
                 gallop: float = 4.0, max_total: int = 6):
        self.max_total = max_total
        self.near = near
        self.gallop = gallop
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
    def _bracket_phase(st: SearchState, ratio: float | None = None
                       ) -> tuple[LoadSummary, LoadSummary, list[LoadSummary], list[float]]:
        """(lo0, hi0) = the first complete bracket in log order (with hi/lo ≤ `ratio` when given
        and such a bracket exists), the loads tested after it, and the bracket widths after each."""
        loads = sorted(st.loads, key=lambda s: s.order)
        if ratio is not None:
            ok = False
            for j in range(1, len(loads) + 1):
                lo, hi = bracket_of(loads[:j])
                if lo is not None and hi is not None and hi.load <= ratio * lo.load * (1 + 1e-9):
                    ok = True
                    break
            if not ok:
                ratio = None
        for j in range(1, len(loads) + 1):
            lo, hi = bracket_of(loads[:j])
            if lo is not None and hi is not None and (
                    ratio is None or hi.load <= ratio * lo.load * (1 + 1e-9)):
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

    @staticmethod
    def _pending(loads: Sequence[LoadSummary], r_sat: float, lo: float, hi: float,
                 lo0: float, hi0: float) -> tuple[float, float, float] | None:
        """(m, a, b): the midpoint m of [a, b] that Binsearch started from (lo0, hi0) would test
        next, skipping midpoints that the loads tested or the bracket (lo, hi) decide."""
        a, b = lo0, hi0
        by_load = {round(s.load, 6): s for s in loads}
        for _ in range(200):
            m = (a + b) / 2.0
            s = by_load.get(round(m, 6))
            if s is not None:
                side = s.side or (-1 if s.mean < r_sat else 1)
                a, b = (m, b) if side < 0 else (a, m)
            elif m <= lo:
                a = m
            elif m >= hi:
                b = m
            else:
                return m, a, b
        return None

    def _shadow(self, st: SearchState, lo0: float, hi0: float) -> tuple[float, str]:
        """The next load of Binsearch started from (lo0, hi0), skipping decided midpoints."""
        p = self._pending(st.loads, st.r_sat_ms, st.lo.load, st.hi.load, lo0, hi0)
        if p is None:
            return _bisect(st)
        m, a, b = p
        return m, f"Binsearch step: midpoint of [{a:g}, {b:g}]"

    def _model_steps(self, st: SearchState, lo0: LoadSummary, hi0: LoadSummary,
                     after: list[LoadSummary]) -> tuple[int, int]:
        """(all model steps, "bad" ones). A model step is good when it decided the midpoint the
        shadow Binsearch had pending (the bracket after it excludes that midpoint): it replaced
        one Binsearch load, so it is free; only bad steps use the `max_model` allowance."""
        total = bad = 0
        loads = sorted(st.loads, key=lambda s: s.order)
        for s in after:
            if self._dyadic(s.load, lo0.load, hi0.load):
                continue
            total += 1
            before = [x for x in loads if x.order < s.order]
            blo, bhi = bracket_of(before)
            if blo is None or bhi is None:
                bad += 1
                continue
            p = self._pending(before, st.r_sat_ms, blo.load, bhi.load, lo0.load, hi0.load)
            alo, ahi = bracket_of(before + [s])
            if p is None or alo is None or ahi is None or (alo.load < p[0] < ahi.load):
                bad += 1
        return total, bad

    def _gallop(self, st: SearchState) -> tuple[float, str] | None:
        """Unseeded opening: Binsearch's first two loads, then ×`gallop` (skipping Binsearch's
        doublings in between), then the skipped doublings inside the bracket until it is
        Binsearch's own [2^j·start, 2^(j+1)·start]. None once that bracket is reached."""
        if st.seeded or self.gallop <= 2.0:
            return None
        if not st.loads:
            return st.start, "initial load (Algorithm 3 step 1)"
        if st.hi is None:
            top = max(s.load for s in st.loads)
            f = self.gallop
            return top * f, f"galloping opening: {f:g} × {top:g}"
        if st.lo is None:
            return None
        if st.hi.load <= 2.0 * st.lo.load * (1 + 1e-9):
            return None
        mid = st.lo.load * 2.0
        return mid, f"galloping opening: fill the doubling {st.lo.load:g} × 2 in [{st.lo.load:g}, {st.hi.load:g}]"

    def _opening_extra(self, st: SearchState, lo0: LoadSummary, hi0: LoadSummary) -> int:
        """Loads the (galloping) opening used beyond Binsearch's own opening to the same bracket."""
        if st.seeded or self.gallop <= 2.0 or lo0.load >= hi0.load or st.start <= 0:
            return 0
        k = math.log2(hi0.load / st.start)
        if k < 0.5 or abs(k - round(k)) > 1e-6 or hi0.load > 2.0 * lo0.load * (1 + 1e-9):
            return 0    # first load saturated: the opening was Binsearch's own halving
        ours = sum(1 for s in st.loads if s.order <= max(lo0.order, hi0.order))
        return max(0, ours - (int(round(k)) + 1))

    def next_load(self, st: SearchState) -> tuple[float, str]:
        g = self._gallop(st)
        if g is not None:
            return g
        if st.lo is None or st.hi is None or not st.loads:
            return self._opening.next_load(st)
        lo, hi = st.lo, st.hi
        w = hi.load - lo.load
        lo0, hi0, after, widths = self._bracket_phase(st, 2.0 if (self.gallop > 2.0 and not st.seeded) else None)
        total, used = self._model_steps(st, lo0, hi0, after)
        used += self._opening_extra(st, lo0, hi0)
        if used >= self.max_model or total >= self.max_total:
            load, r = self._shadow(st, lo0.load, hi0.load)
            return load, f"{r} ({total} model steps, {used} of them bad)"
        if len(widths) >= 3 and widths[-1] > 0.5 * widths[-3] * (1 + 1e-9):
            load, r = self._shadow(st, lo0.load, hi0.load)
            return load, f"{r} (bracket did not halve in two steps: Brent safeguard)"
        p1, p2 = self._fit_points(st)
        pred = two_point_fit((p1.load, p1.mean), (p2.load, p2.mean), st.r_sat_ms, self.form)
        why = (f"model step {total + 1}: {self.form} fit through {p1.load:g} and {p2.load:g} "
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
        return Linear(spec.linear_step_ops_s or spec.first_load, strawman=spec.strawman)
    if spec.policy == "model":
        return Model(spec.model_form, spec.seed_step)
    if spec.policy == "safeguarded":
        return Safeguarded(spec.model_form, spec.seed_step)
    raise ValueError(f"policy must be one of linear, binsearch, model, safeguarded; got {spec.policy!r}")
