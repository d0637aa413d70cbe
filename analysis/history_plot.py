"""The nightly report's λ* history of a baseline: λ* per night with its CI, tonight highlighted, a
change point marked (PNG bytes)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from analysis.plots import _ACCENT, _INVALID, _VALID, _figure, _finite, _message, _png


def _label(v: Any) -> str:
    if isinstance(v, (datetime, date)):
        return v.strftime("%Y-%m-%d")
    return str(v)[:16]


def _ci(row: Mapping[str, Any]) -> tuple[float, float]:
    ci = row.get("peak_rate_ci")
    if isinstance(ci, (list, tuple)) and len(ci) == 2:  # an open end (None) draws no bar
        lo, hi = (float(x) if x is not None else math.nan for x in ci)
        return lo, hi
    return float(row.get("ci_lo", math.nan)), float(row.get("ci_hi", math.nan))


def _change_marks(
    ax: Any, rows: Sequence[Mapping[str, Any]], change: Mapping[str, Any] | None
) -> None:
    """A dashed line before the first night of the new level, the levels before and after it as
    steps."""
    if not change:
        return
    dates = [str(r.get("date")) for r in rows]
    if change.get("first_night") not in dates:
        return
    i = dates.index(change["first_night"])
    ax.axvline(
        i - 0.5, color=_INVALID, ls="--", lw=1, label=f"new level from {change['first_night']}"
    )
    ax.hlines(
        [change.get("before"), change.get("after")],
        [-0.5, i - 0.5],
        [i - 0.5, len(rows) - 0.5],
        colors=[_VALID, _INVALID],
        lw=1,
        alpha=0.7,
    )
    ax.legend(loc="best", fontsize=8)


def history_png(
    history_rows: Sequence[Mapping[str, Any]],
    current: Mapping[str, Any] | None = None,
    title: str = "λ* history",
    change: Mapping[str, Any] | None = None,
) -> bytes:
    """λ* per night (rows: ``date``, ``peak_rate`` and ``peak_rate_ci`` or ``ci_lo``/``ci_hi``),
    with CI bars; ``current`` (same keys) is drawn last and highlighted; ``change``
    (``first_night``, ``before``, ``after``: a change point) is marked."""
    rows = list(history_rows) + ([current] if current else [])
    fig = _figure()
    ax = fig.add_subplot()
    if not rows:
        _message(ax, "no history")
    for i, r in enumerate(rows):
        p = float(r.get("peak_rate", math.nan))
        if not _finite(p):
            continue
        lo, hi = _ci(r)
        err = [[p - lo], [hi - p]] if _finite(lo, hi) else None
        is_cur = current is not None and i == len(rows) - 1
        ax.errorbar(
            [i],
            [p],
            yerr=err,
            fmt="o",
            capsize=4,
            color=(_INVALID if r.get("regression") else _ACCENT) if is_cur else _VALID,
            ms=8 if is_cur else 5,
        )
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(
        [_label(r.get("date", i)) for i, r in enumerate(rows)], rotation=30, ha="right", fontsize=8
    )
    _change_marks(ax, rows, change)
    ax.set_ylabel("λ* (ops/s)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return _png(fig)
