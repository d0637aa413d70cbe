"""The certified λ* interval (issue 30): between which loads does R(λ) cross R_sat, at level c,
however often the controller looked.

R(λ) is monotone, so a load shown unsaturated is a lower bound of λ* and one shown saturated an
upper bound. The error 1 − c is split by the union bound (`SHARES`) into
* α_L for the lower end L = the highest load whose mean is shown below R_sat: running one-sided
  upper bound of the runlength-weighted mean < R_sat (`stats.sequential.upper_mean`);
* α_H for the upper end H = the lowest load shown saturated by any of (`BET_SHARE` of α_H to the
  e-process, the rest split evenly among the other tests in use): the lower bound of the log-scale
  mean > R_sat (Jensen: it bounds the mean too, `lower_log_mean`), a betting e-process against
  E[X] ≤ R_sat (`mean_exceeds`), the same on the p95 > L_sat (when L_sat is finite), or the
  operations completed falling short of those offered beyond Poisson noise (`count_deficit`: past
  capacity, hence past λ*) by at least `MIN_SHORTFALL`;
* α_F for the local fit's Fieller interval (`fit.local_fit`), intersected with [L, H] when its
  slope is significant.
Every test spends its error over its looks, α_k = α/(k(k+1)) at look k (`stats.sequential.spend`),
the looks on a geometric grid of sample sizes (`look_sizes`): the bounds hold at any stopping time.
[L, H] misses λ* only if one end's test erred. The error of an end is per load: a load far from λ*
errs with a probability far below α, so the union over the loads tested is not spent
(docs/controller.md "The certified λ* interval").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.controller.fit import LOCAL_MIN_TRIALS, local_fit
from workbench.controller.state import LoadSummary, load_key
from workbench.controller.trial import TrialResult
from workbench.stats.sequential import (
    count_deficit,
    look_sizes,
    lower_log_mean,
    mean_exceeds,
    running,
    spend,
    upper_mean,
    z_upper,
)

SHARES = (0.3, 0.3, 0.4)  # of 1 − c: the lower end, the upper end, the local fit
MIN_SHORTFALL = 0.01  # the count test also needs ≥ 1 % fewer completions than offered
FIT_MIN_LOADS = 3  # the fit's interval is intersected only with trials at ≥ 3 loads
BET_SHARE = 0.1  # of α_H, the betting e-process's: far past a wall its wealth grows ×5–20 a
# trial, so a smaller α costs it little; the log-t test keeps 0.9 of its share
LOW_SHIFT = 0.1  # the lower end bounds the mean of x + this share of R_sat (L_sat), less it


@dataclass(frozen=True)
class LoadBounds:
    low: float  # L: highest load shown unsaturated (0: none)
    high: float  # H: lowest load shown saturated (inf: none)
    low_by: str = ""
    high_by: str = ""

    @property
    def finite(self) -> bool:
        return self.low > 0 and math.isfinite(self.high)


@dataclass(frozen=True)
class Certified:
    interval: tuple[float, float]
    level: float  # c
    method: str
    bounds: LoadBounds
    fit_ci: tuple[float, float] = (math.nan, math.nan)


# the method in a word, for the one-line statement (findings.peak_interval)
METHOD_LABEL = "anytime-valid"
METHOD = (
    "load bounds at level c (union bound, 1 − c split {sl:g}/{sh:g}/{sf:g}): L = highest load with "
    "mean < R_sat (one-sided t or Cox), H = lowest with log-mean > R_sat or completions short "
    "(Poisson); α_k = α/(k(k+1)) over looks at n = 2, 3, 4, 6, 8, 11, …{fit}"
)


def _by_load(trials: Sequence[TrialResult]) -> dict[float, list[TrialResult]]:
    out: dict[float, list[TrialResult]] = {}
    for t in trials:
        if t.valid and not t.harness_failure:
            out.setdefault(load_key(t.load), []).append(t)
    return out


def _saturated_by(
    ts: list[TrialResult], r_sat: float, l_sat: float, alpha: float, max_loads: int
) -> str:
    """Why the trials of one load show it saturated (error ≤ alpha over every look), or ''. The
    count test's error does not fall with the distance from λ* (a load far below it completes what
    it is offered, exactly like one just below), so it is also split over the max_loads loads a
    rating may test (Bonferroni); the latency tests' error does fall with it."""
    rls = [float(t.runlength) for t in ts]
    a_e = BET_SHARE * alpha
    m = 3 if math.isfinite(l_sat) else 2
    a = (alpha - a_e) / m
    lb, n = running(lower_log_mean, [t.mean_ms for t in ts], a, rls, upper=False)
    if lb > r_sat:
        return f"mean > {r_sat:g} ms (lower bound {lb:.4g} ms on {n} trials)"
    n = mean_exceeds([t.mean_ms for t in ts], r_sat, a_e)
    if n:
        return f"mean > {r_sat:g} ms (betting e-process ≥ {1 / a_e:.4g} on {n} trials)"
    if m == 3:
        lb, n = running(lower_log_mean, [t.p95_ms for t in ts], a, rls, upper=False)
        if lb > l_sat:
            return f"p95 > {l_sat:g} ms (lower bound {lb:.4g} ms on {n} trials)"
    load = float(ts[0].load)
    for k, n in enumerate(look_sizes(len(ts), 1), start=1):
        z = count_deficit(load, [t.achieved_rate for t in ts[:n]], rls[:n])
        done = sum(t.achieved_rate * r for t, r in zip(ts[:n], rls[:n]))
        if z < -z_upper(spend(a / max_loads, k)) and done < (1 - MIN_SHORTFALL) * load * sum(
            rls[:n]
        ):
            return f"completions short of offered (z {z:.1f} on {n} trials)"
    return ""


