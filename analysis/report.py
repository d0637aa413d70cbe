"""The rating report: one rating as a self-contained HTML page (html_page): its headline, goals,
shared tenants, why λ* is where it is, warnings, plots, per-operation breakdown, trials, data
validation, workload and system (sysinfo_report). The sweep's and the night's reports are
surface_report and nightly_report.
Input shapes: stored trial records, the PeakResult dict, spec.json and sysinfo.json (DESIGN.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from analysis import plots as _plots
from analysis.histograms import latency_cdf_png
from analysis.html_page import e, fmt_dict, kv, num, page, pair, plots_html, status, table
from analysis.load_curve_plot import curve_caption_html, load_curve_png
from analysis.per_op import per_op_rows
from analysis.sysinfo_report import sysinfo_html
from analysis.tenants_report import BACKGROUND_HEADERS, background_rows, tenants_png
from analysis.trial_series import intervals_png
from analysis.why_report import why_html, why_plots, why_rows
from analysis.workload import workload_html
from workbench.config.external import external_text
from workbench.controller.parts import Goals
from workbench.controller.steadiness import immaterial_trend, records_as_read
from workbench.controller.trial import record_outcome, steady_verdict
from workbench.findings.cost import cost_text
from workbench.findings.goals import GOAL_HEADERS, goal_rows
from workbench.findings.load_curve import ort_text
from workbench.findings.peak_interval import interval_text, mean_at_peak_text
from workbench.stats.steady import NOT_STEADY

__all__ = ["per_op_rows", "rating_plots", "rating_report_html"]


def rating_plots(
    spec: Mapping[str, Any], result: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]
) -> dict[str, bytes]:
    """The four rating figures as PNG bytes, keyed by file name."""
    trials = records_as_read(result.get("not_steady"), trials)
    return {
        "latency_vs_load.png": _plots.latency_vs_load_png(trials, result, spec),
        "load_curve.png": load_curve_png(trials, result),
        "search_trace.png": _plots.search_trace_png(trials, result),
        "latency_cdf.png": latency_cdf_png(trials, result),
        "intervals.png": intervals_png(trials, result, spec),
        **(
            {"tenants.png": tenants_png(trials, result, spec)}
            if (result.get("background") or {}).get("by_load")
            else {}
        ),
        **why_plots(result),
    }


def _validation_html(validation: Mapping[str, Any] | None) -> str:
    if validation is None:
        return '<p class="muted">no great_expectations result recorded</p>'
    excluded = validation.get("excluded") or {}
    harness = validation.get("harness") or {}
    short = validation.get("short") or {}
    ok = validation.get("success")
    out = [
        f"<p>great_expectations suite: "
        f"{status(None if ok is None else not ok, 'FAILED', 'PASSED', 'UNKNOWN')} "
        f"— {len(excluded)} trial(s) excluded"
        + (
            f"; {len(harness)} harness failure(s) not judged (no trial of the server)"
            if harness
            else ""
        )
        + (
            f"; {len(short)} trial(s) completed short of offered, kept as evidence of saturation"
            if short
            else ""
        )
        + "</p>"
    ]
    for kept in (excluded, short):
        if kept:
            items = sorted(kept.items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0)
            out.append(
                table(
                    ["trial n", "reason" if kept is excluded else "short (kept)"], items, left=(1,)
                )
            )
    if validation.get("gx"):
        text = json.dumps(validation["gx"], indent=1, default=str)
        out.append(f"<details><summary>GX details</summary><pre>{e(text[:20000])}</pre></details>")
    return "".join(out)


def _warnings_html(result: Mapping[str, Any]) -> str:
    """Auto-pilot's warnings (findings.anomalies), and the loads too thin to check for outliers."""
    items = "".join(f"<li>{e(w.get('text'))}</li>" for w in result.get("warnings") or [])
    thin = result.get("loads_unchecked_for_outliers") or []
    note = (
        '<p class="muted">not checked for outlier trials (fewer than 6 valid trials, where no |z| '
        f"can exceed 2): {e(', '.join(num(x) for x in thin))} ops/s</p>"
        if thin
        else ""
    )
    return (f'<ul class="warnings">{items}</ul>' if items else "<p>none</p>") + note


