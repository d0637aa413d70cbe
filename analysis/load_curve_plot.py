"""The load curve's figure in the rating's report (findings.load_curve: its rows, its ORT, its
CSV)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from analysis.plots import _ACCENT, _INVALID, _VALID, _figure, _finite, _message, _png
from workbench.findings.load_curve import counted_records, curve_rows, ort_of

CAPTION = (
    "Response time against achieved throughput: one point per offered load, the mean of its valid "
    "trials (filled: in the ORT, the loads that met the latency goal up to the peak throughput; "
    "hollow: not in it); light dots: the valid trials; λ* marked at its offered load."
)


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
