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
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

from scipy import stats as _st

from workbench.stats.intervals import welch

__all__ = ["RegressionVerdict", "compare_to_history", "diff_ci", "peak_se", "reference_load",
           "separation_error", "verdict_label", "verdict_word", "BASELINE_RATINGS", "NEAR_LOAD_FRACTION"]

BASELINE_RATINGS = 5          # the baseline is the mean of the last ≤ 5 history ratings
NEAR_LOAD_FRACTION = 0.10     # Welch uses trials within 10 % of the reference load


@dataclass(frozen=True)
class RegressionVerdict:
    baseline_peak: float | None       # ops/s, mean λ* of the baseline ratings
    current_peak: float | None        # ops/s
    rel_change: float | None          # (current − baseline) / baseline
    diff: float | None                # current − baseline, ops/s
    diff_ci: tuple[float, float] | None
    welch_t: float | None
    welch_df: float | None
    welch_p: float | None             # one-sided, H1: tonight's mean response time is higher
    significant: bool
    regression: bool
    improvement: bool
    reason: str
    n_baseline: int = 0               # history ratings in the baseline
    ref_load_ops_s: float | None = None   # load of the Welch comparison
    welch_n_current: int = 0
    welch_n_baseline: int = 0
    mean_ms_current: float | None = None  # at ref_load_ops_s (Welch samples)
    mean_ms_baseline: float | None = None
    separation_error: float | None = None  # bound on the error of the CI-separation claim
    test: str = ""                        # what decided significance: welch | ci (fallback) | none
    tolerance: float = 0.10
    confidence: float = 0.95
    inconclusive: bool = False            # tonight's rating did not converge: no verdict

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (strict): NaN and ±∞ become None (an unbounded CI end is None)."""
        d = asdict(self)
        d["diff_ci"] = [_finite(v) for v in self.diff_ci] if self.diff_ci is not None else None
        return {k: (_finite(v) if isinstance(v, float) else v) for k, v in d.items()}


# ----------------------------------------------------------------------------- pieces

def _finite(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _z(confidence: float) -> float:
    return float(_st.norm.ppf((1.0 + confidence) / 2.0))


def peak_se(result: Mapping[str, Any], confidence: float = 0.95) -> float:
    """Standard error of λ* from its CI: se = (hi − lo)/2 / z_{(1+c)/2} (normal CI; ∞ if unknown)."""
    ci = result.get("peak_rate_ci") or (None, None)
    lo, hi = (_finite(v) for v in ci) if len(ci) == 2 else (None, None)
    if lo is None or hi is None or hi < lo:
        return math.inf
    return (hi - lo) / 2.0 / _z(confidence)


def diff_ci(current_peak: float, current_se: float, history_peaks: Sequence[float],
            history_se: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """(d, lo, hi) for d = current − mean(history), see the module docstring.

    Var(d) = se_c² + Σse_i²/k² + s_b²/k (k ≥ 2); q = t_{(1+c)/2; ν}, ν Welch–Satterthwaite
    (only the s_b²/k term is estimated, with k − 1 df) — Satterthwaite 1946 / Jain 1991 §13.4.
    """
    k = len(history_peaks)
    if k == 0 or len(history_se) != k:
        raise ValueError("diff_ci needs ≥ 1 history peak and one standard error per peak")
    base = sum(history_peaks) / k
    d = current_peak - base
    var_meas = current_se ** 2 + sum(s ** 2 for s in history_se) / k ** 2
    var_spread = 0.0
    if k >= 2:
        s_b2 = sum((p - base) ** 2 for p in history_peaks) / (k - 1)
        var_spread = s_b2 / k
    var = var_meas + var_spread
    if not math.isfinite(var):
        return d, -math.inf, math.inf
    if var_spread > 0:
        nu = var ** 2 / (var_spread ** 2 / (k - 1))
        q = float(_st.t.ppf((1.0 + confidence) / 2.0, nu))
    else:
        q = _z(confidence)
    h = q * math.sqrt(var)
    return d, d - h, d + h


def _near_means_ms(trials: Sequence[Mapping[str, Any]], load_ops_s: float) -> list[float]:
    """mean_ms of the valid trials whose offered load is within 10 % of load_ops_s."""
    out = []
    for t in trials:
        load, mean = _finite(t.get("load_ops_s")), _finite(t.get("mean_ms"))
        if t.get("valid", True) and load is not None and mean is not None \
                and abs(load - load_ops_s) <= NEAR_LOAD_FRACTION * load_ops_s:
            out.append(mean)
    return out


def _baseline(history: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The last ≤ BASELINE_RATINGS converged history ratings with a finite λ*."""
    usable = [h for h in history if _finite((h.get("result") or {}).get("peak_rate")) is not None
              and (h.get("result") or {}).get("converged") is not False]
    return usable[-BASELINE_RATINGS:]