def _steady_cell(
    result: Mapping[str, Any], t: Mapping[str, Any], r_sat: float | None, width: float
) -> str:
    """The trial's steady-state verdict and what the controller did with it
    (controller.steadiness)."""
    v = steady_verdict(t)
    if t.get("excluded") == "not steady":
        return f"{v}: excluded, re-run"
    if not (v in NOT_STEADY and t.get("valid") and "not_steady" in result):
        return v or "—"
    verdict = (t.get("raw") or {}).get("steady") or {}
    if r_sat is not None and immaterial_trend(verdict, float(r_sat), width):
        return f"{v}: counted (a change of {verdict['trend_change_ms']:+.3g} ms, under s·R_sat)"
    return f"{v}: counted (past R_sat, or re-runs at this load spent)"


TRIAL_HEADERS = (
    "n",
    "load ops/s",
    "runlength s",
    "mean ms",
    "p95 ms",
    "achieved ops/s",
    "valid",
    "host steal %",
    "steady",
    "drain s",
    "reason",
    "decision",
)


def _trial_kind(t: Mapping[str, Any]) -> tuple[str, str]:
    """(valid column, row class) of a trial."""
    if record_outcome(t) == "harness":
        return "HARNESS FAILURE", "harness"
    if t.get("valid"):
        return "yes", ""
    return ("EXCLUDED", "excluded") if t.get("excluded") else ("NO", "invalid")


def _trials_html(
    result: Mapping[str, Any], trials: Sequence[Mapping[str, Any]], rs: Mapping[str, Any]
) -> str:
    """The trial table: a harness failure measured nothing of the server (shown, marked, never one
    of its invalid trials); a trial excluded as not steady is marked EXCLUDED."""
    width = float(rs.get("width") or Goals().width)
    r_sat = min(
        [x for x in (result.get("r_sat_ms"), *(rs.get("goals_ms") or ())) if _plots._finite(x)],
        default=None,
    )
    rows = [
        [
            t.get("n"),
            num(t.get("load_ops_s")),
            num(t.get("runlength_s")),
            *(
                ["—"] * 3
                if record_outcome(t) == "harness"
                else [num(t.get(k)) for k in ("mean_ms", "p95_ms", "achieved_rate")]
            ),
            _trial_kind(t)[0],
            num((t.get("raw") or {}).get("host_steal_pct"), ".2f"),
            _steady_cell(result, t, r_sat, width),
            num(t.get("drain_s"), ".2f"),
            t.get("reason") or "",
            t.get("decision") or "",
        ]
        for t in trials
    ]
    row_class = [_trial_kind(t)[1] for t in trials]
    return table(TRIAL_HEADERS, rows, left=(8, 10, 11), row_class=row_class)


def rating_report_html(
    spec: Mapping[str, Any],
    result: Mapping[str, Any],
    trials: Sequence[Mapping[str, Any]],
    sysinfo: Mapping[str, Any] | None = None,
    validation: Mapping[str, Any] | None = None,
    plots: Mapping[str, bytes] | None = None,
    curve_href: str | None = None,
) -> str:
    """One rating as a self-contained HTML page (headline, plots, per-op, trials, GX, sysinfo;
    curve_href: its CSV)."""
    rs = _plots.rating_spec(spec)
    trials = sorted(records_as_read(result.get("not_steady"), trials), key=lambda t: t.get("n", 0))
    if plots is None:
        plots = rating_plots(spec, result, trials)
    workload = spec.get("workload", "?")
    peak = result.get("peak_rate")
    near = result.get("mean_load_ops_s")  # the tested load whose trials give the mean at λ*
    near = float(near) if _plots._finite(near) else None
    what = rated_text(spec)
    body = [
        f"<h1>Peak rate of {e(workload)} — {e(what)}</h1>",
        f'<p class="headline">λ* = <b>{num(peak)}</b> ops/s &nbsp; {e(interval_text(result))} '
        f"&nbsp; bracket {pair(result.get('bracket'))} &nbsp; "
        f"{status(not result.get('converged'), 'NOT CONVERGED', 'CONVERGED')}</p>",
        kv(_summary(spec, result, trials, rs, near)),
        *_goals_and_tenants(result),
        why_html(result, table),
        "<h2>Warnings</h2>",
        _warnings_html(result),
        "<h2>Plots</h2>",
        plots_html(plots, {"load_curve.png": curve_caption_html(curve_href)}),
        f"<h2>Per-operation breakdown at {num(near)} ops/s (load nearest λ*)</h2>",
        _per_op_html(trials, near),
        "<h2>Trials</h2>",
        _trials_html(result, trials, rs),
        "<h2>Data validation</h2>",
        _validation_html(validation),
        "<h2>Workload</h2>",
        workload_html(result),
        "<h2>System</h2>",
        sysinfo_html(sysinfo),
    ]
    return page(f"Rating {workload}: λ* = {num(peak)} ops/s", "".join(body))


