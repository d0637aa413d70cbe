"""Both tenants of a shared-tenant rating (workbench.config.tenants): tenant B's own figures beside
the rated workload A's, per trial and per A load, for result.json (analysis.tenants_report: the
report's table and plot).

Each trial's record holds B's merged result in ``raw["background"]`` (measure.trialjson
``background_figures``); A's figures are the trial's own. Nothing here mixes the two.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.config.tenants import describe, is_active


def _bg(t: Mapping[str, Any]) -> Mapping[str, Any] | None:
    bg = (t.get("raw") or {}).get("background")
    return bg if isinstance(bg, Mapping) and not bg.get("missing") else None


def _median(xs: Sequence[Any]) -> float | None:
    xs = [float(x) for x in xs if isinstance(x, (int, float)) and math.isfinite(x)]
    return statistics.median(xs) if xs else None


def background_by_load(trials: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per A load (ascending), over its valid trials that carry B's figures: A's median mean and B's
    median offered/achieved rate, mean and p95, and B's errors + timeouts summed."""
    by: dict[float, list[Mapping[str, Any]]] = defaultdict(list)
    for t in trials:
        if t.get("valid") and _bg(t) is not None:
            by[float(t["load_ops_s"])].append(t)
    rows = []
    for load in sorted(by):
        ts = by[load]
        bgs = [b for b in map(_bg, ts) if b is not None]  # all of them (by holds no other)
        rows.append(
            {
                "load_ops_s": load,
                "n": len(ts),
                "a_mean_ms": _median([t.get("mean_ms") for t in ts]),
                "b_offered_ops_s": _median([b.get("offered_rate") for b in bgs]),
                "b_achieved_ops_s": _median([b.get("achieved_rate") for b in bgs]),
                "b_mean_ms": _median([b.get("mean_ms") for b in bgs]),
                "b_p95_ms": _median([b.get("p95_ms") for b in bgs]),
                "b_errors": int(
                    sum((b.get("errors") or 0) + (b.get("timeouts") or 0) for b in bgs)
                ),
            }
        )
    return rows


def background_result(
    background: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """result.json's `background`: tenant B as planned and its figures per A load."""
    return {
        **background,
        "text": describe(background),
        "by_load": background_by_load(trials) if is_active(background) else [],
    }
