"""The "local" policy (issue 16): Safeguarded's opening and bracketing until the trials near R_sat
support a local fit of R(λ), then every trial where that fit says λ* is.

Once `fit.local_fit` exists (≥ LOCAL_MIN_TRIALS valid trials at ≥ 2 loads whose median trial lies
within R_sat/2 … 2·R_sat) and its slope is significant (the Fieller interval is bounded), the
next load is the fit's λ̂* when it lies inside the bracket [highest unsaturated, lowest saturated]
(10 % of its width from either end; at most twice the highest tested load when nothing
saturated); otherwise Safeguarded's step. The last load is run again instead while it lies
within a quarter of the fitted peak-rate region's width of λ̂* (fewer distinct loads: the
first-trial term of the fit is estimable, and a load near λ* is not abandoned for a step
smaller than the noise in λ̂*). Every trial at every load in the window enters the fit, so no
trial near the crossing is wasted on a per-load CI that is later thrown away. The stop is
`stop_rule="fit"`: the Fieller interval of λ* inside the fitted region (docs/controller.md).
"""

from __future__ import annotations

import math

from workbench.controller.fit import LocalFit
from workbench.controller.safeguarded import Safeguarded
from workbench.controller.state import SearchState, load_key

STICK = 0.25  # repeat the last load while |λ̂* − load| ≤ STICK · (fitted region width)
EDGE = 0.10  # keep nominations this share of the bracket's width inside it


class Local:
    name = "local"

    def __init__(self, spec) -> None:
        self.spec = spec
        self.fallback = Safeguarded(
            spec.model_form,
            spec.seed_step,
            capacity_cut=getattr(spec.policy, "capacity_cut", None),
            resolution=spec.resolution,
        )

    def place(
        self, st: SearchState, last_load: float | None, fit: LocalFit | None
    ) -> tuple[float, str] | None:
        """(load, reason) from the local fit of this decision (`fit.local_fit` at the policy's stop
        level), or None when there is no fit yet."""
        if fit is None or not (math.isfinite(fit.ci[0]) and math.isfinite(fit.ci[1])):
            return None  # no fit, or its slope is not significant: λ̂* means nothing yet
        lam = fit.peak_rate
        width = abs(fit.region[1] - fit.region[0])
        at = {load_key(s.load): s for s in st.loads}
        if last_load is not None and load_key(last_load) in {load_key(x) for x in fit.loads}:
            s = at.get(load_key(last_load))
            if abs(lam - last_load) <= STICK * width and (
                s is None or s.n < self.spec.max_trials_per_load
            ):
                return last_load, (
                    f"local fit: λ̂* {lam:.5g} within {STICK:g} region widths of the last load "
                    f"(CI [{fit.ci[0]:.5g}, {fit.ci[1]:.5g}], {fit.n_trials} trials)"
                )
        lower = st.lo.load if st.lo is not None else 0.0
        upper = st.hi.load if st.hi is not None else math.inf
        why = (
            f"local fit: λ̂* {lam:.5g} (CI [{fit.ci[0]:.5g}, {fit.ci[1]:.5g}], {fit.n_trials} "
            "trials)"
        )
        if math.isfinite(upper):
            lo_c, hi_c = lower + EDGE * (upper - lower), upper - EDGE * (upper - lower)
        else:
            lo_c, hi_c = lower + EDGE * lower, 2.0 * max(s.load for s in st.loads)
        if not lo_c <= lam <= hi_c:
            return None  # the fit contradicts the bracket: the picker's step instead
        s = at.get(load_key(lam))
        if s is not None and s.n >= self.spec.max_trials_per_load:
            lam *= 1.0 + 1e-4
        return lam, why

    def next_load(self, st: SearchState) -> tuple[float, str]:
        return self.fallback.next_load(st)
