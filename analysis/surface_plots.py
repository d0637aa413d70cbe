"""The plots of a response surface: λ* over two factors (measured points, the model's contours) and
an active design's model error against the samples rated."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from matplotlib.colors import Normalize
from matplotlib.ticker import MaxNLocator

from analysis.plots import _ACCENT, _VALID, _figure, _finite, _message, _png


def surface_png(
    points_df: Any,
    factor_x: str,
    factor_y: str,
    fit: Any = None,
    *,
    value: str = "peak_rate",
    code: Callable[[list[dict]], np.ndarray] | None = None,
    grid_n: int = 60,
) -> bytes:
    """λ* over two factors: measured points (labelled) and, with a fitted ``QuadraticModel``
    (workbench.stats.rsm, 2 numeric factors, no dummies), the model surface as filled contours.

    ``code`` maps natural samples [{factor_x: .., factor_y: ..}] to the model's X columns (e.g.
    ``FactorSpace.coded`` when the model was fitted on coded factors); None = natural values.
    """
    for col in (factor_x, factor_y, value):
        if col not in points_df.columns:
            raise ValueError(
                f"surface_png: column {col!r} missing (have {list(points_df.columns)})"
            )
    px = points_df[factor_x].astype(float).to_numpy()
    py = points_df[factor_y].astype(float).to_numpy()
    pz = points_df[value].astype(float).to_numpy()
    fig = _figure((7.0, 5.5))
    ax = fig.add_subplot()
    norm = None
    if fit is not None:
        if getattr(fit, "n_factors", None) != 2 or getattr(fit, "n_dummies", 0):
            raise ValueError(
                "surface_png: fit must be a QuadraticModel over exactly 2 numeric factors"
            )
        axes = (factor_x, px), (factor_y, py)
        norm = _model_contours(fig, ax, fit, axes, code, value, grid_n)
    sc = ax.scatter(
        px, py, c=pz, cmap="viridis", norm=norm, s=90, edgecolors="white", linewidths=1.5, zorder=3
    )
    if fit is None:
        fig.colorbar(sc, ax=ax, label=value)
    _label_points(ax, px, py, pz)
    ax.set_xlabel(factor_x)
    ax.set_ylabel(factor_y)
    ax.set_title(
        f"{value} over {factor_x} × {factor_y}" + (" (points: measured)" if fit is not None else "")
    )
    fig.tight_layout()
    return _png(fig)


def _label_points(ax: Any, px: np.ndarray, py: np.ndarray, pz: np.ndarray) -> None:
    """Each measured point's value beside it, and room for the corner points and their labels."""
    for a, b, z in zip(px, py, pz):
        ax.annotate(
            f"{z:.4g}",
            (a, b),
            xytext=(6, 6),
            textcoords="offset points",
            fontsize=8,
            bbox={"boxstyle": "round,pad=0.2", "fc": "white", "alpha": 0.8},
        )
    for lim, v in ((ax.set_xlim, px), (ax.set_ylim, py)):
        pad = 0.08 * (v.max() - v.min()) or 0.5
        lim(v.min() - pad, v.max() + pad)


def _model_contours(
    fig: Any,
    ax: Any,
    fit: Any,
    axes: tuple[tuple[str, np.ndarray], tuple[str, np.ndarray]],
    code: Callable[[list[dict]], np.ndarray] | None,
    value: str,
    grid_n: int,
) -> Normalize | None:
    """The model's surface over the points' range of the two factors (name, values) as filled
    contours with a colour bar; the contours' colour scale, for the points to share."""
    (factor_x, px), (factor_y, py) = axes
    gx, gy = np.meshgrid(
        np.linspace(px.min(), px.max(), grid_n), np.linspace(py.min(), py.max(), grid_n)
    )
    nat = np.column_stack([gx.ravel(), gy.ravel()])
    X = (
        nat
        if code is None
        else np.asarray(code([{factor_x: a, factor_y: b} for a, b in nat]), float)
    )
    gz = fit.predict(X).reshape(gx.shape)
    cs = ax.contourf(gx, gy, gz, levels=14, cmap="viridis")
    ax.contour(gx, gy, gz, levels=cs.levels, colors="k", linewidths=0.3, alpha=0.5)
    fig.colorbar(cs, ax=ax, label=f"model {value}")
    return cs.norm if isinstance(cs.norm, Normalize) else None  # (contourf's always is)


def curve_png(
    points_df: Any,
    factor: str,
    fit: Any = None,
    *,
    value: str = "peak_rate",
    code: Callable[[list[dict]], np.ndarray] | None = None,
    grid_n: int = 100,
) -> bytes:
    """λ* over one numeric factor (e.g. tenant B's load: the interference curve): measured points
    with their λ* CI (column ``peak_rate_ci``, an open end drawn to the plot's edge) and the fitted
    model's curve (``code`` as in surface_png; other factors at the coder's slice)."""
    x = points_df[factor].astype(float).to_numpy()
    y = points_df[value].astype(float).to_numpy()
    fig = _figure()
    ax = fig.add_subplot()
    if fit is not None:
        gx = np.linspace(x.min(), x.max(), grid_n)
        X = gx[:, None] if code is None else np.asarray(code([{factor: a} for a in gx]), float)
        ax.plot(gx, fit.predict(X), color=_ACCENT, label="model")
    cis = (
        list(points_df["peak_rate_ci"]) if "peak_rate_ci" in points_df.columns else [None] * len(x)
    )
    top = max([*y, *(c[1] for c in cis if c and _finite(c[1]))]) * 1.1
    for a, b, ci in zip(x, y, cis):
        if ci and _finite(ci[0]):
            hi = float(ci[1]) if _finite(ci[1]) else top
            ax.plot([a, a], [float(ci[0]), hi], color=_VALID, alpha=0.5, linewidth=3)
        ax.annotate(f"{b:.4g}", (a, b), xytext=(6, 6), textcoords="offset points", fontsize=8)
    ax.scatter(x, y, color=_VALID, zorder=3, label=f"measured {value} (bar: its CI)")
    ax.set_ylim(bottom=0, top=top)
    ax.set_xlabel(factor)
    ax.set_ylabel(value)
    ax.set_title(f"{value} over {factor}")
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return _png(fig)


def mape_png(by_samples: Sequence[Sequence[Any]], target_pct: float | None = None) -> bytes:
    """Leave-one-out MAPE (%) of the surface model against the number of samples, one point per
    round of an active design ([n, mape or None]: None while LOO is undefined), with the target as a
        line."""
    pts = [(int(n), float(m)) for n, m in by_samples if _finite(m)]
    fig = _figure()
    ax = fig.add_subplot()
    if pts:
        ax.plot([n for n, _ in pts], [m for _, m in pts], "o-", color=_VALID, label="LOO MAPE")
    else:
        _message(ax, "LOO MAPE undefined: no more samples than model terms")
    if _finite(target_pct):
        ax.axhline(
            float(target_pct), color=_ACCENT, ls="--", label=f"target {float(target_pct):g} %"
        )
    undefined = [int(n) for n, m in by_samples if not _finite(m)]
    for j, n in enumerate(undefined):  # rounds with no more samples than model terms
        ax.axvline(n, color="0.75", lw=1.0, label="LOO undefined" if j == 0 else None)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("samples rated")
    ax.set_ylabel("LOO MAPE of λ* (%)")
    ax.set_title("Active design: model error against samples")
    ax.legend(loc="best")
    fig.tight_layout()
    return _png(fig)
