"""A rating's steps after its last trial (pipeline.steps: the ones before): the trials validated
(great_expectations), the result summarised with what the findings make of the log, and the trial
log published as Parquet. The report step between the last two is analysis.rating_report's (the
entry points and the DAG tasks pass it to run_rating)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from workbench.controller.decide import Done, decide
from workbench.controller.result import PeakResult
from workbench.controller.trial import TrialResult
from workbench.findings.anomalies import rating_warnings
from workbench.findings.bottleneck import verdict as bottleneck_verdict
from workbench.findings.latency_split import rating_split
from workbench.findings.load_curve import rating_ort_ms
from workbench.findings.tenants import background_result
from workbench.findings.validate import validate_trials
from workbench.measure.telemetry_series import table_rows
from workbench.params.plan import RatingPlan, strict_json
from workbench.pipeline.steps import trial_records
from workbench.store.base import PARQUET_TYPE, Store


def validate_step(plan: RatingPlan, store: Store) -> dict[str, Any]:
    """great_expectations on the trial batch; gx.json to the store."""
    records = store.trials(plan.rating_id)
    res = validate_trials(records).to_dict()
    store.put_json(store.gx_key(plan.rating_id), res)
    return res


def summarise_step(
    plan: RatingPlan, store: Store, validation: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The result of the log with GX-excluded trials marked invalid (their reasons kept)."""
    excluded = {int(k): v for k, v in ((validation or {}).get("excluded") or {}).items()}
    records = trial_records(store, plan.rating_id)
    log: list[TrialResult] = []
    for t in map(TrialResult.from_dict, records):
        n = len(log)
        if n in excluded and t.valid:
            t = dataclasses.replace(t, valid=False, reason=excluded[n])
        log.append(t)
    d = decide(plan.rating_spec(), log)
    if isinstance(d, Done):
        res = d.result
    else:  # exclusions reopened the search
        res = _unfinished(
            plan,
            log,
            f"not converged: after validation the controller wants "
            f"another trial at {d.load_ops_s:g} ops/s ({d.reason})",
        )
    out = res.to_dict()
    out.update(
        rating_id=plan.rating_id,
        workload=plan.workload,
        workload_factors=plan.workload_factors,
        workload_text=plan.workload_source(),
        slot=plan.slot,
        factors=plan.factors,
        pack_factors=plan.pack_factors,
        external=plan.external,
        profile=plan.profile,
        n_excluded_gx=len(excluded),
        finished_unix=time.time(),
    )
    _add_findings(plan, res, out, records)
    out.update(measured_cost(store, plan.rating_id, records, out["cost_s"], out["finished_unix"]))
    out = strict_json(out)
    store.put_json(store.result_key(plan.rating_id), out)
    return out


def _add_findings(
    plan: RatingPlan, res: PeakResult, out: dict[str, Any], records: list[dict[str, Any]]
) -> None:
    """What the findings make of the log, into the result `out`, each verdict reading it as it
    stands: Auto-pilot's warnings (seed 001) on the trials as decide read them, tenant B's
    figures, the bottleneck, SPEC SFS's ORT (findings.load_curve) and the latency split."""
    seen = [
        {"n": i, "load_ops_s": t.load_ops_s, "mean_ms": t.mean_ms, "valid": t.valid}
        for i, t in enumerate(res.trials)
    ]
    out.update(rating_warnings(seen, plan.rating_spec().confidence))
    if plan.background:
        out["background"] = background_result(plan.background, records)
    out["bottleneck"] = bottleneck_verdict(out, records)
    out["overall_response_time_ms"] = rating_ort_ms(out, records)
    out["latency_split"] = rating_split(out, records)


def measured_cost(
    store: Store, rating_id: str, records: list[dict[str, Any]], spec_cost_s: float, end_unix: float
) -> dict[str, Any]:
    """cost_s: the rating's measured wall time, from the start of provisioning (or of its first
    trial) to its summary, with the breakdown: provision, deploy (with the warm-up trial), trials
    (each from its playbook's start to its end), and the rest — orchestration: decisions, store
    writes, scheduling between tasks, and any wait of a resumed rating. cost_spec_s: the
    controller's account (runlength + trial_overhead_s per trial), which the budget is spent in."""
    steps = {
        s: store.get_json(store.timing_key(rating_id, s), None) for s in ("provision", "deploy")
    }
    trials = [r for r in records if isinstance(r.get("wall_s"), (int, float))]
    starts = [t["start_unix"] for t in steps.values() if t] + [r["started_unix"] for r in trials]
    if not starts:  # a rating recorded before timings were kept
        return {"cost_spec_s": spec_cost_s, "cost_breakdown_s": None}
    parts = {s: (t["wall_s"] if t else 0.0) for s, t in steps.items()}
    parts["trials"] = float(sum(r["wall_s"] for r in trials))
    total = max(end_unix - min(starts), sum(parts.values()))
    parts["orchestration"] = total - sum(parts.values())
    return {"cost_s": total, "cost_spec_s": spec_cost_s, "cost_breakdown_s": parts}


def _unfinished(plan: RatingPlan, log: list[TrialResult], reason: str) -> PeakResult:
    spec = dataclasses.replace(plan.rating_spec(), max_trials=max(len(log), 1))
    d = decide(spec, log)
    res = d.result if isinstance(d, Done) else None
    if res is None:
        raise RuntimeError(reason)
    return dataclasses.replace(res, converged=False, reason=reason)


def publish_step(plan: RatingPlan, store: Store) -> dict[str, str]:
    """trials.parquet beside the JSON trial log, and telemetry.parquet (each trial's server
    telemetry, when it has any); returns the S3 locations."""
    import pandas as pd

    rid = plan.rating_id
    pq = store.write_trials_parquet(rid)
    rows = table_rows(store.trials(rid))
    tel = (
        store.put_bytes(
            store.telemetry_parquet_key(rid),
            pd.DataFrame(rows).to_parquet(index=False),
            PARQUET_TYPE,
        )
        if rows
        else None
    )
    return {
        "rating": store.url(store.rating_prefix(rid)),
        "result": store.url(store.result_key(rid)),
        "report": store.url(store.rating_report_key(rid)),
        "trials": store.url(pq),
        "load_curve": store.url(store.load_curve_csv_key(rid)),
        **({"telemetry": store.url(tel)} if tel else {}),
        "local_report": str(plan.local_dir() / "report.html"),
    }
