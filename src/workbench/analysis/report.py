"""Self-contained HTML reports (rating, surface sweep, nightly regression).

Each page is one string: inline CSS, PNGs as base64 data URIs, no external assets or scripts;
every value that comes from users or measurements goes through ``html.escape``.
Input shapes: stored trial records, the PeakResult dict, spec.json and sysinfo.json (DESIGN.md).
"""
from __future__ import annotations

import base64
import html
import json
import math
from typing import Any, Iterable, Mapping, Sequence

from workbench.analysis import plots as _plots
from workbench.analysis.cost import cost_text
from workbench.analysis.goals import GOAL_HEADERS, goal_rows
from workbench.analysis.load_curve import curve_caption_html, load_curve_png, ort_text
from workbench.analysis.peak_interval import interval_text
from workbench.analysis.per_op import per_op_rows
from workbench.analysis.tenants import BACKGROUND_HEADERS, background_rows, tenants_png
from workbench.analysis.trial_series import intervals_png
from workbench.analysis.why_report import why_html, why_plots, why_rows
from workbench.analysis.workload import workload_html
from workbench.config.external import external_text
from workbench.controller.parts import Goals
from workbench.controller.steadiness import immaterial_trend, records_as_read
from workbench.controller.trial import record_outcome, steady_verdict
from workbench.stats.steady import NOT_STEADY

