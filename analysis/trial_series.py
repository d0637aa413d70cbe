"""The per-interval figure of a rating: what happened inside the trials at the load nearest λ*.

fstress's per-interval series (measure.timeseries' compact form, stored in each trial's
raw["timeseries"]) drawn trial by trial, so a trend, a stall or a long warm-up inside a trial — what
stats.steady judges — can be seen. Built like analysis.plots' figures (Agg canvas, 800×500 px).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analysis.plots import (
    _INVALID,
    _VALID,
    _figure,
    _finite,
    _message,
    _ordered,
    _png,
    rating_spec,
)

__all__ = ["interval_series", "intervals_png"]


def interval_series(
    trials: Sequence[Mapping[str, Any]], peak_rate: float | None
) -> tuple[float | None, list[tuple[Mapping[str, Any], list[float], list[float]]]]:
    """(load nearest λ* among the trials with a per-interval series, [(trial, t_s, mean_ms)]) — the
    trials of that load with their interval means (measure.timeseries' compact form; warm-up
    intervals, t_s < 0, included; intervals without replies left out)."""
    with_series = [
        t
        for t in trials
        if isinstance((t.get("raw") or {}).get("timeseries"), Mapping)
        and _finite(t.get("load_ops_s"))
    ]
    if not with_series:
        return None, []
    loads = sorted({float(t["load_ops_s"]) for t in with_series})
    near = min(loads, key=lambda x: abs(x - float(peak_rate))) if _finite(peak_rate) else loads[-1]
    out = []
    for t in _ordered(t for t in with_series if float(t["load_ops_s"]) == near):
        ts = t["raw"]["timeseries"]
        pts = [
            (float(x), float(m))
            for x, m in zip(ts.get("t_s") or [], ts.get("mean_ms") or [], strict=False)
            if _finite(x, m)
        ]
        out.append((t, [x for x, _ in pts], [m for _, m in pts]))
    return near, out


def intervals_png(
    trials: Sequence[Mapping[str, Any]],
    result: Mapping[str, Any],
    spec: Mapping[str, Any] | None = None,
) -> bytes:
    """Per-interval mean latency of each trial at the load nearest λ* (fstress --interval): a
    trend, a stall or a warm-up inside a trial shows here; invalid and excluded trials dashed."""
    fig = _figure()
    ax = fig.add_subplot()
    near, series = interval_series(trials, result.get("peak_rate"))
    for t, x, m in series:
        ok = t.get("valid") and not t.get("excluded")
        ax.plot(
            x,
            m,
            "o-" if ok else "x--",
            ms=3,
            lw=1.2,
            color=_VALID if ok else _INVALID,
            alpha=0.85,
            label=f"trial {t.get('n')}" + ("" if ok else " (not counted)"),
        )
    if any(x for _, x, _ in series):
        r_sat = rating_spec(spec).get("r_sat_ms")
        if _finite(r_sat):
            ax.axhline(r_sat, color="0.4", ls=":", lw=1, label=f"R_sat {r_sat:g} ms")
        ax.axvline(0, color="0.7", lw=0.8)
        ax.legend(fontsize=8, loc="best")
        ax.set_title(
            f"Per-interval mean latency at {near:g} ops/s (load nearest λ*; before 0 s: warm-up)"
        )
    else:
        _message(ax, "no per-interval series recorded")
        ax.set_title("Per-interval mean latency")
    ax.set_xlabel("time in the trial (s)")
    ax.set_ylabel("mean response time (ms)")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return _png(fig)
