"""The Safeguarded picker: a galloping opening, then model steps guarded by bisection (see
pickers)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from workbench.controller.pickers import Binsearch, bisect, two_point_fit
from workbench.controller.state import LoadSummary, SearchState, bracket_of, within_resolution


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

    def __init__(
        self,
        form: str = "mm1",
        seed_delta: float = 0.1,
        margin: float = 0.02,
        max_model: int = 2,
        curve_limit: float = 4.0,
        near: float = 0.5,
        gallop: float = 4.0,
        max_total: int = 6,
        capacity_cut: float | None = None,
        resolution: float | None = None,
    ):
        self.capacity_cut = capacity_cut
        self.resolution = resolution
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
            return st.ends
        on.sort(key=lambda s: (abs(1.0 / s.mean - 1.0 / st.r_sat_ms), s.order))
        return on[0], on[1]

    @staticmethod
    def _bracket_phase(
        st: SearchState, ratio: float | None = None
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
            if (
                lo is not None
                and hi is not None
                and (ratio is None or hi.load <= ratio * lo.load * (1 + 1e-9))
            ):
                widths = [hi.load - lo.load]
                for k in range(j + 1, len(loads) + 1):
                    # None when a later load contradicts an end: no progress
                    a, b = bracket_of(loads[:k])
                    widths.append(
                        b.load - a.load if a is not None and b is not None else widths[-1]
                    )
                return lo, hi, loads[j:], widths
        raise AssertionError("no bracket")

    @staticmethod
    def _dyadic(x: float, lo: float, hi: float, depth: int = 30) -> bool:
        """Is x a Binsearch midpoint of (lo, hi), i.e. lo + k/2^j·(hi − lo)? (Model steps are
        not.)"""
        f = (x - lo) / (hi - lo)
        return any(abs(f * 2**j - round(f * 2**j)) <= 1e-12 * 2**j for j in range(1, depth + 1))

    @staticmethod
    def _pending(
        loads: Sequence[LoadSummary], r_sat: float, lo: float, hi: float, lo0: float, hi0: float
    ) -> tuple[float, float, float] | None:
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
        lo, hi = st.ends
        p = self._pending(st.loads, st.r_sat_ms, lo.load, hi.load, lo0, hi0)
        if p is None:
            return bisect(st)
        m, a, b = p
        return m, f"Binsearch step: midpoint of [{a:g}, {b:g}]"

    def _model_steps(
        self, st: SearchState, lo0: LoadSummary, hi0: LoadSummary, after: list[LoadSummary]
    ) -> tuple[int, int]:
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
        cut = self._capacity_cut(st)
        if cut is not None:
            return cut
        mid = st.lo.load * 2.0
        if mid >= st.hi.load * (1 - 1e-9):
            return None
        return (
            mid,
            f"galloping opening: fill the doubling {st.lo.load:g} × 2 in [{st.lo.load:g}, "
            f"{st.hi.load:g}]",
        )

    # the overloaded trial's completions fall this many Poisson SDs short (summary.THROUGHPUT_Z)
    CUT_Z = 5.0

    def _capacity_cut(self, st: SearchState) -> tuple[float, str] | None:
        """Issue 30 (d): the gallop's first saturated load hi, when its trials completed X ops/s,
        significantly fewer than offered (Poisson z < −CUT_Z), ran past the server's capacity, and
        X estimates that capacity (an overloaded server completes at its capacity): λ* < capacity,
        so the next load is X·(1 + capacity_cut) — the top of the bracket it cuts — when that lies
        inside (lo, hi) and nothing was tested there yet. Only the first step after the gallop
        saturates."""
        lo, hi = st.ends
        if self.capacity_cut is None or any(lo.load < s.load < hi.load for s in st.loads):
            return None
        x = hi.achieved_ops_s
        if not (math.isfinite(x) and hi.throughput_z < -self.CUT_Z):
            return None
        load = x * (1.0 + self.capacity_cut)
        if not (lo.load * 1.05 < load < hi.load * 0.9):
            return None
        return load, (
            f"capacity cut: {hi.load:g} ops/s completed {x:.6g} ops/s (z {hi.throughput_z:.1f}) → "
            f"{load:.6g} = {1 + self.capacity_cut:g} × that"
        )

    def _opening_extra(self, st: SearchState, lo0: LoadSummary, hi0: LoadSummary) -> int:
        """Loads the (galloping) opening used beyond Binsearch's own opening to the same bracket."""
        if st.seeded or self.gallop <= 2.0 or lo0.load >= hi0.load or st.start <= 0:
            return 0
        k = math.log2(hi0.load / st.start)
        if k < 0.5 or abs(k - round(k)) > 1e-6 or hi0.load > 2.0 * lo0.load * (1 + 1e-9):
            return 0  # first load saturated: the opening was Binsearch's own halving
        ours = sum(1 for s in st.loads if s.order <= max(lo0.order, hi0.order))
        return max(0, ours - (int(round(k)) + 1))

    def _ends_search(self, st: SearchState, load: float) -> bool:
        """A trial at `load` (Binsearch's next) narrows the bracket to `resolution` whichever side
        it reads (the stop rule (hi − lo) ≤ resolution·hi): a model step could only gamble that away
        (a smoke rating crept 1000 → 1004 → 1011 ops/s on model steps at a 15 % resolution)."""
        lo, hi = (end.load for end in st.ends)
        return (
            self.resolution is not None
            and lo < load < hi
            and within_resolution(lo, load, self.resolution)
            and within_resolution(load, hi, self.resolution)
        )

    def next_load(self, st: SearchState) -> tuple[float, str]:
        g = self._gallop(st)
        if g is not None:
            return g
        if st.lo is None or st.hi is None or not st.loads:
            return self._opening.next_load(st)
        lo, hi = st.lo, st.hi
        w = hi.load - lo.load
        lo0, hi0, after, widths = self._bracket_phase(
            st, 2.0 if (self.gallop > 2.0 and not st.seeded) else None
        )
        total, used = self._model_steps(st, lo0, hi0, after)
        used += self._opening_extra(st, lo0, hi0)
        load, r = self._shadow(st, lo0.load, hi0.load)  # every step but a model step is this one
        if used >= self.max_model or total >= self.max_total:
            return load, f"{r} ({total} model steps, {used} of them bad)"
        if len(widths) >= 3 and widths[-1] > 0.5 * widths[-3] * (1 + 1e-9):
            return load, f"{r} (bracket did not halve in two steps: Brent safeguard)"
        if self._ends_search(st, load):
            return (
                load,
                f"{r} (either outcome leaves the bracket within the resolution: no model step)",
            )
        p1, p2 = self._fit_points(st)
        pred = two_point_fit((p1.load, p1.mean), (p2.load, p2.mean), st.r_sat_ms, self.form)
        why = (
            f"model step {total + 1}: {self.form} fit through {p1.load:g} and {p2.load:g} "
            f"→ {pred:.6g} inside [{lo.load:g}, {hi.load:g}]"
        )
        if max(p1.mean, p2.mean) < self.near * st.r_sat_ms:
            return load, (
                f"{r} (no load on the curve within {self.near:g}·R_sat yet: the fit "
                f"would extrapolate from the flat part)"
            )
        if not (
            math.isfinite(pred) and lo.load + self.margin * w < pred < hi.load - self.margin * w
        ):
            return load, f"{r} (model proposal {pred:.6g} not strictly inside the bracket)"
        if self._dyadic(pred, lo0.load, hi0.load):
            pred = pred * (1 + 1e-9)
        return pred, why