def _distinct(ts: list[TrialResult]) -> list[TrialResult]:
    """The trials up to the first whose mean repeats an earlier one: a continuous measurement never
    repeats exactly, so a repeat is a clamped or quantised reading (past capacity the simulated
    families clamp a trial at 0.05·R), no evidence of a mean below R_sat (summary.py does the
    same)."""
    seen: set[float] = set()
    for i, t in enumerate(ts):
        if t.mean_ms in seen:
            return ts[:i]
        seen.add(t.mean_ms)
    return ts


def _upper_shifted(x: list[float], sat: float, alpha: float, rls: list[float]) -> tuple[float, int]:
    """The running upper bound of E[X + f] less f, f = LOW_SHIFT·sat: exact for the mean (E[X] =
    E[X + f] − f); the t part is shift-invariant, Cox's part now models a shifted lognormal, so a
    sub-millisecond reading's relative noise (0.24 vs 3.45 ms, far below R_sat = 40 ms) no longer
    inflates its s² of log x, and with it the bound, past R_sat."""
    f = LOW_SHIFT * sat
    ub, n = running(upper_mean, [float(v) + f for v in x], alpha, rls)
    return ub - f, n


def _unsaturated_by(ts: list[TrialResult], r_sat: float, l_sat: float, alpha: float) -> str:
    """Why the trials of one load show it unsaturated (error ≤ alpha over every look), or ''."""
    rls = [float(t.runlength) for t in ts]
    a = alpha / (2 if math.isfinite(l_sat) else 1)
    ub, n = _upper_shifted([t.mean_ms for t in ts], r_sat, a, rls)
    if ub < r_sat and (
        not math.isfinite(l_sat) or _upper_shifted([t.p95_ms for t in ts], l_sat, a, rls)[0] < l_sat
    ):
        return f"mean < {r_sat:g} ms (upper bound {ub:.4g} ms on {n} trials)"
    return ""


def load_shown(
    ts: list[TrialResult],
    r_sat: float,
    l_sat: float,
    confidence: float,
    max_loads: int,
    saturated: bool,
) -> bool:
    """One load's valid trials show it saturated (or unsaturated) at level c: load_bounds' test of
    one load, for a look-ahead (no repeats distrusted: it repeats a trial on purpose)."""
    alpha = 1.0 - confidence
    if saturated:
        return bool(_saturated_by(ts, r_sat, l_sat, SHARES[1] * alpha, max_loads))
    return bool(_unsaturated_by(ts, r_sat, l_sat, SHARES[0] * alpha))


