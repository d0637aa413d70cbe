"""Nightly regression ratings: the baselines of config/nightly.yml, each rated and compared with its
history in the store (findings.regression), per R_sat goal when a baseline has several (params
`goals_ms`); the verdicts, a report, and a red run on a regression or NO VERDICT.

    load_config → rate_baseline[b] → compare → needs_rerun → [rerun →] decide → report → verdict

compare judges each baseline's whole stored history with the change-point detector (the per-night
test while it is shorter than MIN_HISTORY nights); a suspected new level is re-rated and decided by
pipeline.nightly_confirm (with the canary of config `canary`, a fixed configuration rated every
night).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.controller.result import goal_results
from workbench.findings.anomalies import history_trend
from workbench.findings.bottleneck import change_text
from workbench.findings.latency_split import split_line
from workbench.findings.load_curve import ort_text
from workbench.findings.regression import compare_to_history, reference_load
from workbench.findings.regression_text import verdict_label, verdict_word
from workbench.params.plan import ParamError, plan_from_params, strict_json
from workbench.params.seeds import seeded
from workbench.params.validation import validate_plans
from workbench.pipeline import nightly_confirm as confirm
from workbench.pipeline.nightly_config import NIGHTLY_SEED_TRIALS, load_nightly_config
from workbench.pipeline.runner import ReportStep, run_rating
from workbench.store.base import Store


def ci_level(spec: Mapping[str, Any], result: Mapping[str, Any] | None = None) -> float:
    """The level of a rating's λ* interval: as the result states it (issue 30), else
    bound_confidence, else confidence (ratings stored before)."""
    stated = (result or {}).get("peak_rate_ci_level")
    return float(stated or spec.get("bound_confidence") or spec.get("confidence") or 0.95)


def nightly_rating(store: Store, rating_id: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """One rating as findings.regression wants it: result, trial records and the CI level."""
    plan = store.get_json(store.spec_key(rating_id), default={}) or {}
    return {
        "result": dict(result),
        "trials": store.trials(rating_id),
        "ci_level": ci_level(plan.get("spec") or {}, result),
    }


def nightly_history(store: Store, name: str, before_night: str) -> list[dict[str, Any]]:
    """The earlier nights of baseline `name` (oldest first), each as `nightly_rating` + its
    night."""
    out = []
    for night, key in store.baseline_nights(name):
        if night < before_night:
            old = store.get_json(key)
            out.append({**nightly_rating(store, old["rating_id"], old["result"]), "night": night})
    return out


def checked_night(
    config_path: str | Path, only: Sequence[str] | None, night: str
) -> tuple[dict[str, Any], list]:
    """The configuration and the selected baselines, each through the whole validation pass."""
    cfg = load_nightly_config(config_path)
    names = [b["name"] for b in cfg["baselines"]]
    if only is not None and (
        not isinstance(only, (list, tuple)) or not all(isinstance(n, str) for n in only)
    ):
        raise ParamError(
            f"only: {only!r} is not allowed; a list of baseline names ({', '.join(names)})"
        )
    missing = [n for n in only or () if n not in names]
    if missing:
        raise ParamError(
            f"only: unknown baseline(s) {', '.join(missing)}; baselines: {', '.join(names)}"
        )
    base = [b for b in cfg["baselines"] if not only or b["name"] in only]
    if not base:
        raise ParamError(f"only: no baseline selected (only={only}); baselines: {', '.join(names)}")
    validate_plans(
        [plan_from_params(b.get("params") or {}, f"nightly__{night}__{b['name']}") for b in base],
        "baseline",
    )
    return cfg, base


def start_night(
    store: Store, config_path: str, only: Sequence[str] | None, night: str
) -> list[dict[str, Any]]:
    """The checked configuration to the store; one job per selected baseline."""
    cfg, base = checked_night(config_path, only, night)
    store.put_json(store.night_config_key(night), cfg)
    return [{"night": night, "baseline": b} for b in base]


def rate_baseline(
    store: Store, night: str, baseline: Mapping[str, Any], report: ReportStep | None = None
) -> dict[str, Any]:
    """Tonight's rating of one baseline, seeded at its reference load with a fixed sample there
    (cheaper, seed 000 §5.4; and the Welch test of `compare` gets a sample where the history has
    one); `report`: the rating's report step (run_rating)."""
    return rate_into(
        store,
        night,
        baseline,
        store.baseline_key(night, baseline["name"]),
        f"nightly__{night}__{baseline['name']}",
        report,
    )


def rate_into(
    store: Store,
    night: str,
    baseline: Mapping[str, Any],
    key: str,
    rating_id: str,
    report: ReportStep | None = None,
) -> dict[str, Any]:
    """rate_baseline's rating as `rating_id`, its record at `key` (tonight's, or a confirming
    re-run)."""
    if store.exists(key):  # a retried task: already rated tonight
        return store.get_json(key)
    params = baseline.get("params") or {}
    plan = plan_from_params(params, rating_id)
    ref = reference_load(nightly_history(store, baseline["name"], night))
    cfg = store.get_json(store.night_config_key(night))
    plan = seeded(plan, ref, cfg.get("seed_trials", NIGHTLY_SEED_TRIALS))
    print(
        f"{baseline['name']}: seed load {plan.spec.get('seed_load')} (baseline reference load "
        f"{ref})"
    )
    res = run_rating(plan, store, report=report)
    rec = {
        "name": baseline["name"],
        "night": night,
        "params": params,
        "rating_id": plan.rating_id,
        "seed_load": plan.spec.get("seed_load"),
        "result": strict_json({k: v for k, v in res.items() if k != "trace"}),
    }
    store.put_json(key, rec)
    return rec


