"""The nightly regression report (pipeline.nightly): one red (REGRESSION), green (OK) or grey (NO
VERDICT, LAB CHANGE) row per baseline and R_sat goal, with the history plots, as one
self-contained HTML page; `night_report` writes it to the store (the nightly DAG's report task)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analysis import plots as _plots
from analysis.history_plot import history_png
from analysis.html_page import (
    e,
    fmt_dict,
    link,
    num,
    page,
    pair,
    plots_html,
    status,
    table,
)
from workbench.findings.regression_text import verdict_label
from workbench.params.plan import UNSAFE_ID_CHARS
from workbench.store.base import Store

HEADERS = (
    "status",
    "baseline",
    "R_sat ms",
    "config",
    "λ* now",
    "λ* baseline",
    "change",
    "diff CI",
    "Welch p",
    "decided by",
    "reason",
    "warnings",
    "report",
)


def nightly_report_html(
    date_str: str, verdicts: Sequence[Mapping[str, Any]], plots: Mapping[str, bytes] | None = None
) -> str:
    """Nightly regression status: one red (REGRESSION) / green (OK) / grey (NO VERDICT: the rating
    did not converge) row per baseline and R_sat goal."""
    flags = [
        None
        if (v.get("inconclusive") or v.get("lab_change")) and not v.get("regression")
        else v.get("regression")
        for v in verdicts
    ]
    overall = (
        True
        if any(f is True for f in flags)
        else (False if flags and all(f is False for f in flags) else None)
    )
    body = "".join(
        [
            f"<h1>Nightly regression {e(date_str)}</h1>",
            f'<p class="headline">{status(overall, "REGRESSION", "ALL OK")} &nbsp; '
            f"{sum(f is True for f in flags)} of {len(verdicts)} baseline(s) regressed</p>",
            table(
                HEADERS,
                [_row(f, v) for f, v in zip(flags, verdicts)],
                left=(0, 1, 3, 9, 10, 11, 12),
            ),
            "<h2>Plots</h2>" if plots else "",
            plots_html(plots),
        ]
    )
    return page(f"Nightly {date_str}", body)


def _row(flag: bool | None, v: Mapping[str, Any]) -> list[Any]:
    """One verdict's row (flag: regressed, not, or no verdict)."""
    return [
        status(flag, "REGRESSION", "OK", "LAB CHANGE" if v.get("lab_change") else "NO VERDICT"),
        v.get("name"),
        num(v.get("r_sat_ms"), "g"),
        fmt_dict(v.get("config")),
        num(v.get("current_peak")),
        num(v.get("baseline_peak")),
        f"{num(100.0 * v['rel_change'], '+.1f')} %" if _plots._finite(v.get("rel_change")) else "—",
        pair(v.get("diff_ci")),
        num(v.get("welch_p"), ".3g"),
        {"welch": "Welch", "ci": "λ* CIs"}.get(v.get("test") or "", "—"),
        v.get("reason") or "",
        "; ".join(v.get("warnings") or []) or "—",
        link(v.get("report_url") or "", v.get("report_href")),
    ]


def history_plots(verdicts: Sequence[Mapping[str, Any]]) -> dict[str, bytes]:
    """λ* per night of each baseline (and goal), tonight's last, red when it regressed; the change
    point (first night of the new level) and the two levels marked."""
    return {
        f"history_{UNSAFE_ID_CHARS.sub('_', verdict_label(v))}.png": history_png(
            v["history"][:-1],
            {**v["history"][-1], "regression": v["regression"]},
            title=f"λ* history: {verdict_label(v)}",
            change=v.get("change_point"),
        )
        for v in verdicts
        if v.get("history")
    }


def night_report(store: Store, night: str, verdicts: Sequence[Mapping[str, Any]]) -> str:
    """The night's HTML report to the store; returns its URL."""
    key = store.nightly_report_key(night)
    store.put_bytes(
        key,
        nightly_report_html(night, verdicts, history_plots(verdicts)).encode(),
        "text/html; charset=utf-8",
    )
    return store.url(key)
