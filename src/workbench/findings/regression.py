"""Nightly regression verdict: tonight's peak rate λ* against its history (issue 5, point 4).

`compare_to_history(current, history)` takes ratings as {"result": PeakResult dict, "trials":
[trial records]} (history oldest first, newest last) and answers: did λ* drop by more than
`tolerance`, and is the drop statistically significant?

Baseline: the mean λ* of the last ≤ 5 converged history ratings with a finite λ* (k of them).

A rating that did not converge (`converged` false) has no estimate of λ*: its `peak_rate` may be a
bound on either side (a bracket end; "λ* ≥ lo" below a generator's ceiling). It never joins the
baseline. Tonight's unconverged rating still has its bracket [lo, hi] (hi: the lowest load
classified above λ*, so λ* < hi): it is a regression when significant and hi < (1 − tolerance)·
baseline, an improvement when significant and lo > (1 + tolerance)·baseline, and otherwise gives
no verdict (`inconclusive`); the nightly DAG turns red on that as on a regression.

CI of d = λ*_cur − λ*_base (normal approximation, independent ratings):
  * each rating's standard error from its own CI: se_i = half-width(peak_rate_ci) / z_{(1+c)/2};
  * Var(d) = se_cur² + Σ se_i² / k²  [+ s_b² / k when k ≥ 2, s_b = sample std of the k history
    λ*: the night-to-night spread of the baseline mean, which the per-rating CIs do not see];
  * CI = d ± q·√Var(d) with q = z_{(1+c)/2} when k = 1, else t_{(1+c)/2; ν} with the
    Welch–Satterthwaite effective df ν = Var(d)² / ((s_b²/k)² / (k − 1)) (the se terms are
    treated as known, ν = ∞). A rating whose CI is infinite makes Var(d) infinite (CI = ±∞).

Welch test (the primary test): the per-trial mean response times (valid trials) of tonight vs the
baseline ratings (pooled) within 10 % of L_ref (`reference_load`: the baseline's measured load
nearest its λ*); H1 = tonight is slower (regression) or faster (improvement), one-sided each. It is
used whenever both sides have ≥ 2 such trials: the nightly DAG seeds each rating at L_ref with a
fixed number of trials there (RatingSpec.seed_trials), so it normally does. Raw scale, as the
paper's saturation criterion is the mean response time; a warm-cache trial of 0.2 ms among
overloaded ones of seconds barely moves a raw mean but would dominate a mean of logarithms.

Fallback, only when Welch's test has no sample: the λ* CIs, read two ways, Bonferroni over the two
(each at α/2, α = 1 − c): the CI of d at level 1 − α/2 excludes 0, or CI separation: tonight's λ* CI
lies wholly below (above) every baseline rating's λ* CI. λ* CIs are bracket-like and asymmetric (a
bound may be ∞), so the normal approximation can be uninformative where separation is plain. The
baselines rate one configuration (one true λ*_b), so "tonight's CI lies below baseline j's"
misleads only if tonight's λ* is above its CI or λ*_b below baseline j's CI: error ≤ (1 − c_t)/2 +
(1 − c_j)/2 (two one-sided misses; Schenker & Gentleman 2001 for the normal case), taken with the
widest baseline level; it counts only when that bound is ≤ α/2. c_i is a rating's `ci_level`.

One test decides, never the first of several to succeed: an "or" over three tests at level α each
would raise the false-alarm rate to up to 3α.

regression = rel_change < −tolerance and significant; improvement = rel_change > +tolerance and
significant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from workbench.findings.regression_stats import (
    BASELINE_RATINGS,
    NEAR_LOAD_FRACTION,
    baseline_ratings,
    ci_bounds,
    diff_ci,
    finite,
    near_means_ms,
    peak_se,
    rating_level,
    ref_load,
    reference_load,
    separation_error,
    welch_one_sided,
)
from workbench.findings.regression_text import ci_words, reason_head, reason_tail, welch_words

__all__ = [
    "RegressionVerdict",
    "compare_to_history",
    "diff_ci",
    "peak_se",
    "reference_load",
    "separation_error",
    "BASELINE_RATINGS",
    "NEAR_LOAD_FRACTION",
]


@dataclass(frozen=True)
class RegressionVerdict:
    baseline_peak: float | None  # ops/s, mean λ* of the baseline ratings
    current_peak: float | None  # ops/s
    rel_change: float | None = None  # (current − baseline) / baseline
    diff: float | None = None  # current − baseline, ops/s
    diff_ci: tuple[float, float] | None = None
    welch_t: float | None = None
    welch_df: float | None = None
    welch_p: float | None = None  # one-sided, H1: tonight's mean response time is higher
    significant: bool = False
    regression: bool = False
    improvement: bool = False
    reason: str = ""
    n_baseline: int = 0  # history ratings in the baseline
    ref_load_ops_s: float | None = None  # load of the Welch comparison
    welch_n_current: int = 0
    welch_n_baseline: int = 0
    mean_ms_current: float | None = None  # at ref_load_ops_s (Welch samples)
    mean_ms_baseline: float | None = None
    separation_error: float | None = None  # bound on the error of the CI-separation claim
    test: str = ""  # what decided significance: welch | ci (fallback) | none
    tolerance: float = 0.10
    confidence: float = 0.95
    inconclusive: bool = False  # tonight's rating did not converge: no verdict

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (strict): NaN and ±∞ become None (an unbounded CI end is None)."""
        d = asdict(self)
        d["diff_ci"] = [finite(v) for v in self.diff_ci] if self.diff_ci is not None else None
        return {k: (finite(v) if isinstance(v, float) else v) for k, v in d.items()}


