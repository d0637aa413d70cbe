"""Change points in a baseline's nightly λ* history (issue 31): did λ* move to a new level, from
which night, by how much — judged on the whole series, not one night against the last five.

After Apache Otava's method (a change-point search, then a significance filter on each candidate;
Otava itself pins numpy 2.2 and scipy < 1.17, which this stack cannot take), with ruptures' PELT:
1. y = log λ* per night: a −5 % step is the same size at any λ*, and the noise of a rating is
   relative (docs/performance.md "Repeatability").
2. σ̂, the noise of one night: the MAD of successive differences / (0.6745·√2) — robust to the
   steps themselves, each of which moves one difference only (Fryzlewicz 2014 §3; Rousseeuw & Croux
   1993 for the MAD's 0.6745).
3. Candidates: PELT (Killick, Fearnhead & Eckley 2012) on y with the l2 cost, penalty
   β = PENALTY·σ̂²·log n (the BIC-type penalty of a mean shift, Yao 1988), segments of ≥ 2 nights —
   ruptures.KernelCPD with the linear kernel, its C implementation of the same search and cost.
4. A candidate between its neighbouring segments A | B counts when the two-sample t-test with the
   series' own σ̂ (equal variances: one configuration measured night after night) gives p < P_MAX
   (Otava's filter, 0.001), and the change |ȳB − ȳA| is at least the floor: the larger of
   MIN_CHANGE and the ratings' own standard error of log λ* (their interval: a change the rating
   cannot resolve does not count).
5. The canary (a configuration that never changes) over a baseline's change point: Wald's sequential
   probability ratio test with Huber's clipping (canary_verdict): moved (a lab change), held, or
   unsteady.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import ruptures
from scipy import stats as _st

MIN_CHANGE = 0.02  # log-scale change (≈ 2 %) below which no level change is reported
P_MAX = 0.01  # the t-test filter (Otava's is 0.001; the confirming re-run guards this one)
PENALTY = 2.0  # β = PENALTY·σ̂²·log n (calibrated on bench/regression_replay.py)
MIN_NIGHTS = 2  # nights per segment: one odd night is no new level
NEW_LEVEL_NIGHTS = 3  # a change point this recent is a new level to confirm and report
MIN_HISTORY = 6  # nights before any change point is looked for


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first night of the new level (index into the series)
    before: float  # geometric mean λ* of the segment before
    after: float  # … and of the segment from `index` on
    rel_change: float  # after / before − 1
    rel_ci: tuple[float, float]  # its (1 − P_MAX) CI, as a ratio − 1
    p: float  # the t-test's two-sided p-value
    floor: float  # the smallest log-change that could count here
    start: int = 0  # the first night of the segment before

    @property
    def drop(self) -> bool:
        return self.rel_change < 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def noise_sd(y: Sequence[float]) -> float:
    """σ̂ of one night on the log scale: MAD of successive differences / (0.6745·√2) (module doc,
    2)."""
    d = np.diff(np.asarray(y, float))
    if d.size < 2:
        return math.nan
    return float(np.median(np.abs(d - np.median(d))) / 0.6745 / math.sqrt(2.0))


def _t_test(a: np.ndarray, b: np.ndarray, sd: float) -> tuple[float, float, float]:
    """(difference of means, its standard error, two-sided p) with the series' σ̂ and n − 2 df."""
    diff = float(b.mean() - a.mean())
    se = sd * math.sqrt(1.0 / a.size + 1.0 / b.size)
    df = max(a.size + b.size - 2, 1)
    return diff, se, float(2.0 * _st.t.sf(abs(diff) / se, df)) if se > 0 else (0.0 if diff else 1.0)


def change_points(
    values: Sequence[float], se_log: Sequence[float] | None = None, penalty: float = PENALTY
) -> list[ChangePoint]:
    """The level changes of a λ* series (module doc); se_log: each night's standard error of log λ*
    from its own interval (None: unknown), whose median is the floor when above MIN_CHANGE."""
    y = np.log(np.asarray(values, float))
    n = y.size
    sd = noise_sd(y)
    if n < MIN_HISTORY or not math.isfinite(sd):
        return []
    sd = max(sd, 1e-6)
    floor = max(MIN_CHANGE, float(np.median(se_log)) if se_log is not None and len(se_log) else 0.0)
    algo = ruptures.KernelCPD(kernel="linear", min_size=MIN_NIGHTS).fit(y.reshape(-1, 1))
    bounds = [0, *(int(e) for e in algo.predict(pen=penalty * sd * sd * math.log(n)))]
    out = []
    for k in range(1, len(bounds) - 1):
        a, b = y[bounds[k - 1] : bounds[k]], y[bounds[k] : bounds[k + 1]]
        diff, se, p = _t_test(a, b, sd)
        if p >= P_MAX or abs(diff) < floor:
            continue
        q = float(_st.t.ppf(1.0 - P_MAX / 2.0, max(a.size + b.size - 2, 1)))
        out.append(
            ChangePoint(
                bounds[k],
                float(np.exp(a.mean())),
                float(np.exp(b.mean())),
                math.expm1(diff),
                (math.expm1(diff - q * se), math.expm1(diff + q * se)),
                p,
                floor,
                bounds[k - 1],
            )
        )
    return out


