"""Matplotlib figures for the rating, surface and nightly reports; every function returns PNG bytes.

Figures are built on ``matplotlib.figure.Figure`` with the Agg canvas (no pyplot, no window, no
global state), so they are safe inside Airflow workers and threads. Inputs are the plain dicts of
/tmp/wb5/CONTRACT.md: trial records (``n``, ``load_ops_s``, ``runlength_s``, ``mean_ms``, ``valid``,
``raw`` ...), the search result (``PeakResult.to_dict()``) and the rating spec.
HDR histograms from fstress hold latencies in microseconds (loadgen/internal/results/results.go).
"""
from __future__ import annotations

import io
import math
from datetime import date, datetime
from typing import Any, Iterable, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # never a GUI backend, even if pyplot gets imported elsewhere
import numpy as np  # noqa: E402
from hdrh.histogram import HdrHistogram  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from workbench.controller.result import goal_results  # noqa: E402
from workbench.controller.trial import record_outcome  # noqa: E402
from workbench.stats.intervals import mean_ci, region  # noqa: E402

__all__ = [
    "HDR_UNIT_MS", "rating_spec", "load_summary", "merge_histograms", "latency_cdf", "cdf_trials",
    "latency_vs_load_png", "search_trace_png", "latency_cdf_png", "history_png",
]

HDR_UNIT_MS = 1e-3            # fstress HDR histogram values are microseconds
_DPI = 100
_SIZE = (8.0, 5.0)            # inches → 800×500 px at _DPI
_VALID, _INVALID, _ACCENT = "#1f77b4", "#d62728", "#2ca02c"
_GOAL_COLORS = ["#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]


# --------------------------------------------------------------------------- helpers

def _figure(size: tuple[float, float] = _SIZE) -> Figure:
    fig = Figure(figsize=size, dpi=_DPI)
    FigureCanvasAgg(fig)
    return fig


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI)
    return buf.getvalue()


def _finite(*xs: Any) -> bool:
    try:
        return all(x is not None and math.isfinite(float(x)) for x in xs)
    except (TypeError, ValueError):
        return False