def reference_load(history: Sequence[Mapping[str, Any]]) -> float | None:
    """L_ref: the baseline's measured load nearest its mean λ* (None without a baseline). The
    nightly DAG seeds tonight's rating here, so Welch's test has trials on both sides."""
    base_items = _baseline(history)
    if not base_items:
        return None
    base = sum(float(h["result"]["peak_rate"]) for h in base_items) / len(base_items)
    return _ref_load([t for h in base_items for t in (h.get("trials") or [])], base)


def separation_error(current_level: float, baseline_levels: Sequence[float]) -> float:
    """Bound on the error of "tonight's λ* CI is disjoint from the baseline's ⇒ ordered λ*": two
    one-sided misses, (1 − c_t)/2 + (1 − c_b)/2, with the widest baseline level c_b."""
    return (1.0 - current_level) / 2.0 + max((1.0 - c) / 2.0 for c in baseline_levels)


def _ref_load(trials: Sequence[Mapping[str, Any]], peak: float) -> float:
    """The baseline's measured (valid) load nearest its λ* (λ* itself when it has none)."""
    loads = [_finite(t.get("load_ops_s")) for t in trials if t.get("valid", True)]
    loads = [x for x in loads if x is not None and x > 0]
    return min(loads, key=lambda x: abs(x - peak)) if loads else peak


def _pct(x: float) -> str:
    return f"{100 * x:+.1f} %"


# ----------------------------------------------------------------------------- verdict

def _ci_bounds(result: Mapping[str, Any], key: str = "peak_rate_ci") -> tuple[float, float]:
    """(low, high) of a rating's λ* CI (or its `bracket`); an unknown bound is −∞ / +∞ (never separates)."""
    ci = result.get(key) or (None, None)
    lo, hi = (_finite(v) for v in ci) if len(ci) == 2 else (None, None)
    return (-math.inf if lo is None else lo, math.inf if hi is None else hi)


