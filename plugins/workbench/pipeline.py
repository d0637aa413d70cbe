"""One rating as resumable steps over the results store — what the Airflow tasks call.

The DAG files only wire these functions. Every step re-reads what it needs from the store (the
trial log is ``ratings/<rating_id>/trials/<n>.json``), so a task that is retried after a crash, or
a scheduler that restarts, neither loses nor repeats a trial:

    plan_from_params → lease_slot → provision → deploy → (decide_step k → trial_step k)* →
    validate_step → summarise_step → report_step → publish_step → teardown_step

``run_rating`` runs the same steps in one process (the mapped samples of ``map_surface`` and the
baselines of ``nightly_regression``: Airflow 3.3.2 ignores branch skips inside mapped task groups,
apache/airflow#67265, so the per-trial branch loop lives only in ``rate_peak``).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from workbench.cli import FSTRESS, PROFILES, REPO
from workbench.harness import AnsibleHarness, factor_vars
from workbench.search import Done, NextTrial, PeakResult, RatingSpec, decide
from workbench.trial import TrialResult

WORKDIR = Path(os.environ.get("WB_WORKDIR", "/tmp/workbench"))
LEASES = WORKDIR / "leases"
SLOTS = tuple(os.environ.get("WB_SLOTS", "slot1,slot2").split(","))    # inventory groups of the SUT slots
LEASE_STALE_S = 1800.0        # a lease whose rating wrote nothing for this long is abandoned
MAX_TRIAL_TASKS = 40          # trial_k tasks unrolled in rate_peak; max_trials may not exceed it
CANNED_WORKLOADS = ("web_server", "web_proxy", "db_tp", "mail", "news", "specsfs97", "p2p")
POLICIES = ("binsearch", "linear", "model", "safeguarded")
SEED_SOURCES = ("none", "load", "history")

# Params of a rating: name → (JSON-schema type, constraints, help). The DAG's UI form is built from
# this table and `plan_from_params` checks the same bounds (dag.test and the CLI skip the UI).
PARAMS: dict[str, dict[str, Any]] = {
    "workload": dict(type="string", enum=list(CANNED_WORKLOADS), default="web_server",
                     description="fstress workload (seed 003 Table 2)"),
    "profile": dict(type="string", enum=sorted(PROFILES), default="quick",
                    description="defaults for everything left empty: quick (minutes), smoke (tests), standard"),
    "slot": dict(type="string", enum=["auto", *SLOTS], default="auto",
                 description="workbench slot (SUT + load host); auto = the first free one"),
    "fs": dict(type=["null", "string"], enum=[None, "ext4", "xfs", "btrfs", "tmpfs"], default=None,
               description="file system of the export"),
    "disks": dict(type=["null", "integer"], minimum=1, maximum=8, default=None,
                  description="throttled loop-device disks (btrfs raid0 when > 1)"),
    "memory_mb": dict(type=["null", "integer"], minimum=0, maximum=16384, default=None,
                      description="server memory limit (MiB, bounds its page cache); 0 = unlimited, else ≥ 96"),
    "read_iops": dict(type=["null", "integer"], minimum=0, maximum=100000, default=None,
                      description="read IOPS of each disk (cgroup blkio); 0 = unthrottled"),
    "threads": dict(type=["null", "integer"], minimum=1, maximum=512, default=None,
                    description="server threads (Ganesha RPC_Ioq_ThrdMax)"),
    "sync": dict(type=["null", "boolean"], default=None, description="sync exports (stable writes)"),
    "cache_policy": dict(type=["null", "string"], enum=[None, "keep", "drop", "restart"], default=None,
                         description="server cache between trials"),
    "r_sat_ms": dict(type=["null", "number"], exclusiveMinimum=0, maximum=100000, default=None,
                     description="R_sat: mean response time threshold (ms)"),
    "l_sat_ms": dict(type=["null", "number"], exclusiveMinimum=0, maximum=1000000, default=None,
                     description="L_sat: p95 threshold (ms)"),
    "width": dict(type=["null", "number"], exclusiveMinimum=0, maximum=0.9, default=None,
                  description="s: half-width of the peak-rate region, fraction of R_sat"),
    "confidence": dict(type=["null", "number"], minimum=0.5, maximum=0.999, default=None,
                       description="c: confidence level"),
    "accuracy": dict(type=["null", "number"], minimum=0.1, maximum=0.999, default=None,
                     description="a: accuracy target (Eq. 2)"),
    "policy": dict(type=["null", "string"], enum=[None, *POLICIES], default=None,
                   description="search policy"),
    "runlength_s": dict(type=["null", "number"], minimum=1, maximum=3600, default=None,
                        description="runlength of a trial (s)"),
    "budget_s": dict(type=["null", "number"], minimum=10, maximum=604800, default=None,
                     description="cost cap: Σ runlengths + overheads (s)"),
    "max_trials": dict(type=["null", "integer"], minimum=2, maximum=MAX_TRIAL_TASKS, default=None,
                       description=f"trial cap (≤ {MAX_TRIAL_TASKS}, the unrolled trial tasks)"),
    "seed_source": dict(type="string", enum=list(SEED_SOURCES), default="none",
                        description="seeding: none, load (seed_load), history (last λ* of this configuration)"),
    "seed_load": dict(type=["null", "number"], exclusiveMinimum=0, maximum=1e7, default=None,
                      description="seed load (ops/s) when seed_source = load"),
}
FACTOR_PARAMS = ("fs", "disks", "memory_mb", "read_iops", "threads", "sync", "cache_policy")
SPEC_PARAMS = ("r_sat_ms", "l_sat_ms", "width", "confidence", "accuracy", "policy", "runlength_s",
               "budget_s", "max_trials")
_ID_RE = re.compile(r"[^A-Za-z0-9._-]+")


class ParamError(ValueError):
    """Bad rating parameters: the message names the parameter and what is allowed."""


def rating_id_for(dag_id: str, run_id: str) -> str:
    """Deterministic, store-safe id of the rating a DAG run makes (retries reuse it)."""
    rid = _ID_RE.sub("_", f"{dag_id}__{run_id}").strip("._-")
    return rid[:128]


def strict_json(obj: Any) -> Any:
    """obj with NaN/±inf replaced by None: XCom and strict JSON readers refuse them."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    return obj