__all__ = ["per_op_rows", "rating_plots", "rating_report_html", "surface_report_html", "nightly_report_html"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1.5em auto;
max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;border-bottom:1px solid #ddd;
padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:right;vertical-align:top}
th{background:#f3f3f3}td.l,th.l{text-align:left}
.kv td:first-child{text-align:left;font-weight:600;background:#fafafa}
.ok{background:#e3f6e3;color:#135e13;font-weight:700}
.bad{background:#fde2e1;color:#9b1c1c;font-weight:700}
.na{background:#eee;color:#555;font-weight:700}
tr.invalid td{color:#9b1c1c}
tr.harness td{color:#666;font-style:italic;background:#f4f4f4}
tr.excluded td{color:#9b1c1c;background:#fff4e5}
.headline{font-size:1.25em;margin:.3em 0}.muted{color:#666;font-size:.85em}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}
pre{background:#f7f7f7;padding:.6em;overflow:auto;font-size:.8em;max-height:30em}
.status{display:inline-block;padding:.2em .7em;border-radius:4px}
"""


class _Raw(str):
    """Already-safe HTML (built here from escaped parts)."""


def _e(x: Any) -> str:
    return x if isinstance(x, _Raw) else html.escape("" if x is None else str(x), quote=True)


def _link(text: Any, href: str | None) -> Any:
    return _Raw(f'<a href="{_e(href)}">{_e(text)}</a>') if href else text


def _num(x: Any, fmt: str = ".4g") -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "—"
    return format(v, fmt) if math.isfinite(v) else "—"


def _pair(p: Any, fmt: str = ".4g") -> str:
    if isinstance(p, (list, tuple)) and len(p) == 2:
        return f"[{_num(p[0], fmt)}, {_num(p[1], fmt)}]"
    return "—"


_L = ' class="l"'


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], left: Sequence[int] = (0,),
           row_class: Sequence[str] | None = None) -> str:
    th = "".join(f"<th{_L if i in left else ''}>{_e(h)}</th>" for i, h in enumerate(headers))
    body = []
    for k, r in enumerate(rows):
        cls = f' class="{row_class[k]}"' if row_class and row_class[k] else ""
        tds = "".join(f"<td{_L if i in left else ''}>{_e(c)}</td>" for i, c in enumerate(r))
        body.append(f"<tr{cls}>{tds}</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _kv(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><td>{_e(k)}</td><td class=\"l\">{_e(v)}</td></tr>" for k, v in pairs)
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def _plots_html(plots: Mapping[str, bytes] | None, captions: Mapping[str, str] | None = None) -> str:
    cap = captions or {}            # name → caption (escaped HTML) after the file name
    return "".join(f"<figure>{_img(b, n)}<figcaption class=\"muted\">{_e(n)}{': ' + cap[n] if n in cap else ''}"
                   f"</figcaption></figure>" for n, b in (plots or {}).items())


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>{body}</body></html>\n")


def _status(flag: bool | None, yes: str, no: str, unknown: str = "NO VERDICT") -> str:
    cls, text = ("na", unknown) if flag is None else (("bad", yes) if flag else ("ok", no))
    return _Raw(f'<span class="status {cls}">{_e(text)}</span>')


def _fmt_dict(d: Any) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items()) if isinstance(d, Mapping) else "" if d is None else str(d)


# --------------------------------------------------------------------------- rating report

def rating_plots(spec: Mapping[str, Any], result: Mapping[str, Any],
                 trials: Sequence[Mapping[str, Any]]) -> dict[str, bytes]:
    """The four rating figures as PNG bytes, keyed by file name."""
    trials = records_as_read(result.get("not_steady"), trials)
    return {
        "latency_vs_load.png": _plots.latency_vs_load_png(trials, result, spec),
        "load_curve.png": load_curve_png(trials, result),
        "search_trace.png": _plots.search_trace_png(trials, result),
        "latency_cdf.png": _plots.latency_cdf_png(trials, result),
        "intervals.png": intervals_png(trials, result, spec),
        **({"tenants.png": tenants_png(trials, result, spec)} if (result.get("background") or {}).get("by_load") else {}),
        **why_plots(result),
    }


NFS4_SESSION_KEYS = ("max_slots", "max_request_size", "max_response_size", "max_response_size_cached",
                     "max_operations", "lease_time_s", "impl_name", "impl_domain")


def _nfs4_html(probe: Mapping[str, Any]) -> str:
    """The NFSv4.1 session the server granted the probe (`fstress probe --nfs-version 4.1`): its slot
    table and request / response sizes (bytes), lease time; "" without one."""
    nfs4 = probe.get("nfs4") or {}
    if not nfs4:
        return ""
    return (f"<h3>NFSv{_e(probe.get('nfs_version', '4.1'))} session the server granted</h3>"
            + _kv((k, nfs4[k]) for k in NFS4_SESSION_KEYS if nfs4.get(k) not in (None, "")))


def _external_html(sysinfo: Mapping[str, Any]) -> str:
    """An external server as its client saw it (`fstress probe`) and as the user described it."""
    server, probe = sysinfo.get("server") or {}, sysinfo.get("probe") or {}
    ep = server.get("endpoint") or {}
    rtt = probe.get("rtt_us") or {}
    pairs = [("external server", server.get("description") or "(no description)"),
             ("endpoint", f"{ep.get('address')}:{ep.get('export')}"),
             ("NFS port", f"{ep.get('nfs_port')} ({probe.get('nfs_port_from', 'given')})"),
             ("MOUNT port", f"{ep.get('mount_port')} ({probe.get('mount_port_from', 'given')})"),
             ("NULL round trip", f"median {_num(rtt.get('median'))} µs, p90 {_num(rtt.get('p90'))} µs "
                                 f"over {rtt.get('n', '?')} calls" if rtt else None)]
    out = [_kv((k, v) for k, v in pairs if v is not None)]
    programs = probe.get("rpc_programs") or []
    if programs:
        out.append("<h3>RPC programs (portmapper)</h3>" + _table(
            ["program", "name", "version", "protocol", "port"],
            [[p.get("program"), p.get("name"), p.get("version"), p.get("protocol"), p.get("port")] for p in programs]))
    elif probe.get("rpc_programs_error"):
        out.append(f'<p class="muted">portmapper: {_e(probe["rpc_programs_error"])}</p>')
    for name in ("fsinfo", "fsstat", "pathconf"):
        if probe.get(name):
            out.append(f"<h3>{name.upper()} of the export</h3>" + _kv(sorted(probe[name].items())))
    out.append(_nfs4_html(probe))
    return "".join(out)


def _sysinfo_html(sysinfo: Mapping[str, Any] | None) -> str:
    if not sysinfo:
        return '<p class="muted">no system information recorded</p>'
    if sysinfo.get("mode") == "external":
        return _external_html(sysinfo)
    system = sysinfo.get("system") or {}
    server = sysinfo.get("server") or {}
    kernel = system.get("kernel") or {}
    cpu = system.get("cpu") or {}
    pairs = [("host", sysinfo.get("host")), ("address", (sysinfo.get("network") or {}).get("address")),
             ("hostname", system.get("hostname")), ("os", (system.get("os") or {}).get("pretty_name")),
             ("kernel", " ".join(str(kernel.get(k, "")) for k in ("release", "machine")).strip()),
             ("cpu", f"{cpu.get('count', '?')} × {cpu.get('model', '?')}" if cpu else None),
             ("memory", f"{system['memory_kb'] / 1048576:.1f} GiB" if system.get("memory_kb") else None),
             ("packages", _fmt_dict(system.get("packages")))]
    out = [_kv((k, v) for k, v in pairs if v)]
    settings = server.get("settings") or {}
    if settings:
        out.append("<h3>Server settings</h3>" + _kv(sorted(settings.items())))
    out.append(_nfs4_html(sysinfo.get("probe") or {}))
    if server.get("config"):
        out.append(f"<details><summary>server config ({_e(server.get('config_file', ''))})</summary>"
                   f"<pre>{_e(server['config'])}</pre></details>")
    return "".join(out)


def _validation_html(validation: Mapping[str, Any] | None) -> str:
    if validation is None:
        return '<p class="muted">no great_expectations result recorded</p>'
    excluded = validation.get("excluded") or {}
    harness = validation.get("harness") or {}
    short = validation.get("short") or {}
    ok = validation.get("success")
    out = [f"<p>great_expectations suite: "
           f"{_status(None if ok is None else not ok, 'FAILED', 'PASSED', 'UNKNOWN')} "
           f"— {len(excluded)} trial(s) excluded"
           + (f"; {len(harness)} harness failure(s) not judged (no trial of the server)" if harness else "")
           + (f"; {len(short)} trial(s) completed short of offered, kept as evidence of saturation" if short else "")
           + "</p>"]
    for kept in (excluded, short):
        if kept:
            items = sorted(kept.items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0)
            out.append(_table(["trial n", "reason" if kept is excluded else "short (kept)"], items, left=(1,)))
    if validation.get("gx"):
        text = json.dumps(validation["gx"], indent=1, default=str)
        out.append(f"<details><summary>GX details</summary><pre>{_e(text[:20000])}</pre></details>")
    return "".join(out)


def _warnings_html(result: Mapping[str, Any]) -> str:
    """Auto-pilot's warnings (analysis.anomalies), and the loads too thin to check for outliers."""
    items = "".join(f"<li>{_e(w.get('text'))}</li>" for w in result.get("warnings") or [])
    thin = result.get("loads_unchecked_for_outliers") or []
    note = (f'<p class="muted">not checked for outlier trials (fewer than 6 valid trials, where no |z| can '
            f'exceed 2): {_e(", ".join(_num(x) for x in thin))} ops/s</p>' if thin else "")
    return (f'<ul class="warnings">{items}</ul>' if items else '<p>none</p>') + note


def _steady_cell(result: Mapping[str, Any], t: Mapping[str, Any], r_sat: float | None, width: float) -> str:
    """The trial's steady-state verdict and what the controller did with it (controller.steadiness)."""
    v = steady_verdict(t)
    if t.get("excluded") == "not steady":
        return f"{v}: excluded, re-run"
    if not (v in NOT_STEADY and t.get("valid") and "not_steady" in result):
        return v or "—"
    verdict = (t.get("raw") or {}).get("steady") or {}
    if r_sat is not None and immaterial_trend(verdict, float(r_sat), width):
        return f"{v}: counted (a change of {verdict['trend_change_ms']:+.3g} ms, under s·R_sat)"
    return f"{v}: counted (past R_sat, or re-runs at this load spent)"


def _trials_html(result: Mapping[str, Any], trials: Sequence[Mapping[str, Any]], rs: Mapping[str, Any]) -> str:
    """The trial table: a harness failure measured nothing of the server (shown, marked, never one
    of its invalid trials); a trial excluded as not steady is marked EXCLUDED."""
    width = float(rs.get("width") or Goals().width)
    r_sat = min([x for x in (result.get("r_sat_ms"), *(rs.get("goals_ms") or ())) if _plots._finite(x)], default=None)

    def kind(t):                                    # (valid column, row class)
        if record_outcome(t) == "harness":
            return "HARNESS FAILURE", "harness"
        return ("yes", "") if t.get("valid") else ("EXCLUDED", "excluded") if t.get("excluded") else ("NO", "invalid")

    rows = [[t.get("n"), _num(t.get("load_ops_s")), _num(t.get("runlength_s")),
             *(["—"] * 3 if record_outcome(t) == "harness" else
               [_num(t.get(k)) for k in ("mean_ms", "p95_ms", "achieved_rate")]),
             kind(t)[0], _num((t.get("raw") or {}).get("host_steal_pct"), ".2f"), _steady_cell(result, t, r_sat, width),
             _num(t.get("drain_s"), ".2f"), t.get("reason") or "", t.get("decision") or ""] for t in trials]
    return _table(["n", "load ops/s", "runlength s", "mean ms", "p95 ms", "achieved ops/s", "valid",
                   "host steal %", "steady", "drain s", "reason", "decision"], rows, left=(8, 10, 11),
                  row_class=[kind(t)[1] for t in trials])


def rating_report_html(spec: Mapping[str, Any], result: Mapping[str, Any],
                       trials: Sequence[Mapping[str, Any]], sysinfo: Mapping[str, Any] | None = None,
                       validation: Mapping[str, Any] | None = None,
                       plots: Mapping[str, bytes] | None = None, curve_href: str | None = None) -> str:
    """One rating as a self-contained HTML page (headline, plots, per-op, trials, GX, sysinfo; curve_href: its CSV)."""
    rs = _plots.rating_spec(spec)
    trials = sorted(records_as_read(result.get("not_steady"), trials), key=lambda t: t.get("n", 0))
    if plots is None:
        plots = rating_plots(spec, result, trials)
    workload = spec.get("workload", "?")
    peak = result.get("peak_rate")
    near = result.get("mean_load_ops_s")       # the tested load whose trials give the mean at λ*
    near = float(near) if _plots._finite(near) else None
    mci = result.get("mean_ms_ci") or [None, None]
    # a mean response time is > 0: the t-interval's negative part holds no possible value
    mci = [max(0.0, mci[0]) if _plots._finite(mci[0]) else None, mci[1]]
    ext = spec.get("external") or {}
    what = external_text(ext) if ext else _fmt_dict(spec.get("factors"))
    head = [
        f"<h1>Peak rate of {_e(workload)} — {_e(what)}</h1>",
        f'<p class="headline">λ* = <b>{_num(peak)}</b> ops/s &nbsp; {_e(interval_text(result))} '
        f'&nbsp; bracket {_pair(result.get("bracket"))} &nbsp; '
        f'{_status(not result.get("converged"), "NOT CONVERGED", "CONVERGED")}</p>',
        _kv([("reason", result.get("reason")), ("profile / slot", f"{spec.get('profile', '')} / {spec.get('slot', '')}"),
             ("policy / stop rule", f"{result.get('policy', rs.get('policy'))} / "
                                    f"{result.get('stop_rule', rs.get('stop_rule', 'inside'))}"),
             ("λ* interval", f"{interval_text(result)}: {result.get('peak_rate_ci_method') or 'method not recorded'}"),
             ("R_sat / width / confidence", f"{_num(result.get('r_sat_ms', rs.get('r_sat_ms')))} ms / "
                                            f"{_num(rs.get('width'))} / {_num(rs.get('confidence'))}"),
             (f"mean at {_num(near)} ops/s (tested load nearest λ*)" if near is not None else "mean at λ*",
              f"{_num(result.get('mean_ms_at_peak'))} ms, CI {_pair(mci)}"),
             ("trials / loads / invalid / harness failures",
              f"{result.get('n_trials', len(trials))} / {result.get('n_loads', '?')}"
              f" / {result.get('n_invalid', '?')} / {result.get('n_harness', 0)}"),
             *([("excluded as not steady", f"{result['n_not_steady']} trial(s), each re-run at its load "
                                            f"(trial table: steady column)")] if "n_not_steady" in result else []),
             *([("shared tenant", (result.get("background") or {}).get("text"))] if result.get("background") else []),
             *why_rows(result),
             ("overall response time (ORT)", ort_text(result, trials)), ("cost", cost_text(result))]),
    ]
    ops = per_op_rows(trials, near) if near is not None else []
    op_html = (_table(["op", "mix target %", "actual %", "count", "mean ms", "p50 ms", "p95 ms", "p99 ms",
                       "time %"],
                      [[r["op"], _num(r["mix_target_pct"], ".1f"), _num(r["actual_pct"], ".1f"), r["count"],
                        _num(r["mean_ms"], ".3g"), _num(r["p50_ms"], ".3g"), _num(r["p95_ms"], ".3g"),
                        _num(r["p99_ms"], ".3g"), _num(r["time_pct"], ".1f")] for r in ops])
               if ops else '<p class="muted">no valid trial with per-op data</p>')
    goals, tenant_rows = goal_rows(result), background_rows(result)
    body = "".join([
        *head, *(["<h2>Goals: one search, one trial log</h2>", _table(GOAL_HEADERS, goals, left=(7,))] if goals else []),
        *(["<h2>Shared tenants: B's own figures beside A's, per A load (valid trials)</h2>",
           _table(BACKGROUND_HEADERS, tenant_rows)] if tenant_rows else []),
        why_html(result, _table), "<h2>Warnings</h2>", _warnings_html(result),
        "<h2>Plots</h2>", _plots_html(plots, {"load_curve.png": curve_caption_html(curve_href)}),
        f"<h2>Per-operation breakdown at {_num(near)} ops/s (load nearest λ*)</h2>", op_html,
        "<h2>Trials</h2>", _trials_html(result, trials, rs),
        "<h2>Data validation</h2>", _validation_html(validation),
        "<h2>Workload</h2>", workload_html(result), "<h2>System</h2>", _sysinfo_html(sysinfo),
    ])
    return _page(f"Rating {workload}: λ* = {_num(peak)} ops/s", body)


# --------------------------------------------------------------------------- surface report

def surface_report_html(sweep: Mapping[str, Any], samples: Sequence[Mapping[str, Any]],
                        fit_summary: Mapping[str, Any] | None, plots: Mapping[str, bytes] | None = None) -> str:
    """A response-surface sweep: design, the samples' λ* with their intervals side by side, the RSM fit
    quality and the plots."""
    factors = list(sweep.get("factors") or [])
    head = _kv([("sweep", sweep.get("sweep_id")), ("design", sweep.get("design")),
                ("factors", ", ".join(map(str, factors))), ("levels", _fmt_dict(sweep.get("levels"))),
                ("samples", len(samples))])
    cols = factors + ["peak_rate", "peak_rate_ci", "converged", "bottleneck", "n_trials", "seed_load", "rating_id"]
    rows = [[_num(s.get(c)) if c in ("peak_rate", "seed_load") else _pair(s.get(c)) if c == "peak_rate_ci" else
             _link(s.get(c), s.get("report_href")) if c == "rating_id" else s.get(c) for c in cols] for s in samples]
    fit_html = '<p class="muted">no model fitted</p>'
    if fit_summary:
        coefs = fit_summary.get("coefficients") or fit_summary.get("terms") or {}
        scalars = [(k, _num(v) if isinstance(v, (int, float)) else v) for k, v in fit_summary.items()
                   if k not in ("coefficients", "terms")]
        fit_html = _kv(scalars) + (_table(["term", "coefficient"], [[k, _num(v)] for k, v in coefs.items()])
                                   if coefs else "")
    body = "".join([f"<h1>Response surface {_e(sweep.get('sweep_id', ''))}</h1>", head,
                    "<h2>Plots</h2>", _plots_html(plots),
                    "<h2>Samples</h2>", _table(cols, rows, left=(len(cols) - 1,)),
                    "<h2>Quadratic model</h2>", fit_html])
    return _page(f"Surface {sweep.get('sweep_id', '')}", body)


# --------------------------------------------------------------------------- nightly report

def nightly_report_html(date_str: str, verdicts: Sequence[Mapping[str, Any]],
                        plots: Mapping[str, bytes] | None = None) -> str:
    """Nightly regression status: one red (REGRESSION) / green (OK) / grey (NO VERDICT: the rating did
    not converge) row per baseline and R_sat goal."""
    flags = [None if (v.get("inconclusive") or v.get("lab_change")) and not v.get("regression")
             else v.get("regression") for v in verdicts]
    overall = True if any(f is True for f in flags) else (False if flags and all(f is False for f in flags)
                                                         else None)
    rows = [[_status(f, "REGRESSION", "OK", "LAB CHANGE" if v.get("lab_change") else "NO VERDICT"),
             v.get("name"), _num(v.get("r_sat_ms"), "g"), _fmt_dict(v.get("config")),
             _num(v.get("current_peak")), _num(v.get("baseline_peak")),
             f"{_num(100.0 * v['rel_change'], '+.1f')} %" if _plots._finite(v.get("rel_change")) else "—",
             _pair(v.get("diff_ci")), _num(v.get("welch_p"), ".3g"),
             {"welch": "Welch", "ci": "λ* CIs"}.get(v.get("test") or "", "—"), v.get("reason") or "",
             "; ".join(v.get("warnings") or []) or "—",
             _link(v.get("report_url") or "", v.get("report_href"))] for f, v in zip(flags, verdicts)]
    body = "".join([
        f"<h1>Nightly regression {_e(date_str)}</h1>",
        f'<p class="headline">{_status(overall, "REGRESSION", "ALL OK")} &nbsp; '
        f"{sum(f is True for f in flags)} of {len(verdicts)} baseline(s) regressed</p>",
        _table(["status", "baseline", "R_sat ms", "config", "λ* now", "λ* baseline", "change", "diff CI", "Welch p",
                "decided by", "reason", "warnings", "report"], rows, left=(0, 1, 3, 9, 10, 11, 12)),
        "<h2>Plots</h2>" if plots else "", _plots_html(plots),
    ])
    return _page(f"Nightly {date_str}", body)