def compare_to_history(current: Mapping[str, Any], history: Sequence[Mapping[str, Any]], *,
                       tolerance: float = 0.10, confidence: float = 0.95,
                       current_name: str = "tonight's rating") -> RegressionVerdict:
    """Regression verdict for tonight's rating against the history (see the module docstring);
    `current_name` names the current rating in the reason."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance!r}")
    cur_res = current.get("result") or {}
    cur_peak = _finite(cur_res.get("peak_rate"))
    unconverged = cur_res.get("converged") is False
    common = dict(tolerance=tolerance, confidence=confidence)
    b_lo, b_hi = _ci_bounds(cur_res, "bracket")
    b_lo = max(b_lo, 0.0)
    unconverged_txt = (f"{current_name} did not converge ({cur_res.get('reason') or 'no reason given'}; "
                       f"bracket [{b_lo:.0f}, {b_hi:.0f}] ops/s)")
    base_items = _baseline(history)
    nothing = _nothing_to_compare(cur_peak, base_items, unconverged, unconverged_txt, current_name, common)
    if nothing is not None:
        return nothing
    peaks = [float(h["result"]["peak_rate"]) for h in base_items]
    base = sum(peaks) / len(peaks)
    k = len(peaks)
    base_trials = [t for h in base_items for t in (h.get("trials") or [])]
    ref = _ref_load(base_trials, base)
    x = _near_means_ms(current.get("trials") or [], ref)
    y = _near_means_ms(base_trials, ref)
    use_welch = len(x) >= 2 and len(y) >= 2
    alpha = 1.0 - confidence
    # the reported CI of d is the one that decides: level c beside Welch, 1 − α/2 in the fallback
    ci_level = confidence if use_welch else 1.0 - alpha / 2.0
    d, lo, hi = diff_ci(cur_peak, peak_se(cur_res, confidence), peaks,
                        [peak_se(h["result"], confidence) for h in base_items], ci_level)
    rel = d / base if base > 0 else math.nan
    sig = _significance(current, base_items, d, (lo, hi), x, y, use_welch, confidence)
    regression, improvement = _direction(sig.significant, unconverged, rel, (b_lo, b_hi), base, tolerance)
    inconclusive = unconverged and not (regression or improvement)

    head = _change_text(cur_peak, base, k, rel, ci_level, lo, hi, sig.sep_sig, sig.cur_ci, sig.base_bounds,
                        sig.welch_p, ref, x, y)
    tail = _verdict_text(regression, improvement, inconclusive, unconverged_txt if unconverged else None,
                         sig.significant, rel, base, tolerance, confidence, use_welch)
    return RegressionVerdict(
        baseline_peak=base, current_peak=cur_peak, rel_change=rel, diff=d, diff_ci=(lo, hi),
        welch_t=sig.welch_t, welch_df=sig.welch_df, welch_p=sig.welch_p, significant=sig.significant,
        regression=regression, improvement=improvement, reason=f"{head}; {tail}", n_baseline=k,
        ref_load_ops_s=ref, welch_n_current=len(x), welch_n_baseline=len(y),
        mean_ms_current=sum(x) / len(x) if x else None, mean_ms_baseline=sum(y) / len(y) if y else None,
        separation_error=sig.sep_err, test=sig.test, inconclusive=inconclusive, **common)


def _nothing_to_compare(cur_peak: float | None, base_items: Sequence[Mapping[str, Any]], unconverged: bool,
                        unconverged_txt: str, current_name: str,
                        common: Mapping[str, float]) -> RegressionVerdict | None:
    """The verdict when there is nothing to compare (no baseline yet, or no λ* tonight), else None."""
    if not base_items:
        return RegressionVerdict(None, cur_peak, None, None, None, None, None, None, False, False, False,
                                 f"no baseline yet; {unconverged_txt}: NO VERDICT" if unconverged else
                                 "no baseline yet", inconclusive=unconverged, **common)
    if cur_peak is None:
        peaks = [float(h["result"]["peak_rate"]) for h in base_items]
        base = sum(peaks) / len(peaks)
        return RegressionVerdict(base, None, None, None, None, None, None, None, False, False,
                                 False, f"{current_name} produced no peak rate: nothing to compare "
                                        f"with the baseline of {base:.0f} ops/s", n_baseline=len(peaks),
                                 inconclusive=unconverged, **common)
    return None


@dataclass(frozen=True)
class _Significance:
    """What decided significance (`test`: welch | ci) and what it found."""
    test: str
    significant: bool
    sep_sig: bool                              # CI separation decided it (the fallback only)
    sep_err: float
    welch_t: float | None
    welch_df: float | None
    welch_p: float | None
    cur_ci: tuple[float, float]
    base_bounds: list[tuple[float, float]]


def _significance(current: Mapping[str, Any], base_items: Sequence[Mapping[str, Any]], d: float,
                  d_ci: tuple[float, float], x: Sequence[float], y: Sequence[float], use_welch: bool,
                  confidence: float) -> _Significance:
    """Welch's one-sided test when both sides have a sample near L_ref; else the fallback, Bonferroni
    over the CI of d at 1 − α/2 and CI separation (module docstring)."""
    alpha = 1.0 - confidence
    lo, hi = d_ci
    w_t, w_df, w_p = _welch_one_sided(x, y, confidence) if use_welch else (None, None, None)
    cur_lo, cur_hi = _ci_bounds(current.get("result") or {})
    base_bounds = [_ci_bounds(h["result"]) for h in base_items]
    sep_err = separation_error(_level(current, confidence), [_level(h, confidence) for h in base_items])
    separated = (cur_hi < min(b[0] for b in base_bounds)) or (cur_lo > max(b[1] for b in base_bounds))
    if use_welch:
        test = "welch"
        significant = bool(w_p < alpha if d < 0 else 1.0 - w_p < alpha)
        sep_sig = False
    else:
        test = "ci"
        sep_sig = separated and sep_err <= alpha / 2.0 + 1e-12
        significant = bool(hi < 0 or lo > 0 or sep_sig)
    return _Significance(test, significant, sep_sig, sep_err, w_t, w_df, w_p, (cur_lo, cur_hi), base_bounds)


def _direction(significant: bool, unconverged: bool, rel: float, bracket: tuple[float, float], base: float,
               tolerance: float) -> tuple[bool, bool]:
    """(regression, improvement): significant and beyond the tolerance; for a rating that did not
    converge, its bracket, not peak_rate, says how far λ* moved (module docstring)."""
    b_lo, b_hi = bracket
    if unconverged:
        return (bool(significant and b_hi < (1.0 - tolerance) * base),
                bool(significant and b_lo > (1.0 + tolerance) * base))
    return bool(rel < -tolerance and significant), bool(rel > tolerance and significant)


def _change_text(cur_peak: float, base: float, k: int, rel: float, ci_level: float, lo: float, hi: float,
                 sep_sig: bool, cur_ci: tuple[float, float], base_bounds: Sequence[tuple[float, float]],
                 w_p: float | None, ref: float, x: Sequence[float], y: Sequence[float]) -> str:
    """The verdict's opening words: λ* against the baseline, the CI of the change, Welch's p."""
    cur_lo, cur_hi = cur_ci
    ci_txt = (f"{ci_level:.1%} CI of the change {lo:+.0f} to {hi:+.0f} ops/s"
              if math.isfinite(lo) and math.isfinite(hi) else
              "CI of the change unbounded: a λ* CI is open-ended")
    if sep_sig:
        ci_txt += (f"; λ* CI [{cur_lo:.0f}, {cur_hi:.0f}] disjoint from the baseline's "
                   f"[{min(b[0] for b in base_bounds):.0f}, {max(b[1] for b in base_bounds):.0f}]")
    w_txt = ""
    if w_p is not None:
        w_txt = (f"; mean response time near {ref:.0f} ops/s {sum(y) / len(y):.3g} → "
                 f"{sum(x) / len(x):.3g} ms ({len(y)} → {len(x)} trials), Welch one-sided p = {w_p:.3g}")
    head = (f"λ* {cur_peak:.0f} ops/s vs baseline {base:.0f} ops/s ({k} rating{'s' * (k > 1)}): "
            f"{_pct(rel)} ({ci_txt}{w_txt})")
    return head


def _welch_one_sided(x: Sequence[float], y: Sequence[float], confidence: float) -> tuple[float, float, float]:
    """(t, df, p) of Welch's test, one-sided: H1 mean of x (tonight) > mean of y (the baseline)."""
    w = welch(x, y, confidence)                  # Welch 1947: t = (x̄−ȳ)/√(sx²/nx + sy²/ny)
    if not math.isfinite(w.df):                  # both samples constant
        return w.t, w.df, (0.0 if w.diff > 0 else 1.0)
    return w.t, w.df, float(_st.t.sf(w.t, w.df))