def open_store() -> Any:
    """The results store: Airflow connection `workbench_s3`, else WB_S3_*, else the local MinIO."""
    from workbench.store import ResultsStore, S3Config
    store = ResultsStore(S3Config.resolve())
    store.ensure_bucket()          # fails fast, naming endpoint and bucket, when MinIO is down
    return store


# ----------------------------------------------------------------------------- plan

@dataclass(frozen=True)
class RatingPlan:
    """Everything one rating needs, as plain data (XCom / JSON round trip)."""

    rating_id: str
    workload: str
    profile: str
    slot: str                      # "auto" until lease_slot picks one
    factors: dict[str, Any]
    spec: dict[str, Any]           # RatingSpec fields
    warmup_s: float
    fileset_rate: float
    warmup_trial_s: float = 0.0    # a discarded trial after deploy (0 = none)
    extravars: dict[str, Any] = field(default_factory=dict)
    seed_source: str = "none"
    inventory: str = field(default_factory=lambda: os.environ.get(
        "WB_INVENTORY", str(REPO / "inventory" / "local" / "hosts.yml")))   # compose: inventory/compose

    def rating_spec(self) -> RatingSpec:
        return RatingSpec(**self.spec)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RatingPlan":
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})

    def with_slot(self, slot: str) -> "RatingPlan":
        return dataclasses.replace(self, slot=slot)


