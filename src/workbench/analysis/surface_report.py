"""The report of a response-surface sweep (pipeline.sweep): its design, the samples' λ* with their
intervals side by side, the RSM fit's quality and the plots, as one self-contained HTML page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.analysis.html_page import e, fmt_dict, kv, link, num, page, pair, plots_html, table

SAMPLE_COLUMNS = (
    "peak_rate",
    "peak_rate_ci",
    "converged",
    "bottleneck",
    "n_trials",
    "seed_load",
    "rating_id",
)


def surface_report_html(
    sweep: Mapping[str, Any],
    samples: Sequence[Mapping[str, Any]],
    fit_summary: Mapping[str, Any] | None,
    plots: Mapping[str, bytes] | None = None,
) -> str:
    """A response-surface sweep: design, the samples' λ* with their intervals side by side, the RSM
    fit quality and the plots."""
    factors = list(sweep.get("factors") or [])
    head = kv(
        [
            ("sweep", sweep.get("sweep_id")),
            ("design", sweep.get("design")),
            ("factors", ", ".join(map(str, factors))),
            ("levels", fmt_dict(sweep.get("levels"))),
            ("samples", len(samples)),
        ]
    )
    cols = factors + list(SAMPLE_COLUMNS)
    rows = [[_cell(s, c) for c in cols] for s in samples]
    body = "".join(
        [
            f"<h1>Response surface {e(sweep.get('sweep_id', ''))}</h1>",
            head,
            "<h2>Plots</h2>",
            plots_html(plots),
            "<h2>Samples</h2>",
            table(cols, rows, left=(len(cols) - 1,)),
            "<h2>Quadratic model</h2>",
            _fit_html(fit_summary),
        ]
    )
    return page(f"Surface {sweep.get('sweep_id', '')}", body)


def _cell(sample: Mapping[str, Any], column: str) -> Any:
    """A sample's cell: numbers formatted, the CI as a pair, the rating id linked to its report."""
    if column in ("peak_rate", "seed_load"):
        return num(sample.get(column))
    if column == "peak_rate_ci":
        return pair(sample.get(column))
    if column == "rating_id":
        return link(sample.get(column), sample.get("report_href"))
    return sample.get(column)


def _fit_html(fit_summary: Mapping[str, Any] | None) -> str:
    """The model's quality figures, then its coefficients."""
    if not fit_summary:
        return '<p class="muted">no model fitted</p>'
    coefs = fit_summary.get("coefficients") or fit_summary.get("terms") or {}
    scalars = [
        (k, num(v) if isinstance(v, (int, float)) else v)
        for k, v in fit_summary.items()
        if k not in ("coefficients", "terms")
    ]
    terms = table(["term", "coefficient"], [[k, num(v)] for k, v in coefs.items()])
    return kv(scalars) + (terms if coefs else "")