def new_level(
    values: Sequence[float], se_log: Sequence[float] | None = None, window: int = NEW_LEVEL_NIGHTS
) -> ChangePoint | None:
    """The newest change point when the new level began within the last `window` nights, else
    None."""
    cps = change_points(values, se_log)
    if not cps or cps[-1].index < len(values) - window:
        return None
    return cps[-1]


def confirmed(
    values: Sequence[float],
    rerun: float,
    suspect: ChangePoint,
    se_log: Sequence[float] | None = None,
) -> bool:
    """A suspected new level stands after tonight's confirming re-run: the re-run lies nearer the
    new level than the old one (an independent measurement that agrees), and with it as one more
    night the newest change point still starts within a night of the suspect's, in the same
    direction."""
    if abs(math.log(rerun / suspect.after)) >= abs(math.log(rerun / suspect.before)):
        return False
    again = change_points(
        [*values, rerun], None if se_log is None else [*se_log, float(np.median(se_log))]
    )
    return (
        bool(again) and abs(again[-1].index - suspect.index) <= 1 and again[-1].drop == suspect.drop
    )


# The canary's verdict: Wald's sequential probability ratio test (Wald 1945) between "the canary
# held" (its shift is 0) and "it moved with the baseline" (its shift is the baseline's change Δ), on
# the canary's nights from the change point on, each night's log-likelihood ratio clipped (Huber
# 1965, a robust version of the probability ratio test: one outlying night cannot decide).
CANARY_ALPHA = 0.01  # P(a regression called a lab change): the SPRT's α
CANARY_BETA = 0.01  # P(a lab change called a regression): β
# the canary re-rated at most this often in one night while its verdict is "unsteady"
CANARY_RERUNS = 3
CANARY_CLIP = 4.0  # |log-likelihood ratio| of one night at most (Huber's censoring)


def sprt_bounds(alpha: float = CANARY_ALPHA, beta: float = CANARY_BETA) -> tuple[float, float]:
    """Wald's thresholds on the log-likelihood ratio: (log(β/(1−α)), log((1−β)/α))."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def canary_llr(
    before: Sequence[float],
    after: Sequence[float],
    shift: float,
    sd: float,
    clip: float = CANARY_CLIP,
) -> float:
    """log-likelihood ratio of "shifted by `shift`" to "held" for the mean of `after` against the
    mean of `before` (normal, variance sd²·(1/m + 1/n)): shift·(d − shift/2)/(sd²·(1/m + 1/n)), each
    night's residual from the midpoint first clipped so that it alone moves the ratio by at most
    `clip` (Huber)."""
    a, b = np.asarray(before, float), np.asarray(after, float)
    r = np.clip(
        b - a.mean() - shift / 2.0, -clip * sd * sd / abs(shift), clip * sd * sd / abs(shift)
    )
    return float(shift * r.mean() / (sd * sd * (1.0 / b.size + 1.0 / a.size)))


def canary_verdict(canary: Sequence[float], cp: ChangePoint) -> str:
    """What the canary (a configuration that never changes; its series ends with tonight's night and
    its re-runs) did over the baseline's change point `cp`, on the same nights: the SPRT above on
    log λ*, its nights before cp.index against its nights from cp.index on, σ̂ its noise_sd before
    cp.index. "moved" (a lab change), "held" (the baseline's change is its own) or "unsteady" (the
    evidence between the bounds: re-rate the canary, or a later night decides)."""
    y = np.log(np.asarray(canary, float))
    sd = noise_sd(y[: cp.index]) if cp.index >= 3 else noise_sd(y)
    if cp.index < 2 or not math.isfinite(sd) or sd <= 0 or y.size <= cp.index:
        return "unsteady"
    llr = canary_llr(y[: cp.index], y[cp.index :], math.log1p(cp.rel_change), sd)
    lo, hi = sprt_bounds()
    return "moved" if llr >= hi else "held" if llr <= lo else "unsteady"


def canary_moved(canary: Sequence[float], cp: ChangePoint) -> bool:
    """The canary moved with the baseline's change point `cp` (canary_verdict's "moved")."""
    return canary_verdict(canary, cp) == "moved"