def rated_text(spec: Mapping[str, Any]) -> str:
    """What the rating rated, for the headline: the external filer or the sample's factors, and the
    levels its factor pack applied ("; pack.yml: nb_worker=64, cache_mode=b")."""
    ext = spec.get("external") or {}
    what = external_text(ext) if ext else fmt_dict(spec.get("factors"))
    levels = spec.get("pack_factors") or {}
    if levels:
        pack = PurePath(str((spec.get("factor_pack") or {}).get("path") or "factor pack")).name
        what += f"; {pack}: {fmt_dict(levels)}"
    return what


def _summary(
    spec: Mapping[str, Any],
    result: Mapping[str, Any],
    trials: Sequence[Mapping[str, Any]],
    rs: Mapping[str, Any],
    near: float | None,
) -> list[tuple[str, Any]]:
    """The headline's table: why the rating ended, its settings, the mean at λ*, counts, cost."""
    at = f"mean at {num(near)} ops/s (tested load nearest λ*)" if near is not None else "mean at λ*"
    pairs = [
        ("reason", result.get("reason")),
        ("profile / slot", f"{spec.get('profile', '')} / {spec.get('slot', '')}"),
        (
            "policy / stop rule",
            f"{result.get('policy', rs.get('policy'))} / "
            f"{result.get('stop_rule', rs.get('stop_rule', 'inside'))}",
        ),
        (
            "λ* interval",
            f"{interval_text(result)}: "
            f"{result.get('peak_rate_ci_method') or 'method not recorded'}",
        ),
        (
            "R_sat / width / confidence",
            f"{num(result.get('r_sat_ms', rs.get('r_sat_ms')))} ms / "
            f"{num(rs.get('width'))} / {num(rs.get('confidence'))}",
        ),
        (at, mean_at_peak_text(result)),
        (
            "trials / loads / invalid / harness failures",
            f"{result.get('n_trials', len(trials))} / {result.get('n_loads', '?')}"
            f" / {result.get('n_invalid', '?')} / {result.get('n_harness', 0)}",
        ),
    ]
    if "n_not_steady" in result:
        pairs.append(
            (
                "excluded as not steady",
                f"{result['n_not_steady']} trial(s), each re-run at its load "
                f"(trial table: steady column)",
            )
        )
    if result.get("background"):
        pairs.append(("shared tenant", (result.get("background") or {}).get("text")))
    return [
        *pairs,
        *why_rows(result),
        ("overall response time (ORT)", ort_text(result, trials)),
        ("cost", cost_text(result)),
    ]


def _goals_and_tenants(result: Mapping[str, Any]) -> list[str]:
    """The goals of a several-goal rating, and tenant B's figures beside A's (each when there)."""
    out = []
    goals, tenant_rows = goal_rows(result), background_rows(result)
    if goals:
        out += ["<h2>Goals: one search, one trial log</h2>", table(GOAL_HEADERS, goals, left=(7,))]
    if tenant_rows:
        out += [
            "<h2>Shared tenants: B's own figures beside A's, per A load (valid trials)</h2>",
            table(BACKGROUND_HEADERS, tenant_rows),
        ]
    return out


OP_HEADERS = (
    "op",
    "mix target %",
    "actual %",
    "count",
    "mean ms",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "time %",
)


def _per_op_html(trials: Sequence[Mapping[str, Any]], near: float | None) -> str:
    """The per-operation breakdown of the trials at the load nearest λ* (per_op_rows)."""
    ops = per_op_rows(trials, near) if near is not None else []
    if not ops:
        return '<p class="muted">no valid trial with per-op data</p>'
    rows = [
        [
            r["op"],
            num(r["mix_target_pct"], ".1f"),
            num(r["actual_pct"], ".1f"),
            r["count"],
            *(num(r[k], ".3g") for k in ("mean_ms", "p50_ms", "p95_ms", "p99_ms")),
            num(r["time_pct"], ".1f"),
        ]
        for r in ops
    ]
    return table(OP_HEADERS, rows)
