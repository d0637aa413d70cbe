"""What a DAG run rated, as one small HTML page: the Airflow UI's "Why λ*" tab beside the run
(plugins/workbench_ui.py serves it; issue 50).

`run_ratings(store, dag_id, run_id)` finds the run's ratings from its ids, as the DAGs derive them:
  rate_peak (or any DAG whose run is one rating)  rating_id_for(dag_id, run_id)
  map_surface           the sweep rating_id_for(dag_id, run_id): its samples' ratings, from the
                        sweep's plan, its rounds and its rated samples
  nightly_regression    the night in the run id: each baseline's rating and its confirming re-run
`rating_html` draws one rating: λ* with its interval, converged and why, the bottleneck verdict, the
latency split, every PNG of its plots (the load curve and the utilization first) and a link to its
report; a rating without a result yet says so with its trials so far. A sweep or a night lists its
ratings, each linked to its own page. Every text from the store is escaped and the page has no
script. Links go through `Links`: the caller serves the store's objects under its own URLs, and
only those `servable` allows (a PNG, an HTML report or a CSV of this run's ratings, sweep or night).
"""

from __future__ import annotations

import html
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.findings.latency_split import split_line
from workbench.findings.peak_interval import peak_statement
from workbench.output.console import fmt_num
from workbench.params.plan import night_of, rating_id_for
from workbench.store.base import Store, check_key

SWEEP_DAG, NIGHT_DAG, RATING_DAG = "map_surface", "nightly_regression", "rate_peak"
SERVED_TYPES = {
    ".png": "image/png",
    ".html": "text/html; charset=utf-8",
    ".csv": "text/csv; charset=utf-8",
}
# the curve and the telemetry, before the others
FIRST_PLOTS = ("load_curve.png", "utilization.png")
STYLE = (
    "body{font:14px/1.45 system-ui,sans-serif;margin:1rem 1.5rem;color:#222}"
    "th{text-align:left;padding:.2rem 1rem .2rem 0;vertical-align:top;white-space:nowrap}"
    "td{padding:.2rem 1rem .2rem 0;vertical-align:top}table{border-collapse:collapse}"
    "img{max-width:100%;display:block;margin:.5rem 0 1rem}.no{color:#a40}.muted{color:#666}"
)


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


@dataclass(frozen=True)
class RunRatings:
    """The ratings of one DAG run. kind: rating | sweep | night | none (the run rates nothing)."""

    dag_id: str
    run_id: str
    kind: str
    subject: str = ""  # the rating id, the sweep id or the night
    rating_ids: tuple[str, ...] = ()
    report_key: str | None = None  # a sweep's or a night's own report
    pending: tuple[str, ...] = ()  # a night's baselines without a record yet
    note: str = ""  # kind none: why there is no rating

    def prefixes(self, store: Store) -> tuple[str, ...]:
        """The store prefixes whose objects belong to this run."""
        own = (
            (store.surface_prefix(self.subject),)
            if self.kind == "sweep"
            else (store.nightly_prefix(self.subject),)
            if self.kind == "night"
            else ()
        )
        return own + tuple(store.rating_prefix(r) for r in self.rating_ids)


@dataclass(frozen=True)
class Links:
    """Where the page points: `obj(key)` serves a store object, `rating(rating_id)` one rating's
    page."""

    obj: Callable[[str], str]
    rating: Callable[[str], str]
    run: str = ""  # the run's own page (a sweep's or a night's list)


def _unique(ids: list[Any]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in ids if isinstance(i, str) and i))


def sweep_rating_ids(store: Store, sweep_id: str) -> tuple[str, ...]:
    """The sweep's ratings: first round's plan, the later rounds' jobs, then the rated samples."""
    plan = store.get_json(store.sweep_plan_key(sweep_id), None) or {}
    ids = [((s.get("plan") or {}).get("rating_id")) for s in plan.get("samples") or []]
    for key in store.round_keys(sweep_id):
        ids += [
            ((it.get("plan") or {}).get("rating_id"))
            for it in (store.get_json(key, None) or {}).get("items") or []
        ]
    ids += [(store.get_json(k, None) or {}).get("rating_id") for k in store.sample_keys(sweep_id)]
    return _unique(ids)


