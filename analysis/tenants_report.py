"""Both tenants in the rating's report: tenant B's table by A's load and the plot of both tenants'
mean response times (findings.tenants: the figures)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analysis import plots as _plots
from workbench.findings.tenants import _bg

BACKGROUND_HEADERS = (
    "A load ops/s",
    "A trials",
    "A mean ms (median)",
    "B offered ops/s",
    "B achieved ops/s (median)",
    "B mean ms (median)",
    "B p95 ms (median)",
    "B errors + timeouts",
)


def _n(x: Any, fmt: str = ".4g") -> str:
    return format(float(x), fmt) if _plots._finite(x) else "—"


def background_rows(result: Mapping[str, Any]) -> list[list[str]]:
    """The report's table rows of result["background"]["by_load"]."""
    return [
        [
            _n(r["load_ops_s"]),
            str(r["n"]),
            _n(r["a_mean_ms"], ".3g"),
            _n(r["b_offered_ops_s"]),
            _n(r["b_achieved_ops_s"]),
            _n(r["b_mean_ms"], ".3g"),
            _n(r["b_p95_ms"], ".3g"),
            str(r["b_errors"]),
        ]
        for r in (result.get("background") or {}).get("by_load") or ()
    ]


def tenants_png(
    trials: Sequence[Mapping[str, Any]], result: Mapping[str, Any], spec: Mapping[str, Any]
) -> bytes:
    """Mean response time of both tenants against A's offered load, one point per valid trial (A:
    the rated workload, B: the background tenant at its fixed load), with R_sat and λ*."""
    fig = _plots._figure()
    ax = fig.add_subplot(1, 1, 1)
    # (load, A's mean, B's figures); a mean may be None (matplotlib leaves a gap)
    pts: list[tuple[float, Any, Any]] = [
        (float(t["load_ops_s"]), t.get("mean_ms"), _bg(t))
        for t in trials
        if t.get("valid") and _bg(t)
    ]
    if not pts:
        _plots._message(ax, "no valid trial with tenant B's figures")
        return _plots._png(fig)
    bg = result.get("background") or {}
    ax.scatter(
        [p[0] for p in pts],
        [p[1] for p in pts],
        color=_plots._VALID,
        label="A (rated) mean",
        zorder=3,
    )
    ax.scatter(
        [p[0] for p in pts],
        [p[2].get("mean_ms") for p in pts],
        color="#ff7f0e",
        marker="s",
        label=f"B mean ({bg.get('workload', '?')} at {_n(bg.get('ops_s'))} ops/s)",
        zorder=3,
    )
    r_sat = result.get("r_sat_ms", _plots.rating_spec(spec).get("r_sat_ms"))
    if _plots._finite(r_sat):
        ax.axhline(
            float(r_sat), color=_plots._ACCENT, linestyle="--", label=f"R_sat {float(r_sat):g} ms"
        )
    if _plots._finite(result.get("peak_rate")):
        ax.axvline(
            float(result["peak_rate"]),
            color="grey",
            linestyle=":",
            label=f"λ*_A {float(result['peak_rate']):.4g}",
        )
    ax.set_yscale("log")
    ax.set_xlabel("A's offered load (ops/s)")
    ax.set_ylabel("mean response time (ms)")
    ax.set_title("Shared tenants: A rated beside B's fixed load")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    return _plots._png(fig)
