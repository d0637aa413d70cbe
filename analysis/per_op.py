"""The per-operation table of a rating at one load (seed 003 Table 4), from its trials' fstress
results."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from analysis import plots as _plots
from analysis.histograms import HDR_UNIT_MS, merge_histograms


def _percentile_ms(hists: list[str], p: float) -> float:
    merged = merge_histograms(hists)
    if merged is None or merged.get_total_count() == 0:
        return math.nan
    return merged.get_value_at_percentile(p) * HDR_UNIT_MS


def per_op_rows(trials: Sequence[Mapping[str, Any]], load: float) -> list[dict[str, Any]]:
    """Seed 003 Table 4 for the valid trials at ``load``, ops merged over trials.

    count = Σ counts; mean = Σ latency / count (exact ns sums when recorded, else Σ mean·count);
    actual % = count / Σ all counts; time % = Σ latency of the op / Σ latency of all ops;
    p50/p95/p99 from the merged per-op HDR histograms (the trial's own values when only one trial;
    "—" when histograms are missing).
    """
    ts = [
        t
        for t in trials
        if t.get("valid")
        and isinstance(t.get("raw"), Mapping)
        and _plots._finite(t.get("load_ops_s"))
        and float(t["load_ops_s"]) == float(load)
    ]
    agg, target = _merged_ops(ts)
    total_n = sum(a["count"] for a in agg.values())
    total_t = sum(a["time_ms"] for a in agg.values())
    rows = []
    for op in sorted(agg, key=lambda k: -agg[k]["count"]):
        a = agg[op]
        pct = _percentiles(a)
        rows.append(
            {
                "op": op,
                "mix_target_pct": 100.0 * target[op] if op in target else math.nan,
                "actual_pct": 100.0 * a["count"] / total_n if total_n else math.nan,
                "count": a["count"],
                "mean_ms": a["time_ms"] / a["count"] if a["count"] else math.nan,
                "p50_ms": pct[50],
                "p95_ms": pct[95],
                "p99_ms": pct[99],
                "time_pct": 100.0 * a["time_ms"] / total_t if total_t else math.nan,
            }
        )
    return rows


def _merged_ops(
    trials: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
    """Each op over the trials (count, Σ latency ms, histograms, trials, one trial's own figures),
    and the op mix's target shares."""
    agg: dict[str, dict[str, Any]] = {}
    target: dict[str, float] = {}
    for t in trials:
        raw = t["raw"]
        for op, f in (raw.get("mix_target") or {}).items():
            target.setdefault(op, float(f))
        for op, o in (raw.get("ops") or {}).items():
            a = agg.setdefault(op, {"count": 0, "time_ms": 0.0, "hists": [], "single": o, "n": 0})
            c = int(o.get("count") or 0)
            ex = o.get("exact") or {}
            a["count"] += c
            a["time_ms"] += (
                float(ex["sum_ns"]) / 1e6 if "sum_ns" in ex else c * float(o.get("mean_ms") or 0.0)
            )
            a["n"] += 1
            if o.get("histogram"):
                a["hists"].append(o["histogram"])
    return agg, target


def _percentiles(a: Mapping[str, Any]) -> dict[int, float]:
    """p50, p95, p99 of one op: from its merged histograms when every trial has one, else the one
    trial's own figures, else NaN."""
    if a["hists"] and len(a["hists"]) == a["n"]:
        return {q: _percentile_ms(a["hists"], q) for q in (50, 95, 99)}
    if a["n"] == 1:
        return {q: float(a["single"].get(f"p{q}_ms", math.nan)) for q in (50, 95, 99)}
    return {q: math.nan for q in (50, 95, 99)}
