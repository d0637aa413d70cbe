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
               2·start: +1, charged to the model allowance); inside a bracket, a regula-falsi step
               on 1/R (exact for M/M/1) is accepted only strictly inside the bracket and only while
               the bracket at least halves every two steps (Brent's rule) and fewer than
               `max_bad` model steps have failed to halve it; otherwise bisection. It can
               never leave the bracket, so it never diverges, and after `max_bad` failures it
               is plain bisection: at most a constant number of extra loads over Binsearch.
"""

from __future__ import annotations

import math
from typing import Protocol

from workbench.controller.state import SearchState


class Picker(Protocol):
    name: str

    def next_load(self, st: SearchState) -> tuple[float, str]: ...


def _seeded_opening(st: SearchState, delta: float) -> tuple[float, str] | None:
    """§3.7 seeding: bracket around the seed with steps seed·(1+δ·2^k) up or seed/(1+δ·2^k) down."""
    if not st.loads:
        return st.start, "seed load"
    if st.lo is not None and st.hi is not None:
        return None
    if st.hi is None:  # everything so far unsaturated: step up from the seed
        k = sum(1 for s in st.loads if s.load > st.start * (1 + 1e-9))
        cand = st.start * (1.0 + delta * 2**k)
        top = max(s.load for s in st.loads)
        if cand <= top:
            cand = top * (1.0 + delta * 2**k)
        return cand, f"seed bracketing: up step {k} (×{1 + delta * 2**k:g})"
    k = sum(1 for s in st.loads if s.load < st.start * (1 - 1e-9))
    cand = st.start / (1.0 + delta * 2**k)
    bottom = min(s.load for s in st.loads)
    if cand >= bottom:
        cand = bottom / (1.0 + delta * 2**k)
    return cand, f"seed bracketing: down step {k} (÷{1 + delta * 2**k:g})"


def bisect(st: SearchState) -> tuple[float, str]:
    """Algorithm 3 step 3 (set form): midpoint of [highest unsaturated, lowest saturated]."""
    assert st.lo is not None and st.hi is not None
    return (st.lo.load + st.hi.load) / 2.0, (f"bisect [{st.lo.load:g}, {st.hi.load:g}]")


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
        if st.hi is None:  # geometric phase
            top = max(s.load for s in st.loads)
            return top * 2.0, f"geometric phase: 2 × {top:g}"
        if st.lo is None:  # even the first load saturated: halve below it
            return st.hi.load / 2.0, f"first load saturated: {st.hi.load:g} / 2"
        return bisect(st)


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
            return (
                (nxt, f"linear phase down: {bottom:g} − {self.step:g}")
                if nxt > 0
                else (bottom / 2.0, f"linear phase down: {bottom:g} / 2")
            )
        return bisect(st)


def two_point_fit(
    p1: tuple[float, float], p2: tuple[float, float], r_sat: float, form: str = "mm1"
) -> float:
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
        why = (
            f"model {self.form} through ({cur.load:g}, {cur.mean:.3g} ms) and "
            f"({near.load:g}, {near.mean:.3g} ms) → {pred:.6g}"
        )
        top = max(s.load for s in st.loads)
        # sanity only (not a safeguard): a load must be a positive finite number, not absurdly
        # far from what was tested, and new
        if (
            not math.isfinite(pred)
            or pred <= 0
            or pred > self.max_factor * top
            or _is_tested(st, pred)
        ):
            return self._fallback(st, why)
        return pred, why

    @staticmethod
    def _fallback(st: SearchState, why: str) -> tuple[float, str]:
        if st.lo is not None and st.hi is not None:
            load, r = bisect(st)
        elif st.hi is None:
            top = max(s.load for s in st.loads)
            load, r = top * 2.0, f"2 × {top:g}"
        else:
            load, r = st.hi.load / 2.0, f"{st.hi.load:g} / 2"
        return load, f"{why} unusable → {r}"
