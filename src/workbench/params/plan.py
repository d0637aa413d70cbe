"""A rating's plan: `RatingPlan`, everything one rating needs as plain data (XCom / JSON round
trip), built from checked Params (params.schema); its id, its command-line settings, its resumed and
seeded forms."""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.config import tenants, workloads
from workbench.config.external import (
    external_factors,
    external_server,
    external_text,
)
from workbench.config.factors import factor_vars, with_rules
from workbench.config.paths import CANNED_WORKLOADS_DIR, DEFAULT_INVENTORY, rating_dir
from workbench.config.profiles import PROFILES, with_policy
from workbench.config.untrusted import MAX_RATING_ID, UNSAFE_ID_CHARS
from workbench.config.vocabulary import CANNED_WORKLOADS, MAX_TRIAL_TASKS
from workbench.controller.spec import RatingSpec
from workbench.params.pack import split_pack_params
from workbench.params.request import LoadRequest, RatingRequest, ServerRequest
from workbench.params.schema import (
    FACTOR_PARAMS,
    PARAMS,
    SPEC_PARAMS,
    ParamError,
    check_goals,
    check_param,
    check_rating_id,
    untemplated,
)


def rating_id_for(dag_id: str, run_id: str) -> str:
    """Deterministic, store-safe id of the rating a DAG run makes (retries reuse it)."""
    rid = UNSAFE_ID_CHARS.sub("_", f"{dag_id}__{run_id}").strip("._-")
    return rid[:MAX_RATING_ID]


def night_of(dag_run: Any, run_id: str = "") -> str:
    """The night (YYYY-MM-DD) a nightly_regression run rates: its logical date, else when it was
    triggered; without the run (a callback's minimal context), the date in its run id."""
    when = getattr(dag_run, "logical_date", None) or getattr(dag_run, "run_after", None)
    if when is not None:
        return when.strftime("%Y-%m-%d")
    m = re.search(r"\d{4}-\d{2}-\d{2}", run_id)
    if m is None:
        raise ValueError(f"no night in run {run_id!r}")
    return m.group(0)


