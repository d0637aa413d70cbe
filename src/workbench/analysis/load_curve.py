"""The load curve engineers publish (issue 50): mean response time against achieved throughput, its
overall response time (ORT, as SPEC SFS defines it), the curve as a CSV and as a figure.

One point per offered load: the mean of its valid trials (achieved ops/s, mean, p95 and p99 ms).
Valid is what the controller counted: `valid` after the not-steady exclusions (result["not_steady"],
controller.steadiness) and the great_expectations ones (result["trials"], the log as decide read
it); a harness failure measured nothing of the server and is no trial here. `valid` says only that a
trial measured the server properly (its achieved rate, errors, steadiness); the latency goal is the
saturation test, so the ORT takes, like SPEC (no point reported past its response-time cap), the
loads whose mean met R_sat and p95 met L_sat, from the first up to the peak throughput.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from workbench.analysis.plots import _ACCENT, _INVALID, _VALID, _figure, _finite, _message, _png
from workbench.controller.state import load_key
from workbench.controller.steadiness import records_as_read
from workbench.controller.trial import record_outcome

__all__ = [
    "CSV_COLUMNS",
    "counted_records",
    "curve_rows",
    "ort_curve",
    "overall_response_time_ms",
    "rating_ort_ms",
    "ort_of",
    "ort_text",
    "curve_csv",
    "load_curve_png",
    "curve_caption_html",
]

CSV_COLUMNS = (
    "offered_ops_s",
    "achieved_ops_s",
    "mean_ms",
    "p95_ms",
    "p99_ms",
    "trials",
    "valid",
    "in_ort",
)
CAPTION = (
    "Response time against achieved throughput: one point per offered load, the mean of its valid "
    "trials (filled: in the ORT, the loads that met the latency goal up to the peak throughput; "
    "hollow: not in it); light dots: the valid trials; λ* marked at its offered load."
)


def counted_records(
    result: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any], bool]]:
    """Each trial of the server with whether it counts (valid as decide read it); harness failures
    and records without a load left out."""
    logged = result.get("trials") or []
    out = []
    for r in records_as_read(result.get("not_steady"), records):
        if record_outcome(r) == "harness" or not _finite(r.get("load_ops_s")):
            continue
        n = r.get("n")
        gx_ok = not (isinstance(n, int) and 0 <= n < len(logged)) or bool(
            logged[n].get("valid", True)
        )
        out.append((r, bool(r.get("valid")) and not r.get("excluded") and gx_ok))
    return out


def _mean(records: Sequence[Mapping[str, Any]], field: str) -> float | None:
    xs = [float(r[field]) for r in records if _finite(r.get(field))]
    return sum(xs) / len(xs) if xs else None


def _meets_goal(row: Mapping[str, Any], r_sat_ms: Any, l_sat_ms: Any) -> bool:
    """A load with valid trials whose mean met R_sat and p95 met L_sat (a goal not recorded:
    met)."""
    return (
        row["valid"] > 0
        and _finite(row["achieved_ops_s"], row["mean_ms"])
        and not (_finite(r_sat_ms) and row["mean_ms"] > float(r_sat_ms))
        and not (_finite(l_sat_ms, row["p95_ms"]) and row["p95_ms"] > float(l_sat_ms))
    )


def curve_rows(
    result: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One row per offered load with a trial of the server, ascending, keyed by CSV_COLUMNS: trials
    measured, how many valid, their means (None without a valid trial), and whether it is in the
    ORT."""
    groups: dict[float, list[tuple[Mapping[str, Any], bool]]] = {}
    for r, ok in counted_records(result, records):
        groups.setdefault(load_key(r["load_ops_s"]), []).append((r, ok))
    rows: list[dict[str, Any]] = []
    for load in sorted(groups):
        counted = [r for r, v in groups[load] if v]
        rows.append(
            {
                "offered_ops_s": load,
                "achieved_ops_s": _mean(counted, "achieved_rate"),
                "mean_ms": _mean(counted, "mean_ms"),
                "p95_ms": _mean(counted, "p95_ms"),
                "p99_ms": _mean(counted, "p99_ms"),
                "trials": len(groups[load]),
                "valid": len(counted),
                "in_ort": False,
            }
        )
    eligible = [r for r in rows if _meets_goal(r, result.get("r_sat_ms"), result.get("l_sat_ms"))]
    curve = ort_curve((r["offered_ops_s"], r["achieved_ops_s"], r["mean_ms"]) for r in eligible)
    if len(curve) >= 2:
        on = {offered for offered, _, _ in curve}
        for r in rows:
            r["in_ort"] = r["offered_ops_s"] in on
    return rows


