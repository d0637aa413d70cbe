"""Matplotlib figures for the rating report (the latency CDF: histograms; the nightly λ* history:
history_plot), and the figure plumbing the report's figures share; a figure function returns PNG
bytes.

Figures are built on ``matplotlib.figure.Figure`` with the Agg canvas (no pyplot, no window, no
global state), so they are safe inside Airflow workers and threads. Inputs are the plain dicts of
/tmp/wb5/CONTRACT.md: trial records (``n``, ``load_ops_s``, ``runlength_s``, ``mean_ms``, ``valid``,
``raw`` ...), the search result (``PeakResult.to_dict()``) and the rating spec.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # never a GUI backend, even if pyplot gets imported elsewhere
import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from workbench.controller.result import goal_results  # noqa: E402
from workbench.controller.trial import record_outcome  # noqa: E402
from workbench.findings.numbers import finite as _finite  # noqa: E402
from workbench.stats.intervals import mean_ci, region  # noqa: E402

__all__ = ["rating_spec", "load_summary", "latency_vs_load_png", "search_trace_png"]

_DPI = 100
_SIZE = (8.0, 5.0)  # inches → 800×500 px at _DPI
_VALID, _INVALID, _ACCENT = "#1f77b4", "#d62728", "#2ca02c"
_GOAL_COLORS = [
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
]


# --------------------------------------------------------------------------- helpers


def _figure(size: tuple[float, float] = _SIZE) -> Figure:
    fig = Figure(figsize=size, dpi=_DPI)
    FigureCanvasAgg(fig)
    return fig


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI)
    return buf.getvalue()


def rating_spec(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """The RatingSpec dict: ``spec["spec"]`` of a rating's spec.json, or the dict itself."""
    spec = spec or {}
    inner = spec.get("spec")
    return dict(inner) if isinstance(inner, Mapping) else dict(spec)


