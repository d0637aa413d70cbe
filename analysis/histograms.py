"""fstress's HDR latency histograms (microseconds: loadgen/internal/results/results.go) merged over
trials, their empirical CDF, and the rating report's latency CDF figure (PNG bytes)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from hdrh.histogram import HdrHistogram

from analysis.plots import _VALID, _figure, _finite, _message, _png

HDR_UNIT_MS = 1e-3  # fstress HDR histogram values are microseconds


def merge_histograms(encoded: Iterable[str | HdrHistogram]) -> HdrHistogram | None:
    """Sum of several HDR histograms (base64 strings as in fstress JSON, or histogram objects)."""
    merged = None
    for h in encoded:
        if not h:
            continue
        h = HdrHistogram.decode(h) if isinstance(h, (str, bytes)) else h
        if merged is None:  # a fresh histogram with the same range: never mutate the inputs
            merged = HdrHistogram(
                h.lowest_trackable_value, h.highest_trackable_value, h.significant_figures
            )
        merged.add(h)
    return merged


def latency_cdf(
    encoded: Iterable[str | HdrHistogram], unit_ms: float = HDR_UNIT_MS
) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF of the merged histograms: (latency_ms, fraction ≤ latency), both ascending.

    F(v_k) = Σ_{j≤k} count_j / N over the recorded buckets (value = the bucket's highest
    equivalent value); F ends at exactly 1. Empty arrays when nothing was recorded.
    """
    h = merge_histograms(encoded)
    if h is None or h.get_total_count() == 0:
        return np.zeros(0), np.zeros(0)
    vals, counts = [], []
    for it in h.get_recorded_iterator():  # the iterator reuses one object: copy fields now
        vals.append(float(it.value_iterated_to))
        counts.append(int(it.count_added_in_this_iter_step))
    c = np.cumsum(np.asarray(counts, dtype=float))
    return np.asarray(vals) * unit_ms, c / c[-1]


def _hist(t: Mapping[str, Any]) -> str | None:
    raw = t.get("raw")
    return raw.get("histogram") if isinstance(raw, Mapping) else None


def cdf_trials(
    trials: Sequence[Mapping[str, Any]], peak_rate: float | None
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


def latency_cdf_png(trials: Sequence[Mapping[str, Any]], result: Mapping[str, Any]) -> bytes:
    """CDF of latency at the load nearest λ* (merged over its valid trials) and at the lowest
    load."""
    fig = _figure()
    ax = fig.add_subplot()
    groups = cdf_trials(trials, result.get("peak_rate"))
    drawn = False
    for i, (load, ts) in enumerate(groups):
        x, f = latency_cdf(_hist(t) for t in ts)
        if not x.size:
            continue
        kw: dict[str, Any] = (
            {"color": _VALID, "lw": 2} if i == 0 else {"color": "0.6", "lw": 1.2, "alpha": 0.8}
        )
        ax.step(
            x, f, where="post", label=f"{load:g} ops/s ({len(ts)} trial{'s' * (len(ts) > 1)})", **kw
        )
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