def strict_json(obj: Any) -> Any:
    """obj with NaN/±inf replaced by None: XCom and strict JSON readers refuse them."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    return obj


@dataclass(frozen=True)
class RatingPlan:
    """Everything one rating needs, as plain data (XCom / JSON round trip)."""

    rating_id: str
    workload: str
    profile: str
    slot: str  # "auto" until lease_slot picks one
    factors: dict[str, Any]
    spec: dict[str, Any]  # RatingSpec fields
    warmup_s: float
    fileset_rate: float
    warmup_trial_s: float = 0.0  # a discarded trial after deploy (0 = none)
    extravars: dict[str, Any] = field(default_factory=dict)
    seed_source: str = "none"
    # compose: inventory/compose
    inventory: str = field(
        default_factory=lambda: os.environ.get("WB_INVENTORY", str(DEFAULT_INVENTORY))
    )
    workdir: str = ""  # local working directory ("" = config.paths.rating_dir)
    # config.workloads factors chosen
    workload_factors: dict[str, Any] = field(default_factory=dict)
    workload_text: str = ""  # the workload fstress runs, as text ("" = `workload` itself)
    # ExternalServer fields; {} = the slot's SUT
    external: dict[str, Any] = field(default_factory=dict)
    load_hosts: int = 0  # the slot's first N load hosts share the load (0 = all)
    background: dict[str, Any] = field(default_factory=dict)  # tenant B (config.tenants); {} = none
    lease_token: int = 0  # fencing token of the slot's lease (lease.leases); 0 = not leased
    factor_pack: dict[str, Any] = field(default_factory=dict)  # FactorPack.to_dict(); {} = none
    pack_factors: dict[str, Any] = field(default_factory=dict)  # the pack's levels chosen

    def rating_spec(self) -> RatingSpec:
        return RatingSpec.from_dict(self.spec)

    def request(self) -> RatingRequest:
        """The plan's settings, typed: goals, policy, budget, search (the controller's), server and
        load (the harness's)."""
        return RatingRequest.of(
            self.rating_spec(),
            ServerRequest(
                dict(self.factors),
                dict(self.external),
                dict(self.factor_pack),
                dict(self.pack_factors),
            ),
            LoadRequest(
                self.workload,
                self.workload_text,
                dict(self.workload_factors),
                self.load_hosts,
                dict(self.background),
                self.fileset_rate,
                self.warmup_s,
                self.warmup_trial_s,
                dict(self.extravars),
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RatingPlan:
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})

    def local_dir(self) -> Path:
        """Playbook runs, fstress JSON and the report's local copy of this rating."""
        return Path(self.workdir) if self.workdir else rating_dir(self.rating_id)

    def workload_file(self, directory: Path | None = None) -> str:
        """What fstress is given: the canned name, the command line's file, or the workload text
        written to a file named by its digest in `directory` (default: the local directory's
        workload/; each worker writes its own copy)."""
        if not self.workload_text:
            return (
                self.workload
                if self.workload in CANNED_WORKLOADS
                else str(Path(self.workload).resolve())
            )
        name = f"{Path(self.workload).stem}-{workloads.text_digest(self.workload_text)}.wl"
        path = (directory or self.local_dir() / "workload") / name
        if not (path.is_file() and path.read_text() == self.workload_text):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(self.workload_text)
            tmp.replace(path)
        return str(path)

    def workload_name(self) -> str:
        """The workload for a log line: its name, with the workload factors chosen."""
        chosen = ", ".join(f"{k}={v}" for k, v in self.workload_factors.items())
        return f"{self.workload} ({chosen})" if chosen else self.workload

    def workload_source(self) -> str:
        """The text of the workload fstress runs, stored with the rating: the workload text, the
        canned workload's file, or the command line's file ("" if it cannot be read)."""
        if self.workload_text:
            return self.workload_text
        canned = self.workload in CANNED_WORKLOADS
        path = CANNED_WORKLOADS_DIR / f"{self.workload}.wl" if canned else Path(self.workload)
        try:
            return path.read_text()[: workloads.MAX_TEXT_BYTES]
        except (OSError, UnicodeDecodeError):
            return ""

    def server_text(self) -> str:
        """What is rated, for a log line: the sample's factors, or the external server; tenant B."""
        factors = ", ".join(f"{k} {v}" for k, v in {**self.factors, **self.pack_factors}.items())
        what = (
            external_text(self.external) + (f"; {factors}" if factors else "")
            if self.external
            else f"factors: {factors or 'defaults'}"
        )
        return f"{what}; {tenants.describe(self.background)}" if self.background else what

    def with_slot(self, slot: str) -> RatingPlan:
        return dataclasses.replace(self, slot=slot)

    def with_lease(self, token: int) -> RatingPlan:
        return dataclasses.replace(self, lease_token=int(token))


def plan_from_params(
    params: Mapping[str, Any], rating_id: str, workload_files: bool = False
) -> RatingPlan:
    """Check every parameter and build the plan; raises ParamError naming the first bad one.
    `workload_files`: a path to a workload file is a workload too (the CLI; fstress checks it)."""
    params, pack, pack_levels = split_pack_params(params)
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise ParamError(f"unknown parameter(s): {', '.join(unknown)}; known: {', '.join(PARAMS)}")
    for name, value in params.items():
        if name != "workload_text":  # written to a file the fstress role copies, never templated
            untemplated(name, value)
    p = {k: params.get(k, PARAMS[k].get("default")) for k in PARAMS}
    for name, value in p.items():
        if not (name == "workload" and workload_files and Path(str(value)).is_file()):
            check_param(name, value)
    label, text, wfactors = _workload(p, workload_files)
    prof = PROFILES[p["profile"]]
    chosen = {name: p[name] for name in FACTOR_PARAMS}
    try:
        external = external_server(p)
        background = tenants.background_from_params(p, label)
        # an external server: the profile's server factors do not apply either; nfs_version does
        factors = (
            external_factors(external, chosen) if external else with_rules(prof["factors"], chosen)
        )
        factor_vars(factors)
    except ValueError as e:
        raise ParamError(str(e)) from None
    spec = _spec(p, prof["spec"])
    check_rating_id(rating_id)
    return RatingPlan(
        rating_id=rating_id,
        workload=label,
        profile=p["profile"],
        slot=p["slot"],
        workload_text=text,
        workload_factors=wfactors,
        factors=factors,
        spec=spec,
        warmup_s=float(prof["warmup_s"]),
        warmup_trial_s=float(prof.get("warmup_trial_s", 0.0)),
        fileset_rate=float(prof["fileset_rate"]),
        extravars=dict(prof.get("extravars", {})),
        seed_source=p["seed_source"],
        external=external.to_dict() if external else {},
        load_hosts=int(p["load_hosts"] or 0),
        background=background,
        factor_pack=pack.to_dict() if pack else {},
        pack_factors=pack_levels,
    )


def _spec(p: Mapping[str, Any], profile_spec: dict[str, Any]) -> dict[str, Any]:
    """The RatingSpec fields of the Params over the profile's, checked as a RatingSpec (and its
    budget paying for a first trial)."""
    spec = with_policy(profile_spec, p["policy"])
    for name in SPEC_PARAMS:
        if p[name] is not None:
            spec[name] = p[name]
    check_goals(spec)
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
        rs = RatingSpec.from_dict(spec)
    except (TypeError, ValueError) as e:  # named by the Params field, as every other refusal
        raise ParamError(str(e).removeprefix("RatingSpec.")) from None
    if (problem := rs.p95_bound_below_goal()) is not None:
        raise ParamError(problem)
    one_trial = rs.runlength_s + rs.trial_overhead_s  # a rating's first trial: runlength_s
    if rs.budget_s < one_trial:
        raise ParamError(
            f"budget_s: {rs.budget_s:g} s does not pay for one trial ({rs.runlength_s:g} s "
            f"runlength + {rs.trial_overhead_s:g} s overhead); at least {one_trial:g}"
        )
    return spec


def _workload(p: Mapping[str, Any], workload_files: bool) -> tuple[str, str, dict[str, Any]]:
    """(label, text, factors) of the Params' workload: the canned name (or the command line's file)
    and "" — or "custom" and the workload_text — with the workload factors rendered in."""
    factors = {n: p[n] for n in workloads.WORKLOAD_FACTOR_NAMES if p[n] is not None}
    # "": an emptied form field
    text = p["workload_text"] if (p["workload_text"] or "").strip() else None
    try:
        if text is not None:
            text = workloads.check_workload_text(text)
        elif factors and p["workload"] not in CANNED_WORKLOADS:
            raise ValueError(
                f"{', '.join(factors)}: workload factors apply to a canned workload or to "
                f"workload_text; write them into the workload file {p['workload']}"
            )
        rendered = workloads.render_workload(p["workload"], text, factors)
    except ValueError as e:
        raise ParamError(str(e)) from None
    return ("custom" if text is not None else p["workload"]), rendered, factors


def with_settings(
    plan: RatingPlan,
    *,
    slot: str | None = None,
    first_load: float | None = None,
    warmup_s: float | None = None,
    fileset_rate: float | None = None,
    fstress_cpus: str | None = None,
    inventory: str | Path | None = None,
) -> RatingPlan:
    """The plan with the command line's own settings (None = the profile's)."""
    untemplated("slot", slot)
    untemplated("fstress_cpus", fstress_cpus)
    untemplated("inventory", None if inventory is None else str(inventory))
    if first_load is not None and not (math.isfinite(first_load) and 0 < first_load <= 1e7):
        raise ParamError(f"first_load: {first_load!r} is not allowed; a number > 0 and ≤ 1e+07")
    spec = dict(plan.spec, **({"first_load": float(first_load)} if first_load is not None else {}))
    try:
        RatingSpec.from_dict(spec)
    except (TypeError, ValueError) as e:
        raise ParamError(str(e)) from None
    extravars = dict(
        plan.extravars, **({"fstress_cpus": fstress_cpus} if fstress_cpus is not None else {})
    )
    return dataclasses.replace(
        plan,
        spec=spec,
        extravars=extravars,
        slot=plan.slot if slot is None else slot,
        warmup_s=plan.warmup_s if warmup_s is None else float(warmup_s),
        fileset_rate=plan.fileset_rate if fileset_rate is None else float(fileset_rate),
        inventory=plan.inventory if inventory is None else str(Path(inventory).resolve()),
    )


def resumable_plan(store: Any, plan: RatingPlan, workdir: str | Path) -> RatingPlan:
    """`plan`, working in `workdir`; if the store already holds this rating, its stored plan, which
    must be the same rating (a re-run command resumes it; a different one is refused, naming
    why)."""
    plan = dataclasses.replace(plan, workdir=str(workdir))
    stored = store.get_json(store.spec_key(plan.rating_id), None)
    if stored is None:
        return plan
    old = RatingPlan.from_dict(stored)
    differ = [
        f
        for f in (
            "workload",
            "workload_text",
            "profile",
            "slot",
            "factors",
            "spec",
            "inventory",
            "external",
            "load_hosts",
            "background",
            "factor_pack",
            "pack_factors",
        )
        if getattr(old, f) != getattr(plan, f)
    ]
    if differ:
        raise ParamError(
            f"{store.url(store.rating_prefix(plan.rating_id))} holds rating {plan.rating_id} "
            f"with another {', '.join(differ)}: use another results directory to start anew"
        )
    return dataclasses.replace(old, workdir=str(workdir))