def night_ratings(store: Store, night: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(rating ids, baselines still rating) of a night: each configured baseline's record, then the
    confirming re-runs its verdicts name."""
    cfg = store.get_json(store.night_config_key(night), None) or {}
    ids, pending = [], []
    for b in cfg.get("baselines") or []:
        rec = (
            store.get_json(store.baseline_key(night, b.get("name", "")), None)
            if b.get("name")
            else None
        )
        (ids.append(rec.get("rating_id")) if rec else pending.append(str(b.get("name"))))
    for v in store.get_json(store.verdicts_key(night), None) or []:
        ids.append((v.get("rerun") or {}).get("rating_id") if isinstance(v, dict) else None)
    return _unique(ids), tuple(pending)


def run_ratings(store: Store, dag_id: str, run_id: str) -> RunRatings:
    """The ratings of DAG run `run_id` of `dag_id` (see the module docstring)."""
    if dag_id == SWEEP_DAG:
        sid = rating_id_for(dag_id, run_id)
        return RunRatings(
            dag_id,
            run_id,
            "sweep",
            sid,
            sweep_rating_ids(store, sid),
            store.surface_report_key(sid),
        )
    if dag_id == NIGHT_DAG:
        try:
            night = night_of(None, run_id)
        except ValueError:
            return RunRatings(
                dag_id, run_id, "none", note=f"run {run_id} names no night (YYYY-MM-DD)"
            )
        ids, pending = night_ratings(store, night)
        return RunRatings(
            dag_id, run_id, "night", night, ids, store.nightly_report_key(night), pending
        )
    rid = rating_id_for(dag_id, run_id)
    if dag_id == RATING_DAG or any(
        store.exists(k) for k in (store.spec_key(rid), store.result_key(rid))
    ):
        return RunRatings(dag_id, run_id, "rating", rid, (rid,))
    return RunRatings(
        dag_id,
        run_id,
        "none",
        note=f"DAG {dag_id} stored no rating for this run "
        f"(its runs are not ratings: nothing to show here)",
    )


def servable(store: Store, runs: RunRatings, key: str) -> str | None:
    """The content type of `key` if the page may serve it: a PNG, HTML or CSV object of this run."""
    kind = SERVED_TYPES.get(posixpath.splitext(key)[1])
    try:
        check_key(key)  # no "..", ".", "//" or leading "/"
    except ValueError:
        return None
    return kind if kind and any(key.startswith(p) for p in runs.prefixes(store)) else None


def trial_count(store: Store, rating_id: str) -> int:
    """How many trial records the rating has (a listing, no record read)."""
    return sum(1 for k in store.list_keys(store.trials_prefix(rating_id)) if k.endswith(".json"))


def plot_keys(store: Store, rating_id: str) -> list[str]:
    """Every PNG under the rating's plots, the load curve and the utilization first."""
    prefix = store.rating_plot_key(rating_id, "")
    keys = [k for k in store.list_keys(prefix) if k.endswith(".png")]
    first = [prefix + n for n in FIRST_PLOTS if prefix + n in keys]
    return first + sorted(k for k in keys if k not in first)


def _rows(rows: list[tuple[str, Any]]) -> str:
    return (
        "<table>"
        + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
        + "</table>"
    )


def _result(store: Store, rating_id: str) -> dict[str, Any] | None:
    res = store.get_json(store.result_key(rating_id), None)
    return res if isinstance(res, dict) else None


def _verdict(res: Mapping[str, Any]) -> str:
    b = res.get("bottleneck")
    return (
        str(b.get("line"))
        if isinstance(b, dict) and b.get("line")
        else "not recorded for this rating"
    )


def _split(res: Mapping[str, Any]) -> str:
    split = res.get("latency_split")
    return (split_line(split) or "—") if isinstance(split, dict) else "not recorded for this rating"


def no_result_line(store: Store, rating_id: str) -> str:
    """One line for a rating without a result: its trials so far."""
    n = trial_count(store, rating_id)
    if n == 0 and not store.exists(store.spec_key(rating_id)):
        return (
            f"No rating yet: nothing stored for rating {rating_id} (the run has not reached "
            "its first trial)."
        )
    return (
        f"No rating yet: rating {rating_id} has {n} trial{'s' * (n != 1)} so far "
        f"(the run is still rating, or stopped before its result)."
    )


def rating_html(store: Store, rating_id: str, links: Links) -> str:
    """One rating: its headline, verdict lines, plots and report link (or the no-result line)."""
    res = _result(store, rating_id)
    head = f"<h2>Rating {_e(rating_id)}</h2>"
    if res is None:
        return f'{head}<p class="no">{_e(no_result_line(store, rating_id))}</p>'
    converged = "yes" if res.get("converged") else "no"
    rows = _rows(
        [
            ("λ*", peak_statement(res)),
            ("converged", f"{converged} — {res.get('reason') or 'no reason recorded'}"),
            ("bottleneck", _verdict(res)),
            ("latency split", _split(res)),
            (
                "trials",
                f"{res.get('n_trials', '—')} at {res.get('n_loads', '—')} loads, "
                f"{fmt_num(res.get('cost_s'), '.0f')} s of measurement",
            ),
        ]
    )
    report = store.rating_report_key(rating_id)
    link = (
        f'<p><a href="{_e(links.obj(report))}">The full report</a> (per-operation tables, every '
        f"trial, the server's telemetry)</p>"
        if store.exists(report)
        else '<p class="muted">No report stored yet.</p>'
    )
    imgs = "".join(
        f'<img alt="{_e(posixpath.basename(k))}" src="{_e(links.obj(k))}">'
        for k in plot_keys(store, rating_id)
    )
    return head + rows + link + (imgs or '<p class="muted">No plots stored.</p>')


def _row_of(store: Store, rating_id: str, links: Links) -> str:
    res = _result(store, rating_id)
    name = f'<a href="{_e(links.rating(rating_id))}">{_e(rating_id)}</a>'
    if res is None:
        return (
            f'<tr><td>{name}</td><td colspan="3" '
            f'class="no">{_e(no_result_line(store, rating_id))}</td></tr>'
        )
    converged = "yes" if res.get("converged") else f"no — {res.get('reason') or ''}"
    return (
        f"<tr><td>{name}</td><td>{_e(peak_statement(res))}</td><td>{_e(converged)}</td>"
        f"<td>{_e(_verdict(res))}</td></tr>"
    )


def list_html(store: Store, runs: RunRatings, links: Links) -> str:
    """A sweep's or a night's ratings, one row each, and its own report."""
    what = {"sweep": f"Sweep {runs.subject}", "night": f"Night {runs.subject}"}[runs.kind]
    parts = [
        f"<h2>{_e(what)}: {len(runs.rating_ids)} rating{'s' * (len(runs.rating_ids) != 1)}</h2>"
    ]
    if runs.rating_ids:
        parts.append(
            "<table><tr><th>rating</th><th>λ*</th><th>converged</th><th>bottleneck</th></tr>"
            + "".join(_row_of(store, r, links) for r in runs.rating_ids)
            + "</table>"
        )
    else:
        parts.append(
            f'<p class="no">{_e("No rating yet: the run has not planned or rated any sample.")}</p>'
            if runs.kind == "sweep"
            else f'<p class="no">{_e("No rating yet: no baseline of this night has a record.")}</p>'
        )
    if runs.pending:
        parts.append(
            f'<p class="muted">{_e("Still rating (no record yet): " + ", ".join(runs.pending))}</p>'
        )
    if runs.report_key and store.exists(runs.report_key):
        parts.append(
            f'<p><a href="{_e(links.obj(runs.report_key))}">The {_e(runs.kind)}\'s report</a></p>'
        )
    return "".join(parts)


def page_html(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f"<style>{STYLE}</style></head><body>{body}</body></html>"
    )


def run_html(store: Store, runs: RunRatings, links: Links, rating: str | None = None) -> str:
    """The whole page of a run; `rating`: one of a sweep's or a night's ratings instead of the
    list."""
    head = f'<p class="muted">{_e(runs.dag_id)} · run {_e(runs.run_id)}</p>'
    if runs.kind == "none":
        body = f"<p>{_e(runs.note)}</p>"
    elif runs.kind == "rating":
        body = rating_html(store, runs.subject, links)
    elif rating is not None and rating not in runs.rating_ids:
        body = f"<p>{_e('Rating ' + rating + ' is not one of the ratings of this run.')}</p>"
    elif rating is not None:
        back = (
            f'<p><a href="{_e(links.run)}">← all ratings of this run</a></p>' if links.run else ""
        )
        body = back + rating_html(store, rating, links)
    else:
        body = list_html(store, runs, links)
    return page_html(f"Why λ* — {runs.dag_id} {runs.run_id}", head + body)


__all__ = [
    "Links",
    "RunRatings",
    "plot_keys",
    "rating_html",
    "run_html",
    "run_ratings",
    "servable",
    "trial_count",
]