def goal_view(result: Mapping[str, Any], r_sat_ms: float | None) -> dict[str, Any] | None:
    """A rating's result as one of its goals sees it: the shared fields (trials, cost) with that
    goal's λ*, bracket, CI and convergence; None when the rating had no such goal."""
    if r_sat_ms is None:
        return dict(result)
    same = [
        g
        for g in goal_results(result)
        if g.get("r_sat_ms") is not None and float(g["r_sat_ms"]) == r_sat_ms
    ]
    return {**result, **same[0]} if same else None


def curve_text(store: Store, rating_id: str, result: Mapping[str, Any]) -> str | None:
    """The load curve in one phrase for the verdict and its e-mail: the ORT and where its CSV is."""
    if "overall_response_time_ms" not in result:
        return None
    return (
        f"ORT {ort_text(result, [])}, latency against throughput in "
        f"{store.url(store.load_curve_csv_key(rating_id))}"
    )


def compare(store: Store, night: str, records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each baseline's verdict against its history, one per R_sat goal (a goal is compared with the
    earlier nights that rated it); verdicts.json to the store."""
    cfg = store.get_json(store.night_config_key(night))
    report_key = store.nightly_report_key(night)
    verdicts = []
    for rec in sorted(records, key=lambda r: r["name"]):
        history = nightly_history(store, rec["name"], night)
        rating = nightly_rating(store, rec["rating_id"], rec["result"])
        rating_report = store.rating_report_key(rec["rating_id"])
        goals = [g.get("r_sat_ms") for g in goal_results(rec["result"])]
        for goal in goals:
            current = {**rating, "result": goal_view(rec["result"], goal)}
            past = [
                {**h, "result": view}
                for h in history
                if (view := goal_view(h["result"], goal)) is not None
            ]
            v = compare_to_history(
                current, past, tolerance=cfg["tolerance"], confidence=cfg["confidence"]
            ).to_dict()
            v.update(
                name=rec["name"],
                config=rec["params"],
                rating_id=rec["rating_id"],
                r_sat_ms=goal,
                n_goals=len(goals),
                history_nights=[h["night"] for h in past],
                report_url=store.url(rating_report),
                report_href=store.link(report_key, rating_report),
                warnings=night_warnings(past, current, night, cfg["confidence"]),
                bottleneck=change_text(
                    rec["result"].get("bottleneck"),
                    history[-1]["result"].get("bottleneck") if history else None,
                ),
                latency_split=split_line(rec["result"]["latency_split"])
                if "latency_split" in rec["result"]
                else None,
                load_curve=curve_text(store, rec["rating_id"], rec["result"]),
                history=[history_point(h["night"], h["result"], h["ci_level"]) for h in past]
                + [history_point(night, current["result"], current["ci_level"])],
            )
            confirm.judge(
                v,
                v["history"],
                confirm.reported_first_nights(
                    store, night, verdict_label, verdict_label(v), [h["night"] for h in past]
                ),
            )
            print(
                f"{verdict_label(v)}: {'suspect' if v['suspect'] else verdict_word(v)} — "
                f"{v['reason']}"
            )
            verdicts.append(v)
    store.put_json(store.verdicts_key(night), verdicts)
    return verdicts


needs_rerun = confirm.needs_rerun
decide = confirm.decide


def rerun(
    store: Store,
    night: str,
    verdicts: Sequence[Mapping[str, Any]],
    report: ReportStep | None = None,
) -> list[str]:
    """The confirming re-runs of tonight's suspects and the canary (nightly_confirm.rerun), each
    rating with its report step `report`."""
    return confirm.rerun(store, night, verdicts, functools.partial(rate_into, report=report))


def history_point(
    night: str, result: Mapping[str, Any], ci_level: float | None = None
) -> dict[str, Any]:
    """One night of a baseline goal's λ* history (the report's plot, verdicts.json, the
    detector)."""
    return {
        "date": night,
        "peak_rate": result.get("peak_rate"),
        "peak_rate_ci": result.get("peak_rate_ci"),
        "converged": result.get("converged"),
        "ci_level": ci_level,
    }


def night_warnings(
    history: Sequence[Mapping[str, Any]], current: Mapping[str, Any], night: str, confidence: float
) -> list[str]:
    """Tonight's rating's own warnings and a leak-like decline of λ* over the converged nights."""
    nights = [*history, {**current, "night": night}]
    peaks = [r["result"].get("peak_rate") if r["result"].get("converged") else None for r in nights]
    trend = history_trend(peaks, [r["night"] for r in nights], confidence)
    return [w["text"] for w in current["result"].get("warnings") or []] + (
        [trend["text"]] if trend else []
    )


def failures(verdicts: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the night is red (a regression, a lab change, or a rating with no verdict), or None."""
    bad = [v for v in verdicts if v["regression"] or v.get("lab_change") or v.get("inconclusive")]
    return (
        "; ".join(f"{verdict_word(v).lower()}: {verdict_label(v)}: {v['reason']}" for v in bad)
        or None
    )
