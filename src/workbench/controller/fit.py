"""The `stop_rule="fit"` candidate (issue 16): a local model of R(λ) from every valid trial near
R_sat, with λ* and its CI by inverse regression.

log R(λ) = b0 + b1·λ is fitted by weighted least squares (weights = runlength: [CC] §3.2, trial
variance ∝ 1/r) to the individual valid trials of every load whose mean lies within
`FIT_WINDOW` of R_sat (log R is close to linear over so narrow a span of an M/M/m curve). Then
λ̂* = (log R_sat − b0)/b1 with its Fieller interval at confidence c (`stats.calibration`), and the
fitted peak-rate region in loads is [λ(R_sat(1 − s)), λ(R_sat(1 + s))] on the fitted line. The
rating may stop when the Fieller interval lies inside that region: with confidence c (under the
local model) every load in the interval, λ̂* included, has its mean response within R_sat ± s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from workbench.controller.state import LoadSummary
from workbench.stats.calibration import fieller_inverse, wls_line

FIT_WINDOW = 1.25          # loads whose mean response lies within R_sat/1.25 … 1.25·R_sat enter the fit
FIT_MIN_TRIALS = 6         # valid trials in the window before the fit may stop a rating (df ≥ 4)
FIT_MIN_LOADS = 2          # distinct loads in the window


@dataclass(frozen=True)
class FitPeak:
    peak_rate: float                       # λ̂* on the fitted line
    ci: tuple[float, float]                # Fieller interval of λ* at confidence c
    region: tuple[float, float]            # fitted peak-rate region in loads
    n_trials: int
    loads: tuple[float, ...]               # the loads that entered the fit

    @property
    def inside(self) -> bool:
        lo, hi = self.region
        return (math.isfinite(self.ci[0]) and math.isfinite(self.ci[1])
                and lo <= self.ci[0] and self.ci[1] <= hi and self.loads[0] <= self.peak_rate <= self.loads[-1])


def fit_peak(loads: Sequence[LoadSummary], r_sat: float, width: float, confidence: float) -> FitPeak | None:
    """The local fit over the loads near R_sat, or None when there is too little to fit."""
    near = [s for s in loads if s.n >= 1 and s.mean > 0 and not s.latency_saturated
            and abs(math.log(s.mean / r_sat)) <= math.log(FIT_WINDOW)]
    xs, ys, ws = [], [], []
    for s in near:
        rls = s.runlengths or (1.0,) * len(s.means)
        for m, r in zip(s.means, rls):
            if m > 0:
                xs.append(s.load)
                ys.append(math.log(m))
                ws.append(float(r))
    if len(xs) < FIT_MIN_TRIALS or len(set(xs)) < FIT_MIN_LOADS:
        return None
    fit = wls_line(xs, ys, ws)
    if not fit.b1 > 0:
        return None
    lam, lo, hi = fieller_inverse(fit, math.log(r_sat), confidence)
    region = ((math.log(r_sat * (1 - width)) - fit.b0) / fit.b1, (math.log(r_sat * (1 + width)) - fit.b0) / fit.b1)
    return FitPeak(lam, (lo, hi), region, len(xs), tuple(sorted(set(xs))))
