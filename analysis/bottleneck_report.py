"""The bottleneck verdict in the rating report: each resource's utilization against offered load
with λ* marked (a PNG), and a table of the same figures (result.json "bottleneck",
findings.bottleneck)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analysis.plots import _figure, _finite, _message, _png
from workbench.findings.bottleneck import SATURATED

__all__ = ["utilization_png", "bottleneck_table_rows"]


def _resources(loads: list[Mapping[str, Any]]) -> list[str]:
    return sorted({k for row in loads for k in row if k != "load_ops_s"})


def utilization_png(result: Mapping[str, Any]) -> bytes:
    """Utilization (its limit = 1) of every resource per trial against offered load; the saturation
    line, λ* and the verdict's resource in bold."""
    v = result.get("bottleneck") or {}
    loads = v.get("loads") or []
    fig = _figure()
    ax = fig.add_subplot()
    for name in _resources(loads):
        pts = sorted((row["load_ops_s"], row[name]) for row in loads if _finite(row.get(name)))
        bold = name == v.get("resource")
        ax.plot(
            [x for x, _ in pts],
            [100 * u for _, u in pts],
            "o-",
            lw=2.5 if bold else 1.0,
            ms=5 if bold else 3,
            label=name + (" (bottleneck)" if bold else ""),
        )
    ax.axhline(
        100 * SATURATED, color="0.4", ls="--", lw=1, label=f"saturated ({100 * SATURATED:.0f} %)"
    )
    if _finite(result.get("peak_rate")):
        ax.axvline(
            float(result["peak_rate"]),
            color="k",
            lw=1.5,
            label=f"λ* {float(result['peak_rate']):.0f}",
        )
    ax.set_xlabel("offered load (ops/s)")
    ax.set_ylabel("utilization (% of its limit)")
    ax.set_title(f"Resources against load: {v.get('resource', 'no verdict')}")
    ax.grid(True, alpha=0.3)
    if loads:
        ax.legend(fontsize=8, loc="best")
    else:
        _message(ax, "no telemetry")
    fig.tight_layout()
    return _png(fig)


def bottleneck_table_rows(result: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of the report's table: one row per trial read, utilization in % per
    resource."""
    loads = (result.get("bottleneck") or {}).get("loads") or []
    names = _resources(loads)
    rows = [
        [
            f"{row['load_ops_s']:g}",
            *(f"{100 * row[k]:.0f}" if _finite(row.get(k)) else "—" for k in names),
        ]
        for row in loads
    ]
    return ["offered ops/s", *(f"{k} %" for k in names)], rows