def compare_to_history(
    current: Mapping[str, Any],
    history: Sequence[Mapping[str, Any]],
    *,
    tolerance: float = 0.10,
    confidence: float = 0.95,
    current_name: str = "tonight's rating",
) -> RegressionVerdict:
    """Regression verdict for tonight's rating against the history (see the module docstring);
    `current_name` names the current rating in the reason."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance!r}")
    cur_res = current.get("result") or {}
    cur_peak = finite(cur_res.get("peak_rate"))
    b_lo, b_hi = ci_bounds(cur_res, "bracket")
    b_lo = max(b_lo, 0.0)
    unconverged_txt = None  # why tonight's rating has a bracket but no λ* estimate
    if cur_res.get("converged") is False:
        unconverged_txt = (
            f"{current_name} did not converge ({cur_res.get('reason') or 'no reason given'}; "
            f"bracket [{b_lo:.0f}, {b_hi:.0f}] ops/s)"
        )
    base_items = baseline_ratings(history)
    if not base_items or cur_peak is None:
        return _nothing_to_compare(
            cur_peak, base_items, unconverged_txt, current_name, tolerance, confidence
        )
    c = _change(current, base_items, cur_peak, confidence)
    sig = _significance(current, base_items, c, confidence)
    return _verdict(cur_peak, c, sig, (b_lo, b_hi), unconverged_txt, tolerance, confidence)


def _verdict(
    cur_peak: float,
    c: _Change,
    sig: _Significance,
    bracket: tuple[float, float],
    unconverged_txt: str | None,
    tolerance: float,
    confidence: float,
) -> RegressionVerdict:
    """The verdict from the change, what decided its significance and (a rating that did not
    converge) tonight's bracket."""
    unconverged = unconverged_txt is not None
    regression, improvement = _direction(
        sig.significant, unconverged, c.rel, bracket, c.base, tolerance
    )
    inconclusive = unconverged and not (regression or improvement)
    tail = reason_tail(
        regression,
        improvement,
        inconclusive,
        unconverged_txt,
        sig.significant,
        c.rel,
        c.base,
        tolerance,
        confidence,
        c.use_welch,
    )
    return RegressionVerdict(
        baseline_peak=c.base,
        current_peak=cur_peak,
        rel_change=c.rel,
        diff=c.d,
        diff_ci=(c.lo, c.hi),
        welch_t=sig.welch_t,
        welch_df=sig.welch_df,
        welch_p=sig.welch_p,
        significant=sig.significant,
        regression=regression,
        improvement=improvement,
        reason=f"{_reason_head(cur_peak, c, sig)}; {tail}",
        n_baseline=c.k,
        ref_load_ops_s=c.ref,
        welch_n_current=len(c.x),
        welch_n_baseline=len(c.y),
        mean_ms_current=sum(c.x) / len(c.x) if c.x else None,
        mean_ms_baseline=sum(c.y) / len(c.y) if c.y else None,
        separation_error=sig.sep_err,
        test=sig.test,
        inconclusive=inconclusive,
        tolerance=tolerance,
        confidence=confidence,
    )


def _nothing_to_compare(
    cur_peak: float | None,
    base_items: Sequence[Mapping[str, Any]],
    unconverged_txt: str | None,
    current_name: str,
    tolerance: float,
    confidence: float,
) -> RegressionVerdict:
    """The verdict when there is nothing to compare: no baseline yet, or no λ* tonight."""
    unconverged = unconverged_txt is not None
    if not base_items:
        return RegressionVerdict(
            None,
            cur_peak,
            reason=f"no baseline yet; {unconverged_txt}: NO VERDICT"
            if unconverged
            else "no baseline yet",
            inconclusive=unconverged,
            tolerance=tolerance,
            confidence=confidence,
        )
    peaks = [float(h["result"]["peak_rate"]) for h in base_items]
    base = sum(peaks) / len(peaks)
    return RegressionVerdict(
        base,
        None,
        reason=f"{current_name} produced no peak rate: nothing to compare "
        f"with the baseline of {base:.0f} ops/s",
        n_baseline=len(peaks),
        inconclusive=unconverged,
        tolerance=tolerance,
        confidence=confidence,
    )