def _check_param(name: str, value: Any) -> None:
    schema = PARAMS[name]
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if value is None:
        if "null" not in types:
            raise ParamError(f"{name}: a value is required")
        return
    ok = {"string": isinstance(value, str), "boolean": isinstance(value, bool),
          "integer": isinstance(value, int) and not isinstance(value, bool),
          "number": isinstance(value, (int, float)) and not isinstance(value, bool)}
    if not any(ok.get(t, False) for t in types if t != "null"):
        want = " or ".join(t for t in types if t != "null")
        raise ParamError(f"{name}: expected {want}, got {type(value).__name__} {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(str(v) for v in schema["enum"] if v is not None)
        raise ParamError(f"{name}: {value!r} is not one of {allowed}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ParamError(f"{name}: must be finite, got {value!r}")
        lo, hi = schema.get("minimum"), schema.get("maximum")
        xlo = schema.get("exclusiveMinimum")
        if (lo is not None and value < lo) or (hi is not None and value > hi) or (xlo is not None and value <= xlo):
            lo_s = f"> {xlo:g}" if xlo is not None else f"≥ {lo:g}" if lo is not None else ""
            raise ParamError(f"{name}: {value!r} is out of range ({lo_s}{', ' if lo_s and hi is not None else ''}"
                             f"{'≤ ' + format(hi, 'g') if hi is not None else ''})")


def plan_from_params(params: Mapping[str, Any], rating_id: str) -> RatingPlan:
    """Check every parameter and build the plan; raises ParamError naming the first bad one."""
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise ParamError(f"unknown parameter(s): {', '.join(unknown)}; known: {', '.join(PARAMS)}")
    p = {k: params.get(k, PARAMS[k].get("default")) for k in PARAMS}
    for name, value in p.items():
        _check_param(name, value)
    prof = PROFILES[p["profile"]]
    factors = dict(prof["factors"])
    for name in FACTOR_PARAMS:
        if p[name] is not None:
            factors[name] = p[name]
    if factors.get("fs") == "tmpfs":
        for k in ("read_iops", "write_iops", "read_bps", "write_bps"):
            if p.get(k) is None:
                factors.pop(k, None)       # a profile's disk throttle means nothing on tmpfs
    try:
        factor_vars(factors)
    except ValueError as e:
        raise ParamError(str(e)) from None
    spec = dict(prof["spec"])
    for name in SPEC_PARAMS:
        if p[name] is not None:
            spec[name] = p[name]
    if p["runlength_s"] is not None:
        spec["runlength_policy"] = "fixed"
    spec.setdefault("max_trials", MAX_TRIAL_TASKS)
    spec["max_trials"] = min(int(spec["max_trials"]), MAX_TRIAL_TASKS)
    if p["seed_source"] == "load":
        if p["seed_load"] is None:
            raise ParamError("seed_load: required when seed_source is 'load'")
        spec["seed_load"] = float(p["seed_load"])
    elif p["seed_load"] is not None:
        raise ParamError("seed_load: only used with seed_source 'load'")
    try:
        RatingSpec(**spec)
    except (TypeError, ValueError) as e:
        raise ParamError(str(e)) from None
    if not rating_id or _ID_RE.search(rating_id):
        raise ParamError(f"rating_id {rating_id!r}: only letters, digits, '.', '_' and '-'")
    return RatingPlan(rating_id=rating_id, workload=p["workload"], profile=p["profile"], slot=p["slot"],
                      factors=factors, spec=spec, warmup_s=float(prof["warmup_s"]),
                      warmup_trial_s=float(prof.get("warmup_trial_s", 0.0)),
                      fileset_rate=float(prof["fileset_rate"]), extravars=dict(prof.get("extravars", {})),
                      seed_source=p["seed_source"])


def seeded(plan: RatingPlan, seed_load: float | None, seed_trials: int | None = None) -> RatingPlan:
    """The plan with a seed load (seed 000 §5.4) unless it already has one; `seed_trials`: a fixed
    number of valid trials there before the load is classified (RatingSpec.seed_trials)."""
    if seed_load is None or not math.isfinite(seed_load) or seed_load <= 0 or plan.spec.get("seed_load"):
        return plan
    extra = {"seed_trials": int(seed_trials)} if seed_trials else {}
    return dataclasses.replace(plan, spec={**plan.spec, "seed_load": float(seed_load), **extra})


def history_seed(store: Any, plan: RatingPlan) -> float | None:
    """λ* of the newest converged rating in the store with this workload and these factors."""
    df = store.ratings_df()
    if df is None or len(df) == 0:
        return None
    rows = df[(df["workload"] == plan.workload) & (df["converged"] == True)]  # noqa: E712
    for k, v in plan.factors.items():
        if k in rows.columns:
            rows = rows[rows[k] == v]
    rows = rows[rows["rating_id"] != plan.rating_id]
    if len(rows) == 0:
        return None
    if "finished_unix" in rows.columns:
        rows = rows.sort_values("finished_unix")
    return float(rows.iloc[-1]["peak_rate"])


# ----------------------------------------------------------------------------- slots

def _lease_age_s(f: Path, holder: str) -> float:
    """Seconds since the holder last showed life: its lease or anything in its local directory."""
    times = [f.stat().st_mtime]
    d = local_dir(holder)
    if d.is_dir():
        times += [p.stat().st_mtime for p in d.rglob("*") if p.is_file()]
    return time.time() - max(times)


def lease_slot(plan: RatingPlan) -> str:
    """Take a slot for this rating (idempotent: the rating that holds a lease gets it again).

    A lease whose rating shows no life for LEASE_STALE_S (its run was killed before teardown)
    is taken over; the new rating's provisioning then resets the slot."""
    LEASES.mkdir(parents=True, exist_ok=True)
    candidates = SLOTS if plan.slot == "auto" else (plan.slot,)
    held = {}
    for slot in candidates:
        f = LEASES / slot
        try:
            fd = os.open(f, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = f.read_text().strip()
            if holder == plan.rating_id:
                return slot
            if _lease_age_s(f, holder) > LEASE_STALE_S:
                print(f"taking over the stale lease of {slot} from {holder}")
                f.write_text(plan.rating_id + "\n")
                return slot
            held[slot] = holder
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(plan.rating_id + "\n")
        return slot
    raise RuntimeError("no free slot: " + "; ".join(f"{s} is held by rating {h} (lease {LEASES / s})"
                                                     for s, h in held.items())
                       + f"; a lease is taken over after {LEASE_STALE_S:g} s without activity")


def release_slot(plan: RatingPlan) -> bool:
    f = LEASES / plan.slot
    if f.is_file() and f.read_text().strip() == plan.rating_id:
        f.unlink()
        return True
    return False


# ----------------------------------------------------------------------------- harness steps

def local_dir(rating_id: str) -> Path:
    return WORKDIR / "ratings" / rating_id


def harness_for(plan: RatingPlan) -> AnsibleHarness:
    if plan.slot == "auto":
        raise RuntimeError("the plan has no slot yet: lease_slot first")
    spec = plan.rating_spec()
    return AnsibleHarness(slot=plan.slot, inventory=plan.inventory, factors=plan.factors,
                          workload=plan.workload, results_dir=local_dir(plan.rating_id),
                          warmup_s=plan.warmup_s, fileset_rate=plan.fileset_rate,
                          extravars=plan.extravars, overload_ms=spec.r_sat_ms * (1.0 + spec.width))


def provision(plan: RatingPlan, store: Any) -> dict[str, Any]:
    """Provision the slot's SUT with the plan's factors; sysinfo.json and spec.json to the store."""
    if not FSTRESS.is_file():
        raise RuntimeError(f"fstress binary {FSTRESS} is missing: run `make fstress`")
    h = harness_for(plan)
    store.put_json(store.rating_key(plan.rating_id, "spec.json"), plan.to_dict())
    h.provision()
    info = json.loads((h.results_dir / "sysinfo.json").read_text())
    store.put_json(store.rating_key(plan.rating_id, "sysinfo.json"), info)
    return info


def deploy(plan: RatingPlan) -> str:
    """fstress and the file set on the load hosts, then the discarded warm-up trial."""
    h = harness_for(plan)
    h.deploy()
    if plan.warmup_trial_s <= 0:
        return "no warm-up trial"
    spec = plan.rating_spec()
    w = h.warm_up(spec.seed_load or spec.first_load, plan.warmup_trial_s)
    return (f"warm-up trial (discarded): {w.load_ops_s:g} ops/s × {w.runlength_s:g} s → mean {w.mean_ms:.2f} ms"
            + ("" if w.valid else f" ({w.reason})"))


def teardown(plan: RatingPlan) -> str:
    """Tear the slot down and release the lease — only if this rating holds it."""
    if plan.slot == "auto" or not (LEASES / plan.slot).is_file() or \
            (LEASES / plan.slot).read_text().strip() != plan.rating_id:
        return f"slot {plan.slot} not held by {plan.rating_id}: nothing to tear down"
    try:
        run = harness_for(plan).teardown()
    finally:
        release_slot(plan)       # a slot left dirty is reset (or refused, naming why) by the next provision
    return "torn down" if run.ok else f"teardown failed: {run.message()}"


# ----------------------------------------------------------------------------- the trial log

def trial_log(store: Any, rating_id: str) -> list[TrialResult]:
    """The rating's trials 0..n−1 from the store; a gap is an error (never silently skipped)."""
    records = store.trials(rating_id)
    for i, r in enumerate(records):
        if int(r["n"]) != i:
            raise RuntimeError(f"trial log of {rating_id} has a gap: expected trial {i}, found {r['n']}")
    return [TrialResult.from_dict(r) for r in records]


def decide_step(plan: RatingPlan, store: Any, k: int) -> NextTrial | Done:
    """The controller's decision before trial k, from trials 0..k−1 of the store's log."""
    log = trial_log(store, plan.rating_id)
    if len(log) < k:
        raise RuntimeError(f"decide_{k}: the log has only {len(log)} trials")
    return decide(plan.rating_spec(), log[:k])


def trial_step(plan: RatingPlan, store: Any, k: int) -> dict[str, Any]:
    """Run trial k (or return it if an earlier attempt already recorded it) and record it."""
    existing = [r for r in store.trials(plan.rating_id) if int(r["n"]) == k]
    if existing:
        return existing[0]
    d = decide_step(plan, store, k)
    if not isinstance(d, NextTrial):
        raise RuntimeError(f"trial_{k}: the controller has stopped ({d.result.reason})")
    prev = trial_log(store, plan.rating_id)[:k]
    t = harness_for(plan).measure(d.load_ops_s, d.runlength_s, trial_id=k,
                                  check_server=k == 0 or not prev[-1].valid)
    record = {"n": k, "decision": d.reason, **t.at(d.load_ops_s, d.runlength_s).to_dict()}
    store.put_trial(plan.rating_id, k, record)
    return record


# ----------------------------------------------------------------------------- after the search

def validate_step(plan: RatingPlan, store: Any) -> dict[str, Any]:
    """great_expectations on the trial batch; gx.json to the store."""
    from analysis.validate import validate_trials
    records = store.trials(plan.rating_id)
    res = validate_trials(records).to_dict()
    store.put_json(store.rating_key(plan.rating_id, "gx.json"), res)
    return res


def summarise_step(plan: RatingPlan, store: Any, validation: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The result of the log with GX-excluded trials marked invalid (their reasons kept)."""
    excluded = {int(k): v for k, v in ((validation or {}).get("excluded") or {}).items()}
    log = []
    for t in trial_log(store, plan.rating_id):
        n = len(log)
        if n in excluded and t.valid:
            t = dataclasses.replace(t, valid=False, reason=excluded[n])
        log.append(t)
    d = decide(plan.rating_spec(), log)
    if isinstance(d, Done):
        res = d.result
    else:                                          # exclusions reopened the search
        res = _unfinished(plan, log, f"not converged: after validation the controller wants "
                                     f"another trial at {d.load_ops_s:g} ops/s ({d.reason})")
    out = res.to_dict()
    out.update(rating_id=plan.rating_id, workload=plan.workload, slot=plan.slot,
               factors=plan.factors, profile=plan.profile, n_excluded_gx=len(excluded),
               finished_unix=time.time())
    out = strict_json(out)
    store.put_json(store.rating_key(plan.rating_id, "result.json"), out)
    return out


def _unfinished(plan: RatingPlan, log: list[TrialResult], reason: str) -> PeakResult:
    spec = dataclasses.replace(plan.rating_spec(), max_trials=max(len(log), 1))
    d = decide(spec, log)
    res = d.result if isinstance(d, Done) else None
    if res is None:
        raise RuntimeError(reason)
    return dataclasses.replace(res, converged=False, reason=reason)


def report_step(plan: RatingPlan, store: Any) -> str:
    """HTML report and plots to the store; returns the report's key."""
    from analysis.report import rating_plots, rating_report_html
    rid = plan.rating_id
    result = store.get_json(store.rating_key(rid, "result.json"))
    trials = store.trials(rid)
    sysinfo = store.get_json(store.rating_key(rid, "sysinfo.json"), None)
    validation = store.get_json(store.rating_key(rid, "gx.json"), None)
    plots = rating_plots(plan.to_dict(), result, trials)
    for name, png in plots.items():
        store.put_bytes(store.rating_key(rid, f"plots/{name}"), png, "image/png")
    html = rating_report_html(plan.to_dict(), result, trials, sysinfo=sysinfo, validation=validation,
                              plots=plots)
    key = store.rating_key(rid, "report.html")
    store.put_bytes(key, html.encode(), "text/html; charset=utf-8")
    out = local_dir(rid) / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    return key


def publish_step(plan: RatingPlan, store: Any) -> dict[str, str]:
    """trials.parquet beside the JSON trial log; returns the S3 locations."""
    rid = plan.rating_id
    pq = store.write_trials_parquet(rid)
    return {"rating": store.url(store.rating_key(rid, "")), "result": store.url(store.rating_key(rid, "result.json")),
            "report": store.url(store.rating_key(rid, "report.html")), "trials": store.url(pq),
            "local_report": str(local_dir(rid) / "report.html")}


# ----------------------------------------------------------------------------- in one process

def run_rating(plan: RatingPlan, store: Any, log: Callable[[str], None] = print) -> dict[str, Any]:
    """A whole rating in this process, resuming from the store's log: lease → provision → deploy →
    trials → validate → summarise → report → publish → teardown (always)."""
    plan = plan.with_slot(lease_slot(plan))
    log(f"rating {plan.rating_id}: {plan.workload} on {plan.slot}, factors {plan.factors}")
    try:
        provision(plan, store)
        log(f"  {deploy(plan)}")
        for k in range(MAX_TRIAL_TASKS + 1):
            d = decide_step(plan, store, k)
            if isinstance(d, Done) or k == MAX_TRIAL_TASKS:
                break
            r = trial_step(plan, store, k)
            log(f"  trial {k}: {r['load_ops_s']:g} ops/s × {r['runlength_s']:g} s → mean {r['mean_ms']:.2f} ms"
                f"{'' if r['valid'] else ' INVALID: ' + r['reason']}  [{r['decision']}]")
        validation = validate_step(plan, store)
        result = summarise_step(plan, store, validation)
        report_step(plan, store)
        urls = publish_step(plan, store)
        log(f"  λ* = {result['peak_rate']:.1f} ops/s ({result['reason']}); {urls['report']}")
        return {**result, "urls": urls}
    finally:
        log(f"  teardown: {teardown(plan)}")
        shutil.rmtree(local_dir(plan.rating_id) / ".runner", ignore_errors=True)