def ort_curve(points: Iterable[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """The points (offered ops/s, achieved ops/s, mean ms) the ORT integrates: in offered order up
    to the one of the highest achieved throughput (the peak; the first of equals), the loads past it
    left out, then ordered by achieved throughput."""
    pts = sorted(p for p in points if _finite(*p))
    if not pts:
        return []
    peak = max(range(len(pts)), key=lambda i: (pts[i][1], -i))
    return sorted(pts[: peak + 1], key=lambda p: (p[1], p[0]))


def overall_response_time_ms(
    points: Iterable[tuple[float, float, float]], from_origin: bool = False
) -> float | None:
    """ORT = (1/x_peak)·∫ r(x) dx over the curve of mean response time r against achieved throughput
    x, trapezoid rule, from the first measured point to the peak (ort_curve); None with fewer than 2
    points. from_origin: an assumed point (0, 0) starts the curve (what §5.4 rules out; for
    comparing with figures computed that way)."""
    # SPEC SFS 2014 Run and Reporting Rules §5.4: area under the curve ÷ peak throughput, no assumed
    # origin point
    curve = [(x, r) for _, x, r in ort_curve(points)]
    if len(curve) < 2 or curve[-1][0] <= 0:
        return None
    if from_origin:
        curve.insert(0, (0.0, 0.0))
    area = sum((x1 - x0) * (r0 + r1) / 2.0 for (x0, r0), (x1, r1) in zip(curve, curve[1:]))
    return area / curve[-1][0]


def rating_ort_ms(result: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> float | None:
    """The rating's ORT (result.json `overall_response_time_ms`) over its curve's points in the
    ORT."""
    return overall_response_time_ms(
        (r["offered_ops_s"], r["achieved_ops_s"], r["mean_ms"])
        for r in curve_rows(result, records)
        if r["in_ort"]
    )


def ort_of(result: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> float | None:
    """The ORT result.json holds; computed from the trials for a result recorded before it had
    one."""
    ort = (
        result["overall_response_time_ms"]
        if "overall_response_time_ms" in result
        else rating_ort_ms(result, records)
    )
    return float(ort) if _finite(ort) else None


def ort_text(result: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> str:
    """The ORT for the report's headline: "0.412 ms", or "—" when undefined."""
    ort = ort_of(result, records)
    return "—" if ort is None else f"{ort:.3g} ms"


def _cell(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    return format(float(v), ".10g") if _finite(v) else ""


def curve_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """The curve as CSV (RFC 4180: header row, CRLF), CSV_COLUMNS; an empty cell where a load has no
    valid trial or the trials no such figure; in_ort 1/0."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(CSV_COLUMNS)
    w.writerows([_cell(r.get(c)) for c in CSV_COLUMNS] for r in rows)
    return buf.getvalue()


def load_curve_png(trials: Sequence[Mapping[str, Any]], result: Mapping[str, Any]) -> bytes:
    """The curve (rows of curve_rows with valid trials), its points in the ORT joined, the valid
    trials as light dots, R_sat, λ* at its offered load; log y when the means span more than 30×."""
    rows = [
        r
        for r in curve_rows(result, trials)
        if r["valid"] and _finite(r["achieved_ops_s"], r["mean_ms"])
    ]
    dots = [
        (float(t["achieved_rate"]), float(t["mean_ms"]))
        for t, ok in counted_records(result, trials)
        if ok and _finite(t.get("achieved_rate"), t.get("mean_ms"))
    ]
    fig = _figure()
    ax = fig.add_subplot()
    on = sorted((r["achieved_ops_s"], r["mean_ms"]) for r in rows if r["in_ort"])
    off = [(r["achieved_ops_s"], r["mean_ms"]) for r in rows if not r["in_ort"]]
    _draw_points(ax, dots, on, off)
    r_sat, peak = result.get("r_sat_ms"), result.get("peak_rate")
    if _finite(r_sat):
        ax.axhline(float(r_sat), color="k", lw=1, ls="--", label=f"R_sat = {float(r_sat):g} ms")
    if _finite(peak):
        ax.axvline(
            float(peak), color=_ACCENT, lw=1.5, label=f"λ* = {float(peak):.4g} ops/s (offered)"
        )
    ys = [y for _, y in dots + on + off if y > 0]
    if ys and max(ys) / min(ys) > 30.0:
        ax.set_yscale("log")
    ort = ort_of(result, trials)
    ax.set_title(
        "Response time vs achieved throughput" + (f" (ORT {ort:.3g} ms)" if ort is not None else "")
    )
    ax.set_xlabel("achieved throughput (ops/s)")
    ax.set_ylabel("mean response time (ms)")
    ax.grid(True, alpha=0.3, which="both")
    if rows:
        ax.legend(fontsize=8, loc="best")
    else:
        _message(ax, "no valid trial")
    fig.tight_layout()
    return _png(fig)


def _draw_points(
    ax: Any,
    dots: Sequence[tuple[float, float]],
    on: Sequence[tuple[float, float]],
    off: Sequence[tuple[float, float]],
) -> None:
    """(achieved ops/s, mean ms): the valid trials as light dots, the loads in the ORT joined, the
    loads outside it hollow."""
    if dots:
        dot_x, dot_y = zip(*dots)
        ax.scatter(dot_x, dot_y, s=10, color=_VALID, alpha=0.25, label="trial (valid)", zorder=2)
    if on:
        ax.plot(
            *zip(*on),
            "o-",
            color=_VALID,
            ms=6,
            label="load: mean of its valid trials (in the ORT)",
            zorder=4,
        )
    if off:
        off_x, off_y = zip(*off)
        ax.scatter(
            off_x,
            off_y,
            s=40,
            facecolors="none",
            edgecolors=_INVALID,
            label="load: not in the ORT",
            zorder=4,
        )


def curve_caption_html(href: str | None) -> str:
    """The figure's caption in the report (escaped HTML), with the link to the CSV when there is
    one."""
    if not href:
        return html.escape(CAPTION)
    name = href.rsplit("/", 1)[-1]
    return (
        f"{html.escape(CAPTION)} Data: <a "
        f'href="{html.escape(href, quote=True)}">{html.escape(name)}</a>'
    )
