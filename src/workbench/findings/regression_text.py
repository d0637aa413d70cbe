"""The words of a nightly regression verdict (findings.regression): its reason, opening (λ* against
the baseline, the CI of the change, Welch's p) and closing (the verdict), and the name and word the
night's summary shows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


def _pct(x: float) -> str:
    return f"{100 * x:+.1f} %"


def ci_words(
    ci_level: float,
    lo: float,
    hi: float,
    separated_ci: tuple[float, float] | None,
    base_bounds: Sequence[tuple[float, float]],
) -> str:
    """The CI [lo, hi] of the change; separated_ci: tonight's λ* CI when CI separation decided (it
    lies clear of every baseline rating's)."""
    text = (
        f"{ci_level:.1%} CI of the change {lo:+.0f} to {hi:+.0f} ops/s"
        if math.isfinite(lo) and math.isfinite(hi)
        else "CI of the change unbounded: a λ* CI is open-ended"
    )
    if separated_ci is not None:
        cur_lo, cur_hi = separated_ci
        text += (
            f"; λ* CI [{cur_lo:.0f}, {cur_hi:.0f}] disjoint from the baseline's "
            f"[{min(b[0] for b in base_bounds):.0f}, {max(b[1] for b in base_bounds):.0f}]"
        )
    return text


def welch_words(w_p: float | None, ref: float, x: Sequence[float], y: Sequence[float]) -> str:
    """Welch's samples near the reference load and its p ('' when it did not decide)."""
    if w_p is None:
        return ""
    return (
        f"; mean response time near {ref:.0f} ops/s {sum(y) / len(y):.3g} → "
        f"{sum(x) / len(x):.3g} ms ({len(y)} → {len(x)} trials), Welch one-sided p = {w_p:.3g}"
    )


def reason_head(cur_peak: float, base: float, k: int, rel: float, ci_txt: str, w_txt: str) -> str:
    """The verdict's opening words: λ* against the baseline, the CI of the change (ci_words),
    Welch's p (welch_words)."""
    return (
        f"λ* {cur_peak:.0f} ops/s vs baseline {base:.0f} ops/s ({k} rating{'s' * (k > 1)}): "
        f"{_pct(rel)} ({ci_txt}{w_txt})"
    )


def reason_tail(
    regression: bool,
    improvement: bool,
    inconclusive: bool,
    unconverged_txt: str | None,
    significant: bool,
    rel: float,
    base: float,
    tolerance: float,
    confidence: float,
    use_welch: bool,
) -> str:
    """The verdict's closing words."""
    unconverged = unconverged_txt is not None
    if inconclusive:
        return (
            f"{unconverged_txt}: λ* is not known to have moved beyond the {tolerance:.0%} "
            "tolerance, NO VERDICT."
        )
    elif regression and unconverged:
        return (
            f"{unconverged_txt}, but its top lies below the baseline less the {tolerance:.0%} "
            f"tolerance ({(1.0 - tolerance) * base:.0f} ops/s) and the drop is statistically "
            "significant: REGRESSION."
        )
    elif improvement and unconverged:
        return (
            f"{unconverged_txt}, but its bottom lies above the baseline plus the {tolerance:.0%} "
            f"tolerance ({(1.0 + tolerance) * base:.0f} ops/s) and the rise is statistically "
            "significant: improvement."
        )
    elif regression:
        return (
            f"a drop beyond the {tolerance:.0%} tolerance and statistically significant: "
            "REGRESSION."
        )
    elif improvement:
        return (
            f"a rise beyond the {tolerance:.0%} tolerance and statistically significant: "
            "improvement."
        )
    elif abs(rel) > tolerance:
        return (
            f"beyond the {tolerance:.0%} tolerance but not statistically significant at "
            f"{confidence:.0%} ({'Welch' if use_welch else 'λ* CIs'}): no regression flagged."
        )
    elif significant:
        return f"statistically significant but within the {tolerance:.0%} tolerance: no regression."
    return f"within the {tolerance:.0%} tolerance: no regression."


def verdict_label(v: Mapping[str, Any]) -> str:
    """The baseline's name, with the goal when the baseline rates several."""
    return str(v.get("name")) + (
        f" at R_sat {v['r_sat_ms']:g} ms" if (v.get("n_goals") or 1) > 1 else ""
    )


def verdict_word(v: Mapping[str, Any]) -> str:
    if v["regression"]:
        return "REGRESSION"
    return "LAB CHANGE" if v.get("lab_change") else "NO VERDICT" if v.get("inconclusive") else "ok"