def _ordered(trials: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    ts = list(trials)
    return sorted(ts, key=lambda t: t.get("n", 0)) if all("n" in t for t in ts) else ts


def load_summary(
    trials: Sequence[Mapping[str, Any]], confidence: float = 0.95
) -> list[dict[str, Any]]:
    """One row per offered load (ascending): load_ops_s, n_valid, n_invalid, n_harness, mean_ms,
    ci_lo, ci_hi. n_invalid counts the server's invalid trials; harness failures (no sample of the
    server) only n_harness.

    CI of the mean response time over the valid trials at that load, [CC] Eq. 1
    (workbench.stats.intervals.mean_ci), weighted by runlength when runlengths differ, as the search
    does.
    """
    groups: dict[float, list[Mapping[str, Any]]] = {}
    for t in trials:
        if _finite(t.get("load_ops_s")):
            groups.setdefault(round(float(t["load_ops_s"]), 6), []).append(t)
    rows = []
    for load in sorted(groups):
        ts = groups[load]
        valid = [t for t in ts if t.get("valid") and _finite(t.get("mean_ms"))]
        means = [float(t["mean_ms"]) for t in valid]
        rls = [float(t.get("runlength_s") or 0.0) for t in valid]
        w = rls if len(set(rls)) > 1 and all(r > 0 for r in rls) else None
        ci = mean_ci(means, confidence, weights=w)
        n_harness = sum(1 for t in ts if record_outcome(t) == "harness")
        rows.append(
            {
                "load_ops_s": load,
                "n_valid": len(valid),
                "n_invalid": len(ts) - len(valid) - n_harness,
                "n_harness": n_harness,
                "mean_ms": ci.mean,
                "ci_lo": ci.low,
                "ci_hi": ci.high,
            }
        )
    return rows


def _message(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([]), ax.set_yticks([])


# --------------------------------------------------------------------------- rating figures


def latency_vs_load_png(
    trials: Sequence[Mapping[str, Any]],
    result: Mapping[str, Any],
    spec: Mapping[str, Any] | None = None,
) -> bytes:
    """Mean response time per offered load with its CI, each trial, R_sat and its region, λ* ± CI
    (several goals: R_sat, λ* and its CI per goal, each in its own colour)."""
    rs = rating_spec(spec)
    conf = float(rs.get("confidence") or 0.95)
    r_sat = result.get("r_sat_ms", rs.get("r_sat_ms"))
    goals = goal_results(result)
    ys = [
        float(t["mean_ms"]) for t in trials if _finite(t.get("mean_ms")) and float(t["mean_ms"]) > 0
    ]
    ys += [
        float(v)
        for v in ([g.get("r_sat_ms") for g in goals] if len(goals) > 1 else [r_sat])
        if _finite(v)
    ]
    log_y = bool(ys) and max(ys) / min(ys) > 30.0
    floor = min(ys) / 2.0 if ys else 1e-3
    fig = _figure()
    ax = fig.add_subplot()
    _trial_points(ax, trials, floor)
    _mean_curve(ax, load_summary(trials, conf), conf, floor if log_y else None)
    if len(goals) > 1:
        _goal_lines(ax, goals)
    else:
        _goal_line(ax, result, r_sat, rs.get("width"), floor if log_y else None)
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("offered load (ops/s)")
    ax.set_ylabel("mean response time (ms)")
    ax.set_title("Response time vs offered load")
    ax.grid(True, alpha=0.3)
    if not trials:
        _message(ax, "no trials")
    else:
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return _png(fig)


def _trial_points(ax: Any, trials: Sequence[Mapping[str, Any]], floor: float) -> None:
    """Each trial's mean: valid ones as dots, the server's invalid ones as crosses (at least
    `floor`, so a log scale shows them)."""
    valid = [t for t in trials if t.get("valid") and _finite(t.get("load_ops_s"), t.get("mean_ms"))]
    bad = [
        t
        for t in trials
        if record_outcome(t) == "invalid" and _finite(t.get("load_ops_s"), t.get("mean_ms"))
    ]
    if valid:
        ax.scatter(
            [t["load_ops_s"] for t in valid],
            [t["mean_ms"] for t in valid],
            s=14,
            color=_VALID,
            alpha=0.35,
            label="trial (valid)",
            zorder=2,
        )
    if bad:
        ax.scatter(
            [t["load_ops_s"] for t in bad],
            [max(float(t["mean_ms"]), floor) for t in bad],
            s=40,
            marker="x",
            color=_INVALID,
            label="trial (invalid)",
            zorder=3,
        )


def _mean_curve(
    ax: Any, rows: Sequence[Mapping[str, Any]], conf: float, log_floor: float | None
) -> None:
    """The per-load mean with its CI (load_summary's rows); on a log scale the CI's lower end is
    kept at log_floor at least."""
    pts = [r for r in rows if _finite(r["mean_ms"])]
    if not pts:
        return
    x = np.array([r["load_ops_s"] for r in pts])
    m = np.array([r["mean_ms"] for r in pts])
    lo = np.array([r["ci_lo"] if _finite(r["ci_lo"]) else r["mean_ms"] for r in pts])
    hi = np.array([r["ci_hi"] if _finite(r["ci_hi"]) else r["mean_ms"] for r in pts])
    if log_floor is not None:
        lo = np.maximum(lo, log_floor)
    ax.errorbar(
        x,
        m,
        yerr=[m - lo, hi - m],
        fmt="o-",
        color=_VALID,
        capsize=4,
        ms=5,
        label=f"mean, {conf:.0%} CI",
        zorder=4,
    )


def _goal_line(
    ax: Any, result: Mapping[str, Any], r_sat: Any, width: Any, floor: float | None
) -> None:
    """One goal: R_sat and its peak-rate region, λ* and its CI."""
    if _finite(r_sat):
        ax.axhline(float(r_sat), color="k", lw=1, ls="--", label=f"R_sat = {float(r_sat):g} ms")
        if _finite(width):
            lo_r, hi_r = region(float(r_sat), float(width))
            ax.axhspan(
                max(lo_r, floor) if floor is not None else lo_r,
                hi_r,
                color="0.5",
                alpha=0.15,
                label=f"peak-rate region ±{float(width):.0%}",
            )
    peak = result.get("peak_rate")
    if _finite(peak):
        ax.axvline(float(peak), color=_ACCENT, lw=1.5, label=f"λ* = {float(peak):.4g} ops/s")
        ci = result.get("peak_rate_ci") or []
        if len(ci) == 2 and _finite(*ci) and ci[1] > ci[0]:
            ax.axvspan(float(ci[0]), float(ci[1]), color=_ACCENT, alpha=0.12, label="λ* CI")


def _goal_lines(ax: Any, goals: Sequence[Mapping[str, Any]]) -> None:
    """Several goals of one search: per goal, in its own colour, R_sat (dashed), λ* and its CI."""
    for g, color in zip(goals, _GOAL_COLORS * len(goals)):
        r, peak, ci = g.get("r_sat_ms"), g.get("peak_rate"), g.get("peak_rate_ci") or []
        if _finite(r):
            ax.axhline(float(r), color=color, lw=1, ls="--")
        if _finite(r) and _finite(peak):
            ax.axvline(
                float(peak),
                color=color,
                lw=1.5,
                label=f"R_sat {float(r):g} ms: λ* = {float(peak):.4g} ops/s",
            )
            if len(ci) == 2 and _finite(*ci) and ci[1] > ci[0]:
                ax.axvspan(float(ci[0]), float(ci[1]), color=color, alpha=0.08)


def search_trace_png(trials: Sequence[Mapping[str, Any]], result: Mapping[str, Any]) -> bytes:
    """Load factor ρ = λ/λ* of each trial against cumulative runlength (seed 000 Figs. 3 and 7)."""
    ts = [t for t in _ordered(trials) if _finite(t.get("load_ops_s"))]
    peak = result.get("peak_rate")
    scale = float(peak) if _finite(peak) and float(peak) > 0 else None
    cum = np.cumsum([float(t.get("runlength_s") or 0.0) for t in ts]) if ts else np.zeros(0)
    y = np.array([float(t["load_ops_s"]) for t in ts]) / (scale or 1.0)
    ok = np.array([bool(t.get("valid")) for t in ts], dtype=bool)
    harness = np.array([record_outcome(t) == "harness" for t in ts], dtype=bool)
    fig = _figure()
    ax = fig.add_subplot()
    if ts:
        ax.plot(cum, y, color="0.6", lw=1, drawstyle="steps-pre", zorder=1)
        ax.scatter(cum[ok], y[ok], color=_VALID, s=22, label="trial (valid)", zorder=3)
        if (~ok & ~harness).any():
            ax.scatter(
                cum[~ok & ~harness],
                y[~ok & ~harness],
                color=_INVALID,
                marker="x",
                s=40,
                label="trial (invalid)",
                zorder=3,
            )
        if harness.any():
            ax.scatter(
                cum[harness],
                y[harness],
                facecolors="none",
                edgecolors="0.4",
                marker="s",
                s=40,
                label="harness failure (no sample)",
                zorder=3,
            )
        for c, yy, t in zip(cum, y, ts):
            ax.annotate(
                str(t.get("n", "")),
                (c, yy),
                fontsize=6,
                xytext=(2, 3),
                textcoords="offset points",
                color="0.35",
            )
        if scale:
            ax.axhline(1.0, color=_ACCENT, lw=1, ls="--", label="load factor 1 (λ*)")
        ax.legend(fontsize=8)
    else:
        _message(ax, "no trials")
    ax.set_xlabel("cumulative time (s of runlength)")
    ax.set_ylabel("load factor ρ = λ / λ*" if scale else "offered load (ops/s)")
    ax.set_title("Search trace")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return _png(fig)
