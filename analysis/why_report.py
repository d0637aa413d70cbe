"""Why λ* is where it is, in the rating report: the bottleneck verdict's table and figure
(analysis.bottleneck_report) and the latency split's (analysis.split_report), as one section."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from analysis.bottleneck_report import bottleneck_table_rows, utilization_png
from analysis.split_report import split_png, split_table_rows
from workbench.findings.latency_split import split_line

__all__ = ["why_plots", "why_html", "why_rows"]


def why_plots(result: Mapping[str, Any]) -> dict[str, bytes]:
    """The section's figures (file name → PNG) the rating's telemetry allows."""
    return {
        **(
            {"utilization.png": utilization_png(result)}
            if (result.get("bottleneck") or {}).get("loads")
            else {}
        ),
        **(
            {"latency_split.png": split_png(result)}
            if ((result.get("latency_split") or {}).get("loads"))
            else {}
        ),
    }


def why_rows(result: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The headline's rows: the verdict's line and the split at the highest load below λ*."""
    return [
        *([("bottleneck", result["bottleneck"]["line"])] if result.get("bottleneck") else []),
        *(
            [("latency split", split_line(result["latency_split"]))]
            if "latency_split" in result
            else []
        ),
    ]


def why_html(
    result: Mapping[str, Any], table: Callable[[Sequence[str], Sequence[Sequence[Any]]], str]
) -> str:
    """The verdict's figures per trial read and the split per load, when the rating has them."""
    v, split = result.get("bottleneck") or {}, result.get("latency_split") or {}
    out = []
    if v.get("loads"):
        out += [
            f'<h2>Bottleneck: {html.escape(v["line"])}</h2><p class="muted">utilization of each '
            "resource, % of its limit, per trial up to the first overloaded load</p>",
            table(*bottleneck_table_rows(result)),
        ]
    if split.get("loads"):
        out += [
            "<h2>Latency split: client mean = server + server queue + network + client "
            'queueing</h2><p class="muted">each part measured on its own: Ganesha\'s per-operation '
            "statistics, its connections' receive queue (Little's law), NULL calls beside the "
            "trial, fstress's send lag; gap = (sum − client) / client; valid trials, per offered "
            "load</p>",
            table(*split_table_rows(result)),
        ]
    return "".join(out)
