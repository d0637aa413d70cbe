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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from workbench.controller.state import LoadSummary
from workbench.stats.calibration import LineFit, fieller_inverse, robust_wls, wls, wls_line
from workbench.stats.intervals import region

FIT_WINDOW = 1.25  # loads whose mean response lies within R_sat/1.25 … 1.25·R_sat enter the fit
FIT_MIN_TRIALS = 6  # valid trials in the window before the fit may stop a rating (df ≥ 4)
FIT_MIN_LOADS = 2  # distinct loads in the window


@dataclass(frozen=True)
class FitPeak:
    peak_rate: float  # λ̂* on the fitted line
    ci: tuple[float, float]  # Fieller interval of λ* at confidence c
    region: tuple[float, float]  # fitted peak-rate region in loads
    n_trials: int
    loads: tuple[float, ...]  # the loads that entered the fit

    @property
    def inside(self) -> bool:
        lo, hi = self.region
        return (
            math.isfinite(self.ci[0])
            and math.isfinite(self.ci[1])
            and lo <= self.ci[0]
            and self.ci[1] <= hi
            and self.loads[0] <= self.peak_rate <= self.loads[-1]
        )


def fit_peak(
    loads: Sequence[LoadSummary], r_sat: float, width: float, confidence: float
) -> FitPeak | None:
    """The local fit over the loads near R_sat, or None when there is too little to fit."""
    near = [
        s
        for s in loads
        if s.n >= 1 and not s.latency_saturated and near_r_sat(s.mean, r_sat, FIT_WINDOW)
    ]
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
    reg_lo, reg_hi = ((math.log(r) - fit.b0) / fit.b1 for r in region(r_sat, width))
    return FitPeak(lam, (lo, hi), (reg_lo, reg_hi), len(xs), tuple(sorted(set(xs))))


# ----------------------------------------------------------------------------------------------
# The "local" policy's fit (issue 16): robust, with a first-trial (cold start) effect

LOCAL_WINDOW = 2.0  # loads whose median trial lies within R_sat/2 … 2·R_sat enter the local fit
LOCAL_MIN_TRIALS = 8  # valid trials in the window before the local fit exists
# trials kept in the local fit before it may stop a rating (≥ 9 residual df)
FIT_STOP_MIN_TRIALS = 12


def near_r_sat(mean_ms: float, r_sat: float, window: float = LOCAL_WINDOW) -> bool:
    """Whether a mean response time lies within R_sat/window … window·R_sat (the fit's window)."""
    return mean_ms > 0 and abs(math.log(mean_ms / r_sat)) <= math.log(window)


@dataclass(frozen=True)
class LocalFit:
    peak_rate: float  # λ̂* on the fitted line (warm trials)
    ci: tuple[float, float]  # Fieller interval of λ* at the fit's confidence
    region: tuple[float, float]  # fitted peak-rate region in loads
    n_trials: int  # trials kept in the fit
    n_dropped: int  # trials deleted as outliers
    loads: tuple[float, ...]  # the loads that entered the fit
    first_effect: float  # fitted log-ratio of a load's first trial (nan: not fitted)
    slope: float  # b1: d log R / dλ
    level_ci: tuple[float, float] = (math.nan, math.nan)  # CI of the warm mean R at λ̂* (ms)

    @property
    def level_inside(self) -> bool:
        """The CI of the fitted warm mean response at λ̂* lies inside [R_sat ± s·R_sat], λ̂* lies
        within the fitted loads (no extrapolation) and the slope is significant (Fieller
        bounded)."""
        return (
            self.region_ms[0] <= self.level_ci[0]
            and self.level_ci[1] <= self.region_ms[1]
            and self.loads[0] <= self.peak_rate <= self.loads[-1]
            and math.isfinite(self.ci[0])
            and math.isfinite(self.ci[1])
        )

    region_ms: tuple[float, float] = (math.nan, math.nan)  # [R_sat(1 − s), R_sat(1 + s)]
    # Fieller interval at the report confidence
    report_ci: tuple[float, float] = (math.nan, math.nan)

    @property
    def reported(self) -> FitPeak:
        """The fit as the result reports it: λ̂* with the Fieller interval at the report
        confidence."""
        return FitPeak(self.peak_rate, self.report_ci, self.region, self.n_trials, self.loads)

    @property
    def inside(self) -> bool:
        lo, hi = self.region
        return (
            math.isfinite(self.ci[0])
            and math.isfinite(self.ci[1])
            and lo <= self.ci[0]
            and self.ci[1] <= hi
            and self.loads[0] <= self.peak_rate <= self.loads[-1]
        )

    @property
    def fit_peak(self) -> FitPeak:
        return FitPeak(self.peak_rate, self.ci, self.region, self.n_trials, self.loads)


def on_curve(loads: Sequence[LoadSummary]) -> list[LoadSummary]:
    """The loads whose median trial does not contradict a saturated load below them. R(λ) is
    monotone, so a load above a saturated one reads at least as high; one that reads lower is past
    capacity, where a trial reads a transient (the noise of a growing queue can put it anywhere,
    R_sat included), and a fit through it would place λ* past capacity."""
    med = {id(s): s.median_ms for s in loads}
    sat = [s for s in loads if s.side > 0]
    return [s for s in loads if not any(t.load < s.load and med[id(t)] > med[id(s)] for t in sat)]