def rating_spec(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """The RatingSpec dict: ``spec["spec"]`` of a rating's spec.json, or the dict itself."""
    spec = spec or {}
    inner = spec.get("spec")
    return dict(inner) if isinstance(inner, Mapping) else dict(spec)


def _ordered(trials: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    ts = list(trials)
    return sorted(ts, key=lambda t: t.get("n", 0)) if all("n" in t for t in ts) else ts


def load_summary(trials: Sequence[Mapping[str, Any]], confidence: float = 0.95) -> list[dict[str, Any]]:
    """One row per offered load (ascending): load_ops_s, n_valid, n_invalid, n_harness, mean_ms, ci_lo,
    ci_hi. n_invalid counts the server's invalid trials; harness failures (no sample of the server)
    only n_harness.

    CI of the mean response time over the valid trials at that load, [CC] Eq. 1
    (workbench.stats.intervals.mean_ci), weighted by runlength when runlengths differ, as the search does.
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
        rows.append({"load_ops_s": load, "n_valid": len(valid), "n_invalid": len(ts) - len(valid) - n_harness,
                     "n_harness": n_harness, "mean_ms": ci.mean, "ci_lo": ci.low, "ci_hi": ci.high})
    return rows


def merge_histograms(encoded: Iterable[str | HdrHistogram]) -> HdrHistogram | None:
    """Sum of several HDR histograms (base64 strings as in fstress JSON, or histogram objects)."""
    merged = None
    for h in encoded:
        if not h:
            continue
        h = HdrHistogram.decode(h) if isinstance(h, (str, bytes)) else h
        if merged is None:   # a fresh histogram with the same range: never mutate the inputs
            merged = HdrHistogram(h.lowest_trackable_value, h.highest_trackable_value, h.significant_figures)
        merged.add(h)
    return merged


def latency_cdf(encoded: Iterable[str | HdrHistogram], unit_ms: float = HDR_UNIT_MS
                ) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF of the merged histograms: (latency_ms, fraction ≤ latency), both ascending.

    F(v_k) = Σ_{j≤k} count_j / N over the recorded buckets (value = the bucket's highest
    equivalent value); F ends at exactly 1. Empty arrays when nothing was recorded.
    """
    h = merge_histograms(encoded)
    if h is None or h.get_total_count() == 0:
        return np.zeros(0), np.zeros(0)
    vals, counts = [], []
    for it in h.get_recorded_iterator():     # the iterator reuses one object: copy fields now
        vals.append(float(it.value_iterated_to))
        counts.append(int(it.count_added_in_this_iter_step))
    c = np.cumsum(np.asarray(counts, dtype=float))
    return np.asarray(vals) * unit_ms, c / c[-1]


def _hist(t: Mapping[str, Any]) -> str | None:
    raw = t.get("raw")
    return raw.get("histogram") if isinstance(raw, Mapping) else None


def cdf_trials(trials: Sequence[Mapping[str, Any]], peak_rate: float | None
               ) -> list[tuple[float, list[Mapping[str, Any]]]]:
    """Groups to draw: [(load, valid trials with a histogram)] for the load nearest λ*, then the
    lowest load when it differs (the light-load contrast curve)."""
    by_load: dict[float, list[Mapping[str, Any]]] = {}
    for t in trials:
        if t.get("valid") and _hist(t) and _finite(t.get("load_ops_s")):
            by_load.setdefault(float(t["load_ops_s"]), []).append(t)
    if not by_load:
        return []
    loads = sorted(by_load)
    near = min(loads, key=lambda x: abs(x - float(peak_rate))) if _finite(peak_rate) else loads[-1]
    out = [(near, by_load[near])]
    if loads[0] != near:
        out.append((loads[0], by_load[loads[0]]))
    return out


def _message(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([]), ax.set_yticks([])


# --------------------------------------------------------------------------- rating figures

def latency_vs_load_png(trials: Sequence[Mapping[str, Any]], result: Mapping[str, Any],
                        spec: Mapping[str, Any] | None = None) -> bytes:
    """Mean response time per offered load with its CI, each trial, R_sat and its region, λ* ± CI
    (several goals: R_sat, λ* and its CI per goal, each in its own colour)."""
    rs = rating_spec(spec)
    conf = float(rs.get("confidence") or 0.95)
    r_sat = result.get("r_sat_ms", rs.get("r_sat_ms"))
    width = rs.get("width")
    rows = load_summary(trials, conf)
    fig = _figure()
    ax = fig.add_subplot()
    ys = [float(t["mean_ms"]) for t in trials if _finite(t.get("mean_ms")) and float(t["mean_ms"]) > 0]
    goals = goal_results(result)
    ys += [float(v) for v in ([g.get("r_sat_ms") for g in goals] if len(goals) > 1 else [r_sat]) if _finite(v)]
    log_y = bool(ys) and max(ys) / min(ys) > 30.0
    floor = min(ys) / 2.0 if ys else 1e-3
    valid = [t for t in trials if t.get("valid") and _finite(t.get("load_ops_s"), t.get("mean_ms"))]
    bad = [t for t in trials if record_outcome(t) == "invalid" and _finite(t.get("load_ops_s"), t.get("mean_ms"))]
    if valid:
        ax.scatter([t["load_ops_s"] for t in valid], [t["mean_ms"] for t in valid], s=14,
                   color=_VALID, alpha=0.35, label="trial (valid)", zorder=2)
    if bad:
        ax.scatter([t["load_ops_s"] for t in bad], [max(float(t["mean_ms"]), floor) for t in bad],
                   s=40, marker="x", color=_INVALID, label="trial (invalid)", zorder=3)
    pts = [r for r in rows if _finite(r["mean_ms"])]
    if pts:
        x = np.array([r["load_ops_s"] for r in pts])
        m = np.array([r["mean_ms"] for r in pts])
        lo = np.array([r["ci_lo"] if _finite(r["ci_lo"]) else r["mean_ms"] for r in pts])
        hi = np.array([r["ci_hi"] if _finite(r["ci_hi"]) else r["mean_ms"] for r in pts])
        if log_y:
            lo = np.maximum(lo, floor)
        ax.errorbar(x, m, yerr=[m - lo, hi - m], fmt="o-", color=_VALID, capsize=4, ms=5,
                    label=f"mean, {conf:.0%} CI", zorder=4)
    if len(goals) > 1:
        _goal_lines(ax, goals)
    else:
        _goal_line(ax, result, r_sat, width, floor if log_y else None)
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


def _goal_line(ax: Any, result: Mapping[str, Any], r_sat: Any, width: Any, floor: float | None) -> None:
    """One goal: R_sat and its peak-rate region, λ* and its CI."""
    if _finite(r_sat):
        ax.axhline(float(r_sat), color="k", lw=1, ls="--", label=f"R_sat = {float(r_sat):g} ms")
        if _finite(width):
            lo_r, hi_r = region(float(r_sat), float(width))
            ax.axhspan(max(lo_r, floor) if floor is not None else lo_r, hi_r, color="0.5", alpha=0.15,
                       label=f"peak-rate region ±{float(width):.0%}")
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
        if _finite(r, peak):
            ax.axvline(float(peak), color=color, lw=1.5, label=f"R_sat {float(r):g} ms: λ* = {float(peak):.4g} ops/s")
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
            ax.scatter(cum[~ok & ~harness], y[~ok & ~harness], color=_INVALID, marker="x", s=40,
                       label="trial (invalid)", zorder=3)
        if harness.any():
            ax.scatter(cum[harness], y[harness], facecolors="none", edgecolors="0.4", marker="s", s=40,
                       label="harness failure (no sample)", zorder=3)
        for c, yy, t in zip(cum, y, ts):
            ax.annotate(str(t.get("n", "")), (c, yy), fontsize=6, xytext=(2, 3),
                        textcoords="offset points", color="0.35")
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


def latency_cdf_png(trials: Sequence[Mapping[str, Any]], result: Mapping[str, Any]) -> bytes:
    """CDF of latency at the load nearest λ* (merged over its valid trials) and at the lowest load."""
    fig = _figure()
    ax = fig.add_subplot()
    groups = cdf_trials(trials, result.get("peak_rate"))
    drawn = False
    for i, (load, ts) in enumerate(groups):
        x, f = latency_cdf(_hist(t) for t in ts)
        if not x.size:
            continue
        kw = {"color": _VALID, "lw": 2} if i == 0 else {"color": "0.6", "lw": 1.2, "alpha": 0.8}
        ax.step(x, f, where="post", label=f"{load:g} ops/s ({len(ts)} trial{'s' * (len(ts) > 1)})", **kw)
        drawn = True
    if drawn:
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=8, loc="lower right")
    else:
        _message(ax, "no latency histogram recorded")
    ax.set_xlabel("latency (ms, log scale)")
    ax.set_ylabel("fraction of operations ≤ latency")
    ax.set_title("Latency CDF")
    ax.grid(True, alpha=0.3, which="both")
    fig.tight_layout()
    return _png(fig)


# --------------------------------------------------------------------------- history

def _label(v: Any) -> str:
    if isinstance(v, (datetime, date)):
        return v.strftime("%Y-%m-%d")
    return str(v)[:16]


def _ci(row: Mapping[str, Any]) -> tuple[float, float]:
    ci = row.get("peak_rate_ci")
    if isinstance(ci, (list, tuple)) and len(ci) == 2:       # an open end (None) draws no bar
        return tuple(float(x) if x is not None else math.nan for x in ci)
    return float(row.get("ci_lo", math.nan)), float(row.get("ci_hi", math.nan))


def _change_marks(ax: Any, rows: Sequence[Mapping[str, Any]], change: Mapping[str, Any] | None) -> None:
    """A dashed line before the first night of the new level, the levels before and after it as steps."""
    if not change:
        return
    dates = [str(r.get("date")) for r in rows]
    if change.get("first_night") not in dates:
        return
    i = dates.index(change["first_night"])
    ax.axvline(i - 0.5, color=_INVALID, ls="--", lw=1, label=f"new level from {change['first_night']}")
    ax.hlines([change.get("before"), change.get("after")], [-0.5, i - 0.5], [i - 0.5, len(rows) - 0.5],
              colors=[_VALID, _INVALID], lw=1, alpha=0.7)
    ax.legend(loc="best", fontsize=8)


def history_png(history_rows: Sequence[Mapping[str, Any]], current: Mapping[str, Any] | None = None,
                title: str = "λ* history", change: Mapping[str, Any] | None = None) -> bytes:
    """λ* per night (rows: ``date``, ``peak_rate`` and ``peak_rate_ci`` or ``ci_lo``/``ci_hi``),
    with CI bars; ``current`` (same keys) is drawn last and highlighted; ``change`` (``first_night``,
    ``before``, ``after``: a change point) is marked."""
    rows = list(history_rows) + ([current] if current else [])
    fig = _figure()
    ax = fig.add_subplot()
    if not rows:
        _message(ax, "no history")
    for i, r in enumerate(rows):
        p = float(r.get("peak_rate", math.nan))
        if not _finite(p):
            continue
        lo, hi = _ci(r)
        err = [[p - lo], [hi - p]] if _finite(lo, hi) else None
        is_cur = current is not None and i == len(rows) - 1
        ax.errorbar([i], [p], yerr=err, fmt="o", capsize=4,
                    color=(_INVALID if r.get("regression") else _ACCENT) if is_cur else _VALID,
                    ms=8 if is_cur else 5)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([_label(r.get("date", i)) for i, r in enumerate(rows)], rotation=30, ha="right",
                       fontsize=8)
    _change_marks(ax, rows, change)
    ax.set_ylabel("λ* (ops/s)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return _png(fig)
