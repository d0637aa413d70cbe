"""Nightly regression ratings: the baselines of config/nightly.yml, each rated and compared with its
history in the store (analysis.regression); the verdicts, a report, and a red run on a regression
or NO VERDICT.

    load_config → rate_baseline[b] → compare → report → verdict
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from analysis.regression import compare_to_history, reference_load
from analysis.report import nightly_report_html
from workbench.config.paths import REPO
from workbench.pipeline.plan import UNSAFE_ID_CHARS, ParamError, plan_from_params, seeded, strict_json
from workbench.pipeline.runner import run_rating
from workbench.pipeline.store import Store

# trials tonight's rating runs at its baseline's reference load: the sample of the nightly Welch test
# (analysis.regression); with 2 (a smoke rating's cap per load) one warm-cache trial among overloaded
# ones decides it, with 4 the drop of tests/dags/test_dags.py's nightly test stays near p = 0.05
NIGHTLY_SEED_TRIALS = 6


def load_nightly_config(path: str | Path) -> dict[str, Any]:
    """config/nightly.yml: tolerance, confidence and the baselines (name + rate_peak params)."""
    p = Path(path)
    if not p.is_absolute():
        p = REPO / p
    try:
        cfg = yaml.safe_load(p.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ParamError(f"nightly config {p}: {e}") from None
    base = cfg.get("baselines")
    if not isinstance(base, list) or not base:
        raise ParamError(f"nightly config {p}: 'baselines' must be a non-empty list")
    names = set()
    for b in base:
        if not isinstance(b, dict) or not isinstance(b.get("name"), str) or not b["name"]:
            raise ParamError(f"nightly config {p}: every baseline needs a name, got {b!r}")
        if b["name"] in names or UNSAFE_ID_CHARS.search(b["name"]):
            raise ParamError(f"nightly config {p}: baseline name {b['name']!r} duplicated or not id-safe")
        names.add(b["name"])
        plan_from_params(b.get("params") or {}, "check")   # fail at load, naming the field
    tol = cfg.get("tolerance", 0.10)
    conf = cfg.get("confidence", 0.95)
    if not (isinstance(tol, (int, float)) and 0 <= tol < 1 and isinstance(conf, (int, float)) and 0.5 <= conf < 1):
        raise ParamError(f"nightly config {p}: tolerance in [0, 1) and confidence in [0.5, 1) required")
    seed_trials = cfg.get("seed_trials", NIGHTLY_SEED_TRIALS)
    if not isinstance(seed_trials, int) or isinstance(seed_trials, bool) or not 2 <= seed_trials <= 20:
        raise ParamError(f"nightly config {p}: seed_trials must be an integer in [2, 20], "
                                  f"got {seed_trials!r}")
    return {"path": str(p), "tolerance": float(tol), "confidence": float(conf), "seed_trials": seed_trials,
            "baselines": base}


def ci_level(spec: Mapping[str, Any]) -> float:
    """The confidence of a rating's λ* CI (search._peak_ci): bound_confidence, else confidence."""
    return float(spec.get("bound_confidence") or spec.get("confidence") or 0.95)


def nightly_rating(store: Store, rating_id: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """One rating as analysis.regression wants it: result, trial records and the CI level."""
    plan = store.get_json(store.rating_key(rating_id, "spec.json"), default={}) or {}
    return {"result": dict(result), "trials": store.trials(rating_id),
            "ci_level": ci_level(plan.get("spec") or {})}


def nightly_history(store: Store, name: str, before_night: str) -> list[dict[str, Any]]:
    """The earlier nights of baseline `name` (oldest first), each as `nightly_rating` + its night."""
    out = []
    for key in sorted(store.list_keys("nightly/")):
        parts = key.split("/")
        if len(parts) == 3 and parts[2] == f"{name}.json" and parts[1] < before_night:
            old = store.get_json(key)
            out.append({**nightly_rating(store, old["rating_id"], old["result"]), "night": parts[1]})
    return out


def start_night(store: Store, config_path: str, only: Sequence[str] | None, night: str) -> list[dict[str, Any]]:
    """The checked configuration to the store; one job per selected baseline."""
    cfg = load_nightly_config(config_path)
    base = [b for b in cfg["baselines"] if not only or b["name"] in only]
    if not base:
        raise ParamError(f"no baseline selected (only={only})")
    store.put_json(store.nightly_key(night, "config.json"), cfg)
    return [{"night": night, "baseline": b} for b in base]


def rate_baseline(store: Store, night: str, baseline: Mapping[str, Any]) -> dict[str, Any]:
    """Tonight's rating of one baseline, seeded at its reference load with a fixed sample there
    (cheaper, seed 000 §5.4; and the Welch test of `compare` gets a sample where the history has one)."""
    key = store.nightly_key(night, f"{baseline['name']}.json")
    if store.exists(key):                          # a retried task: already rated tonight
        return store.get_json(key)
    params = baseline.get("params") or {}
    plan = plan_from_params(params, f"nightly__{night}__{baseline['name']}")
    ref = reference_load(nightly_history(store, baseline["name"], night))
    cfg = store.get_json(store.nightly_key(night, "config.json"))
    plan = seeded(plan, ref, cfg.get("seed_trials", NIGHTLY_SEED_TRIALS))
    print(f"{baseline['name']}: seed load {plan.spec.get('seed_load')} (baseline reference load {ref})")
    res = run_rating(plan, store)
    rec = {"name": baseline["name"], "night": night, "params": params, "rating_id": plan.rating_id,
           "seed_load": plan.spec.get("seed_load"),
           "result": strict_json({k: v for k, v in res.items() if k != "trace"})}
    store.put_json(key, rec)
    return rec


def compare(store: Store, night: str, records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each baseline's verdict against its history; verdicts.json to the store."""
    cfg = store.get_json(store.nightly_key(night, "config.json"))
    report_key = store.nightly_key(night, "report.html")
    verdicts = []
    for rec in sorted(records, key=lambda r: r["name"]):
        history = nightly_history(store, rec["name"], night)
        current = nightly_rating(store, rec["rating_id"], rec["result"])
        v = compare_to_history(current, history, tolerance=cfg["tolerance"],
                               confidence=cfg["confidence"]).to_dict()
        rating_report = store.rating_key(rec["rating_id"], "report.html")
        v.update(name=rec["name"], config=rec["params"], rating_id=rec["rating_id"],
                 history_nights=[h["night"] for h in history], report_url=store.url(rating_report),
                 report_href=store.link(report_key, rating_report))
        print(f"{rec['name']}: {verdict_word(v)} — {v['reason']}")
        verdicts.append(v)
    store.put_json(store.nightly_key(night, "verdicts.json"), verdicts)
    return verdicts


def verdict_word(v: Mapping[str, Any]) -> str:
    return "REGRESSION" if v["regression"] else "NO VERDICT" if v.get("inconclusive") else "ok"


def report(store: Store, night: str, verdicts: Sequence[Mapping[str, Any]]) -> str:
    """The night's HTML report to the store; returns its URL."""
    key = store.nightly_key(night, "report.html")
    store.put_bytes(key, nightly_report_html(night, verdicts, {}).encode(), "text/html; charset=utf-8")
    return store.url(key)


def failures(verdicts: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the night is red (a regression, or a rating with no verdict), or None."""
    bad = [v for v in verdicts if v["regression"] or v.get("inconclusive")]
    return "; ".join(f"{verdict_word(v).lower()}: {v['name']}: {v['reason']}" for v in bad) or None
