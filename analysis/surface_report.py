"""The report of a response-surface sweep (pipeline.sweep): its design, the samples' λ* with their
intervals side by side, the RSM fit's quality and the plots, as one self-contained HTML page;
`surface_report_step` draws the plots and writes it to the store (map_surface's fit task)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from analysis.html_page import e, fmt_dict, kv, link, num, page, pair, plots_html, table
from analysis.surface_plots import curve_png, mape_png, surface_png
from workbench.pipeline.sweep import coder, fit_surface, sweep_rows
from workbench.pipeline.sweep_plan import space_of
from workbench.planning import active
from workbench.store.base import Store

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


def surface_plots(
    plan: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], model: Any
) -> dict[str, bytes]:
    """One filled-contour plot of the fit per pair of numeric factors, with the samples on it; with
    one numeric factor, its curve (λ* with CIs and the fit)."""
    points = pd.DataFrame(
        [
            {**r["sample"], "peak_rate": r["peak_rate"], "peak_rate_ci": r.get("peak_rate_ci")}
            for r in rows
        ]
    )
    space = space_of(plan)
    numeric = [f.name for f in space.numeric]
    code, fit = coder(space, [r["sample"] for r in rows]), active.at_slice(model, space)
    if len(numeric) == 1:
        return {f"curve_{numeric[0]}.png": curve_png(points, numeric[0], fit=fit, code=code)}
    return {
        f"surface_{fx}_{fy}.png": surface_png(points, fx, fy, fit=fit, code=code)
        for i, fx in enumerate(numeric)
        for fy in numeric[i + 1 :]
    }


def surface_report_step(
    store: Store, sweep_id: str, rows: Sequence[Mapping[str, Any]] | None = None
) -> str:
    """The plots and the report (surfaces/<id>/report.html) of a finished sweep whose fit
    pipeline.sweep.finish_sweep stored: the fit (redone from the same samples: it is deterministic),
    the samples, the plots; returns the report's URL."""
    plan, rows, _ = sweep_rows(store, sweep_id, rows)
    model, _ = fit_surface(plan, rows)
    summary = store.get_json(store.model_key(sweep_id))
    plots = surface_plots(plan, rows, model)
    if plan["design"] == "active":
        plots["mape_vs_samples.png"] = mape_png(summary["mape_by_samples"], plan["mape_target_pct"])
    for name, png in plots.items():
        store.put_bytes(store.surface_plot_key(sweep_id, name), png, "image/png")
    key = store.surface_report_key(sweep_id)
    samples = [
        {
            **r["sample"],
            **{
                k: r.get(k)
                for k in (
                    "peak_rate",
                    "peak_rate_ci",
                    "rating_id",
                    "n_trials",
                    "seed_load",
                    "converged",
                    "bottleneck",
                )
            },
            "report_href": store.link(key, store.rating_report_key(r["rating_id"])),
        }
        for r in rows
    ]
    report = {k: v for k, v in summary.items() if k != "mape_by_samples"}
    html = surface_report_html(
        {"sweep_id": sweep_id, "factors": plan["factors"], "design": plan["design"]},
        samples,
        report,
        plots,
    )
    store.put_bytes(key, html.encode(), "text/html; charset=utf-8")
    return store.url(key)
