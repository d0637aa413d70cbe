"""The load curve engineers publish (issue 50): mean response time against achieved throughput, its
overall response time (ORT, as SPEC SFS defines it) and the curve as a CSV (its figure:
analysis.load_curve_plot).

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
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from workbench.controller.state import load_key
from workbench.controller.steadiness import records_as_read
from workbench.controller.trial import record_outcome
from workbench.findings.numbers import finite as _finite

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
