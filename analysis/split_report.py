"""The latency split in the rating report: per load, the client-observed mean beside its parts
measured on their own (result.json "latency_split", findings.latency_split) — a stacked bar per load
with the client's mean marked, and a table of the same figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analysis.plots import _figure, _finite, _message, _png

__all__ = ["split_png", "split_table_rows"]

PARTS = (
    ("server_ms", "server (Ganesha's own statistics)"),
    ("server_queue_ms", "server receive queue (Little's law)"),
    ("network_ms", "network (NULL beside the trial)"),
    ("queueing_ms", "client queueing (send lag)"),
)


def split_png(result: Mapping[str, Any]) -> bytes:
    """Stacked server + server queue + network + queueing per load against the client's mean (a
    black tick)."""
    loads = ((result.get("latency_split") or {}).get("loads")) or []
    fig = _figure()
    ax = fig.add_subplot()
    xs = list(range(len(loads)))
    bottom = [0.0] * len(loads)
    for key, label in PARTS:
        vals = [float(row.get(key) or 0.0) for row in loads]  # a rating from before a part: 0
        ax.bar(xs, vals, bottom=bottom, width=0.6, label=label)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.plot(
        xs, [row["client_ms"] for row in loads], "k_", ms=28, mew=2.5, label="client-observed mean"
    )
    ax.set_xticks(
        xs, [f"{row['load_ops_s']:g}" for row in loads], rotation=45 if len(loads) > 8 else 0
    )
    peak = result.get("peak_rate")
    title = "Where a call's time goes" + (f" (λ* {float(peak):.0f} ops/s)" if _finite(peak) else "")
    ax.set_title(title)
    ax.set_xlabel("offered load (ops/s)")
    ax.set_ylabel("mean response time (ms)")
    ax.grid(True, axis="y", alpha=0.3)
    if loads:
        ax.legend(fontsize=8, loc="upper left")
    else:
        _message(
            ax, "no split: " + "; ".join((result.get("latency_split") or {}).get("missing") or {})
        )
    fig.tight_layout()
    return _png(fig)


def split_table_rows(result: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(headers, rows): per load the client mean, each part, their sum and the gap, in ms and %."""
    split = result.get("latency_split") or {}
    peak = result.get("peak_rate")
    rows = [
        [
            f"{row['load_ops_s']:g}"
            + (" (≥ λ*)" if _finite(peak) and row["load_ops_s"] >= float(peak) else ""),
            f"{row['client_ms']:.3f}",
            *(_ms(row.get(k)) for k, _ in PARTS),
            f"{row['parts_ms']:.3f}",
            f"{row['gap_pct']:+.1f}",
            str(row["trials"]),
        ]
        for row in split.get("loads") or []
    ]
    return [
        "offered ops/s",
        "client mean ms",
        "server ms",
        "server queue ms",
        "network ms",
        "client queueing ms",
        "sum ms",
        "gap %",
        "trials",
    ], rows


def _ms(v: Any) -> str:
    return f"{float(v):.3f}" if _finite(v) else "—"