def load_bounds(
    r_sat: float,
    l_sat: float,
    confidence: float,
    trials: Sequence[TrialResult],
    max_loads: int = 60,
    distrust_repeats: bool = True,
    latency_broken: frozenset[float] = frozenset(),
) -> LoadBounds:
    """[L, H] from the valid trials (the module's doc). L is the highest load shown unsaturated
    BELOW H: R(λ) is monotone, so one above H contradicts H, and were H right it would be wrong
    anyway. A lower bound needs the mean below R_sat and (L_sat finite) the p95 below L_sat, α_L
    split between the two; loads in latency_broken (their percentile rule reads broken, e.g. the
    P_sat form) are none."""
    alpha = 1.0 - confidence
    lows, highs = [], []
    for key, ts in _by_load(trials).items():
        load = float(ts[0].load)
        why = _saturated_by(ts, r_sat, l_sat, SHARES[1] * alpha, max_loads)
        if why:
            highs.append((load, why))
            continue
        if key in latency_broken:
            continue  # its percentile rule reads broken: no lower bound, whatever its mean
        why = _unsaturated_by(
            _distinct(ts) if distrust_repeats else ts, r_sat, l_sat, SHARES[0] * alpha
        )
        if why:
            lows.append((load, why))
    hi = min(highs) if highs else (math.inf, "")
    lo = max((x for x in lows if x[0] < hi[0]), default=(0.0, ""))
    return LoadBounds(lo[0], hi[0], lo[1], hi[1])


def fit_interval(
    loads: Sequence[LoadSummary], r_sat: float, width: float, confidence: float
) -> tuple[float, float]:
    """The local fit's Fieller interval at error α_F spent over its looks: look k = the number of
    sizes of `look_sizes` from LOCAL_MIN_TRIALS (8, 11, 16, 23, …) that its window's trials reached
    (the fit is evaluated on all of them: between two looks, an approximation); (nan, nan) when
    none."""
    a_f = SHARES[2] * (1.0 - confidence)
    first = local_fit(loads, r_sat, width, 1.0 - a_f)
    if first is None:
        return (math.nan, math.nan)
    k = max(1, len(look_sizes(first.n_trials + first.n_dropped, LOCAL_MIN_TRIALS)))
    lf = local_fit(loads, r_sat, width, 1.0 - spend(a_f, k))
    if (
        lf is None
        or not (math.isfinite(lf.ci[0]) and math.isfinite(lf.ci[1]))
        or len(lf.loads) < FIT_MIN_LOADS
    ):
        return (math.nan, math.nan)  # a line through two loads fits any curve: its bias goes unseen
    return (float(lf.ci[0]), float(lf.ci[1]))


def certified(
    r_sat: float,
    l_sat: float,
    width: float,
    confidence: float,
    trials: Sequence[TrialResult],
    loads: Sequence[LoadSummary],
    max_loads: int = 60,
    distrust_repeats: bool = True,
    use_fit: bool = True,
    bounds: LoadBounds | None = None,
) -> Certified:
    """[L, H] ∩ the fit's interval (use_fit: the local policy, whose placement keeps the fit's loads
    near λ̂*; when significant and not in conflict with [L, H]). Elsewhere a log-linear line through
    loads far apart carries the curve's bend as a bias no interval of its own shows (a noise-free
    Linear rating's fit excluded the true λ*). bounds: load_bounds' [L, H] of these very arguments,
    when the caller has it already."""
    broken = frozenset(load_key(s.load) for s in loads if s.latency_saturated)
    b = bounds or load_bounds(r_sat, l_sat, confidence, trials, max_loads, distrust_repeats, broken)
    f = fit_interval(loads, r_sat, width, confidence) if use_fit else (math.nan, math.nan)
    lo, hi = b.low, b.high
    used = False
    if all(map(math.isfinite, f)) and max(lo, f[0]) < min(hi, f[1]):
        lo, hi, used = max(lo, f[0]), min(hi, f[1]), True
    sl, sh, sf = SHARES
    method = METHOD.format(
        sl=sl, sh=sh, sf=sf, fit="; ∩ local-fit Fieller interval" if used else ""
    )
    return Certified((lo, hi), confidence, method, b, f)