def _fit_rows(
    loads: Sequence[LoadSummary], r_sat: float, window: float
) -> list[tuple[float, float, float, float]]:
    """(load, log mean, runlength, 1 for the load's first trial) of every trial of the loads on the
    curve whose median trial lies within R_sat/window … window·R_sat."""
    near = [
        s
        for s in on_curve(loads)
        if s.n >= 1
        and not s.latency_saturated
        and all(m > 0 for m in s.means)
        and near_r_sat(s.median_ms, r_sat, window)
    ]
    rows = []
    for s in near:
        rls = s.runlengths or (1.0,) * len(s.means)
        for k, (m, r) in enumerate(zip(s.means, rls)):
            rows.append((s.load, math.log(m), float(r), 1.0 if k == 0 else 0.0))
    return rows


def _design(x: np.ndarray, first: np.ndarray, first_effect: bool) -> tuple[np.ndarray, bool] | None:
    """(X, with the first-trial column): 1, x (centred) and, when some load has a second trial,
    the first-trial indicator; without that column when X would be rank deficient or leave too
    few degrees of freedom; None when even the line cannot be fitted."""
    cols = [np.ones_like(x), x]
    use_first = bool(first_effect and 0 < first.sum() < first.size)
    if use_first:
        cols.append(first)
    X = np.column_stack(cols)
    if np.linalg.matrix_rank(X) < X.shape[1] or len(x) <= X.shape[1] + 1:
        if not use_first:
            return None
        X, use_first = X[:, :2], False
    return X, use_first


def _mean_halfwidth(df: int, line: LineFit, x0: float, confidence: float) -> float:
    """The half-width on the log scale of the CI of the mean at x0: ŷ(x0) ± t·se (Draper & Smith
    §1.4; ŷ(x0) = log R_sat by construction), at most 700 (exp(700): no overflow)."""
    t = float(_st.t.ppf((1.0 + confidence) / 2.0, df))
    return min(t * line.se_mean(x0), 700.0) if math.isfinite(x0) else 700.0


def _report_ci(
    line: LineFit, r_sat: float, confidence: float | None, stop_ci: tuple[float, float]
) -> tuple[float, float]:
    """The Fieller interval reported (at `confidence`), when the stop tests' (stop_ci) is finite;
    else the stop tests' own."""
    lo, hi = stop_ci
    if confidence is not None and (math.isfinite(lo) and math.isfinite(hi)):
        _, rlo, rhi = fieller_inverse(line, math.log(r_sat), confidence)
        return rlo, rhi
    return lo, hi


def local_fit(
    loads: Sequence[LoadSummary],
    r_sat: float,
    width: float,
    confidence: float,
    window: float = LOCAL_WINDOW,
    min_trials: int = LOCAL_MIN_TRIALS,
    first_effect: bool = True,
    robust: bool = True,
    report_confidence: float | None = None,
) -> LocalFit | None:
    """log R = b0 + b1·λ (+ b2·[first valid trial at its load]) by WLS (weights = runlength, [CC]
    §3.2) over every valid trial of the loads on the curve (`on_curve`) whose median trial mean
    lies within R_sat/window … window·R_sat, after Bonferroni outlier deletion
    (`stats.calibration.robust_wls`); λ̂* = (log R_sat − b0)/b1 with its Fieller interval
    (Draper & Smith §3.2) at `confidence`. The first-trial term (a cache warm-up inflates the first
    trial at a new load) is fitted only when some load in the window has a second trial; λ* is
    read off the warm line."""
    rows = _fit_rows(loads, r_sat, window)
    if len(rows) < min_trials or len({r[0] for r in rows}) < 2:
        return None
    x = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    w = np.array([r[2] for r in rows])
    xc = float(np.average(x, weights=w))
    design = _design(x - xc, np.array([r[3] for r in rows]), first_effect)
    if design is None:
        return None
    X, use_first = design
    try:
        fit = robust_wls(X, y, w) if robust else wls(X, y, w)
    except ValueError:
        return None
    line = fit.line(0, 1)
    if not line.b1 > 0:
        return None
    x0, lo, hi = fieller_inverse(line, math.log(r_sat), confidence)
    rlo, rhi = _report_ci(line, r_sat, report_confidence, (lo, hi))
    reg = tuple(xc + (math.log(r) - line.b0) / line.b1 for r in region(r_sat, width))
    kept = np.asarray(fit.kept, bool)
    h = _mean_halfwidth(fit.df, line, x0, confidence)
    return LocalFit(
        xc + x0,
        (xc + lo, xc + hi),
        (float(reg[0]), float(reg[1])),
        int(kept.sum()),
        int((~kept).sum()),
        tuple(sorted({float(v) for v in x[kept]})),
        float(fit.beta[2]) if use_first else math.nan,
        float(line.b1),
        (r_sat * math.exp(-h), r_sat * math.exp(h)),
        region(r_sat, width),
        (xc + rlo, xc + rhi),
    )
