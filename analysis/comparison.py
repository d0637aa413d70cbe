"""Two ratings side by side (`workbench compare A B`): both latency-vs-load curves on one plot and a
page with the verdict of B against A (findings.regression with A as the one-rating baseline)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from analysis import plots as _plots
from analysis.html_page import e, fmt_dict, kv, num, page, pair, plots_html, status, table

_COLOURS = {"A": "#1f77b4", "B": "#d62728"}


def _curve(ax: Any, name: str, rating: Mapping[str, Any], conf: float) -> None:
    """One rating: per-load mean with its CI, joined in load order, and its λ* with CI."""
    colour = _COLOURS[name]
    rows = [r for r in _plots.load_summary(rating["trials"], conf) if _plots._finite(r["mean_ms"])]
    if rows:
        x = np.array([r["load_ops_s"] for r in rows])
        m = np.array([r["mean_ms"] for r in rows])
        lo = np.array([r["ci_lo"] if _plots._finite(r["ci_lo"]) else r["mean_ms"] for r in rows])
        hi = np.array([r["ci_hi"] if _plots._finite(r["ci_hi"]) else r["mean_ms"] for r in rows])
        ax.errorbar(
            x,
            m,
            yerr=[np.maximum(m - lo, 0), hi - m],
            fmt="o-",
            color=colour,
            capsize=3,
            ms=4,
            label=f"{name}: {rating['rating_id']}",
        )
    peak = rating["result"].get("peak_rate")
    if _plots._finite(peak):
        ax.axvline(
            float(peak), color=colour, lw=1.2, ls=":", label=f"{name}: λ* = {float(peak):.4g} ops/s"
        )
        ci = rating["result"].get("peak_rate_ci") or []
        if len(ci) == 2 and _plots._finite(*ci) and ci[1] > ci[0]:
            ax.axvspan(float(ci[0]), float(ci[1]), color=colour, alpha=0.10)


def compare_png(a: Mapping[str, Any], b: Mapping[str, Any], confidence: float = 0.95) -> bytes:
    """Mean response time against offered load for A and B on one plot, with R_sat and each λ*."""
    fig = _plots._figure()
    ax = fig.add_subplot()
    for name, rating in (("A", a), ("B", b)):
        _curve(ax, name, rating, confidence)
    r_sat = a["result"].get("r_sat_ms")
    if _plots._finite(r_sat):
        ax.axhline(float(r_sat), color="k", lw=1, ls="--", label=f"R_sat = {float(r_sat):g} ms")
    means = [
        float(t["mean_ms"])
        for r in (a, b)
        for t in r["trials"]
        if t.get("valid") and _plots._finite(t.get("mean_ms")) and float(t["mean_ms"]) > 0
    ]
    if means and max(means) / min(means) > 30.0:
        ax.set_yscale("log")
    ax.set_xlabel("offered load (ops/s)")
    ax.set_ylabel("mean response time (ms)")
    ax.set_title("A and B: response time vs offered load")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return _plots._png(fig)


RATING_HEADERS = (
    "",
    "rating",
    "workload",
    "factors",
    "λ* ops/s",
    "λ* CI",
    "converged",
    "trials",
    "report",
)
TESTS = {
    "welch": "Welch's test on the trials near the reference load",
    "ci": "the λ* CIs (no common load with ≥ 2 trials each)",
}


def comparison_html(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    verdict: Mapping[str, Any],
    plots: Mapping[str, bytes],
) -> str:
    """The comparison page: the verdict in words, the change with its CI and test, both ratings."""
    flag = True if verdict.get("regression") else (None if verdict.get("inconclusive") else False)
    word = (
        "improvement"
        if verdict.get("improvement")
        else "no significant change beyond the tolerance"
    )
    rows = [
        [
            name,
            r["rating_id"],
            r["result"].get("workload") or "",
            fmt_dict(r["result"].get("factors")),
            num(r["result"].get("peak_rate")),
            pair(r["result"].get("peak_rate_ci")),
            "yes" if r["result"].get("converged") else "NO",
            r["result"].get("n_trials"),
            e(r.get("report_url") or ""),
        ]
        for name, r in (("A", a), ("B", b))
    ]
    body = "".join(
        [
            "<h1>Comparison: B against A</h1>",
            f'<p class="headline">{status(flag, "REGRESSION", word)} &nbsp; λ* '
            f"{num(verdict.get('baseline_peak'))} → "
            f"{num(verdict.get('current_peak'))} ops/s</p>",
            f"<p>{e(verdict.get('reason'))}</p>",
            kv(_verdict_pairs(verdict)),
            "<h2>Ratings</h2>",
            table(RATING_HEADERS, rows, left=(0, 1, 2, 3, 8)),
            "<h2>Plots</h2>",
            plots_html(plots),
        ]
    )
    return page(f"Comparison {a['rating_id']} → {b['rating_id']}", body)


def _verdict_pairs(verdict: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The change, its CI, the test that decided and its figures, the tolerance and confidence."""
    change = "—"
    if _plots._finite(verdict.get("rel_change")):
        change = f"{num(verdict.get('diff'))} ops/s ({num(100 * verdict['rel_change'], '+.1f')} %)"
    return [
        ("change", change),
        ("CI of the change", pair(verdict.get("diff_ci"))),
        ("decided by", TESTS.get(verdict.get("test") or "", "—")),
        ("reference load", f"{num(verdict.get('ref_load_ops_s'))} ops/s"),
        (
            "Welch t / df / one-sided p",
            f"{num(verdict.get('welch_t'), '.3g')} / {num(verdict.get('welch_df'), '.3g')} / "
            f"{num(verdict.get('welch_p'), '.3g')}",
        ),
        (
            "tolerance / confidence",
            f"{num(verdict.get('tolerance'))} / {num(verdict.get('confidence'))}",
        ),
    ]