@dataclass(frozen=True)
class _Change:
    """Tonight's λ* against the baseline: the mean λ* of its k ratings, the change d = λ* − base
    with its CI [lo, hi] at ci_level, and the mean response times near the reference load ref of
    tonight's (x) and the baseline's (y) valid trials: Welch's samples."""

    base: float
    k: int
    d: float
    lo: float
    hi: float
    ci_level: float
    ref: float
    x: list[float]
    y: list[float]

    @property
    def rel(self) -> float:
        return self.d / self.base if self.base > 0 else math.nan

    @property
    def use_welch(self) -> bool:
        return len(self.x) >= 2 and len(self.y) >= 2


def _change(
    current: Mapping[str, Any],
    base_items: Sequence[Mapping[str, Any]],
    cur_peak: float,
    confidence: float,
) -> _Change:
    peaks = [float(h["result"]["peak_rate"]) for h in base_items]
    base = sum(peaks) / len(peaks)
    base_trials = [t for h in base_items for t in (h.get("trials") or [])]
    ref = ref_load(base_trials, base)
    x = near_means_ms(current.get("trials") or [], ref)
    y = near_means_ms(base_trials, ref)
    alpha = 1.0 - confidence
    # the reported CI of d is the one that decides: level c beside Welch, 1 − α/2 in the fallback
    ci_level = confidence if (len(x) >= 2 and len(y) >= 2) else 1.0 - alpha / 2.0
    d, lo, hi = diff_ci(
        cur_peak,
        peak_se(current.get("result") or {}, confidence),
        peaks,
        [peak_se(h["result"], confidence) for h in base_items],
        ci_level,
    )
    return _Change(base, len(peaks), d, lo, hi, ci_level, ref, x, y)


@dataclass(frozen=True)
class _Significance:
    """What decided significance (`test`: welch | ci) and what it found."""

    test: str
    significant: bool
    sep_sig: bool  # CI separation decided it (the fallback only)
    sep_err: float
    welch_t: float | None
    welch_df: float | None
    welch_p: float | None
    cur_ci: tuple[float, float]
    base_bounds: list[tuple[float, float]]


def _significance(
    current: Mapping[str, Any],
    base_items: Sequence[Mapping[str, Any]],
    c: _Change,
    confidence: float,
) -> _Significance:
    """Welch's one-sided test when both sides have a sample near L_ref; else the fallback,
    Bonferroni over the CI of d at 1 − α/2 and CI separation (module docstring)."""
    alpha = 1.0 - confidence
    cur_ci = ci_bounds(current.get("result") or {})
    base_bounds = [ci_bounds(h["result"]) for h in base_items]
    sep_err = separation_error(
        rating_level(current, confidence), [rating_level(h, confidence) for h in base_items]
    )
    if c.use_welch:
        w_t, w_df, w_p = welch_one_sided(c.x, c.y, confidence)
        significant = bool(w_p < alpha if c.d < 0 else 1.0 - w_p < alpha)
        return _Significance(
            "welch", significant, False, sep_err, w_t, w_df, w_p, cur_ci, base_bounds
        )
    separated = (cur_ci[1] < min(b[0] for b in base_bounds)) or (
        cur_ci[0] > max(b[1] for b in base_bounds)
    )
    sep_sig = separated and sep_err <= alpha / 2.0 + 1e-12
    significant = bool(c.hi < 0 or c.lo > 0 or sep_sig)
    return _Significance("ci", significant, sep_sig, sep_err, None, None, None, cur_ci, base_bounds)


def _direction(
    significant: bool,
    unconverged: bool,
    rel: float,
    bracket: tuple[float, float],
    base: float,
    tolerance: float,
) -> tuple[bool, bool]:
    """(regression, improvement): significant and beyond the tolerance; for a rating that did not
    converge, its bracket, not peak_rate, says how far λ* moved (module docstring)."""
    b_lo, b_hi = bracket
    if unconverged:
        return (
            bool(significant and b_hi < (1.0 - tolerance) * base),
            bool(significant and b_lo > (1.0 + tolerance) * base),
        )
    return bool(rel < -tolerance and significant), bool(rel > tolerance and significant)


def _reason_head(cur_peak: float, c: _Change, sig: _Significance) -> str:
    """The verdict's opening words (regression_text.reason_head)."""
    ci_txt = ci_words(c.ci_level, c.lo, c.hi, sig.cur_ci if sig.sep_sig else None, sig.base_bounds)
    w_txt = welch_words(sig.welch_p, c.ref, c.x, c.y)
    return reason_head(cur_peak, c.base, c.k, c.rel, ci_txt, w_txt)