def _verdict_text(regression: bool, improvement: bool, inconclusive: bool, unconverged_txt: str | None,
                  significant: bool, rel: float, base: float, tolerance: float, confidence: float,
                  use_welch: bool) -> str:
    """The verdict's closing words."""
    unconverged = unconverged_txt is not None
    if inconclusive:
        return (f"{unconverged_txt}: λ* is not known to have moved beyond the {tolerance:.0%} tolerance, "
                f"NO VERDICT.")
    elif regression and unconverged:
        return (f"{unconverged_txt}, but its top lies below the baseline less the {tolerance:.0%} tolerance "
                f"({(1.0 - tolerance) * base:.0f} ops/s) and the drop is statistically significant: REGRESSION.")
    elif improvement and unconverged:
        return (f"{unconverged_txt}, but its bottom lies above the baseline plus the {tolerance:.0%} tolerance "
                f"({(1.0 + tolerance) * base:.0f} ops/s) and the rise is statistically significant: improvement.")
    elif regression:
        return f"a drop beyond the {tolerance:.0%} tolerance and statistically significant: REGRESSION."
    elif improvement:
        return f"a rise beyond the {tolerance:.0%} tolerance and statistically significant: improvement."
    elif abs(rel) > tolerance:
        return (f"beyond the {tolerance:.0%} tolerance but not statistically significant at "
                f"{confidence:.0%} ({'Welch' if use_welch else 'λ* CIs'}): no regression flagged.")
    elif significant:
        return f"statistically significant but within the {tolerance:.0%} tolerance: no regression."
    return f"within the {tolerance:.0%} tolerance: no regression."


def _level(rating: Mapping[str, Any], default: float) -> float:
    """The confidence of a rating's λ* CI (`ci_level`), else `default`."""
    return float(rating.get("ci_level") or default)


def verdict_label(v: Mapping[str, Any]) -> str:
    """The baseline's name, with the goal when the baseline rates several."""
    return str(v.get("name")) + (f" at R_sat {v['r_sat_ms']:g} ms" if (v.get("n_goals") or 1) > 1 else "")


def verdict_word(v: Mapping[str, Any]) -> str:
    if v["regression"]:
        return "REGRESSION"
    return "LAB CHANGE" if v.get("lab_change") else "NO VERDICT" if v.get("inconclusive") else "ok"
