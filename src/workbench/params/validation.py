"""One validation pass before any host changes, for every entry point (`workbench rate` and its
`--check`, rate_peak's validate, map_surface's plan_samples, nightly_regression's load_config).

`plan_from_params` (plan.py) checks the Params themselves; `validate_plan` checks what a plan meets
outside itself, reading files only: the settings the command line adds, the inventory (the slot is
a slot, it has the load hosts and the SUT asked for, its CPU lists name CPUs that exist, the fstress
variables are in range), the workload and its file set (``bin/fstress check``: bounded sizes,
counts and depths, finite numbers, readable regular files) and whether the export can hold the
file set (tmpfs size, disk capacity); and what the plan meets beyond its slot (``hostcheck``: slots
that overlap in the inventory, an external server that is another slot's SUT, a local SUT's backend,
free disk and memory). Every failure is a ParamError of one line,
"<field>: <what is wrong>; <what is allowed>".
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.config import tenants, vocabulary
from workbench.config.factors import BY_NAME, MEMORY_FLOOR_MB, TMPFS_DEFAULT_MB, parse_cpu_list
from workbench.config.paths import FSTRESS
from workbench.config.vocabulary import CANNED_WORKLOADS
from workbench.config.workloads import FACTORS_MARK, WORKLOAD_BY_NAME, text_digest
from workbench.measure.inventory import (
    InventoryError,
    host_vars,
    slot_background_hosts,
    slot_load_hosts,
    slot_sut_hosts,
)
from workbench.params.hostcheck import check_hosts
from workbench.params.plan import ParamError, RatingPlan, plan_from_params
from workbench.params.schema import untemplated
from workbench.params.seeds import history_seed, seeded

FSTRESS_CHECK_TIMEOUT_S = 30.0
MAX_FILESET_RATE = 1e7  # fstress's bound (workload.MaxRate)
MAX_WARMUP_S = 3600.0
MAX_FIRST_LOAD = 1e7
MAX_DRAIN_TIMEOUT_S = 3600.0  # fstress_drain_timeout_s: the drain probe before each trial
FILL_FRACTION = 0.9  # of an export's capacity the file set may fill (metadata, reserve)
MiB = 1 << 20
# inventory / extra-vars of the fstress role with integer bounds (roles/fstress/tasks/validate.yml)
FSTRESS_INT_VARS = {"fstress_rt_priority": (0, 99), "fstress_conns": (1, 1024)}

_canned_checks: dict[tuple[Any, ...], dict[str, Any]] = {}


def _finite_in(name: str, v: Any, lo: float, hi: float, lo_open: bool = False) -> None:
    ok = (
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and math.isfinite(v)
        and (v > lo if lo_open else v >= lo)
        and v <= hi
    )
    if not ok:
        raise ParamError(
            f"{name}: {v!r} is not allowed; a number {'>' if lo_open else '≥'} {lo:g} and ≤ {hi:g}"
        )


def check_settings(plan: RatingPlan) -> None:
    """The plan's own settings beyond the Params (the command line sets them)."""
    _finite_in("fileset_rate", plan.fileset_rate, 0, MAX_FILESET_RATE, lo_open=True)
    _finite_in("warmup_s", plan.warmup_s, 0, MAX_WARMUP_S)
    _finite_in("warmup_trial_s", plan.warmup_trial_s, 0, MAX_WARMUP_S)
    _finite_in("first_load", plan.spec.get("first_load", 1.0), 0, MAX_FIRST_LOAD, lo_open=True)
    for name, value in plan.extravars.items():
        untemplated(name, value)  # a plan from a store or a sweep, not the CLI
        check_fstress_var(name, value)


def check_fstress_var(name: str, value: Any, ncpu: int | None = None, where: str = "") -> None:
    """One fstress role variable (inventory or extra-vars); templated values are Ansible's to
    judge."""
    if isinstance(value, str) and "{{" in value:
        return
    if name == "fstress_cpus":
        check_cpus(name, value, ncpu, where)
    elif name in FSTRESS_INT_VARS:
        lo, hi = FSTRESS_INT_VARS[name]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ParamError(f"{name}: {value!r}{where} is not allowed; an integer in [{lo}, {hi}]")
    elif name == "fstress_lag_bound" and not isinstance(value, str):
        raise ParamError(
            f'{name}: {value!r}{where} is not allowed; a Go duration like "10ms" ("" = default)'
        )
    elif name == "fstress_drain_timeout_s":  # 0 = no drain probe before a trial
        _finite_in(f"{name}{where}", value, 0, MAX_DRAIN_TIMEOUT_S)


def check_cpus(name: str, value: Any, ncpu: int | None, where: str = "") -> None:
    """A taskset CPU list; with `ncpu` (the hosts run on this machine) every CPU must exist."""
    try:
        cpus = parse_cpu_list(name, value)
    except ValueError as e:
        raise ParamError(f"{e}{where}") from None
    missing = [c for c in cpus if ncpu is not None and c >= ncpu]
    if missing and ncpu is not None:
        raise ParamError(
            f"{name}: {value!r}{where} names CPU {missing[0]}, which this machine does not have; "
            f"CPUs 0-{ncpu - 1}"
        )


def check_inventory(plan: RatingPlan, slots: Sequence[str]) -> set[tuple[str, int | None]]:
    """Each slot the rating may take: a slot of the inventory with the load hosts (and the SUT) the
    rating needs; the CPU lists and fstress variables of those hosts. Returns the distinct
    (fstress_lag_bound, fstress_conns) of the load hosts, for `fstress check`."""
    inv = Path(plan.inventory)
    runs: set[tuple[str, int | None]] = set()
    try:
        for slot in slots:
            loads = slot_load_hosts(inv, slot, plan.load_hosts, server=not plan.external)
            if tenants.is_active(plan.background):
                loads += slot_background_hosts(inv, slot, plan.background["load_hosts"])
            for host in loads:
                hv = {**host_vars(inv, host), **plan.extravars}
                ncpu = os.cpu_count() if hv.get("ansible_connection") == "local" else None
                where = f" (load host {host} of slot {slot})"
                for name in (
                    "fstress_cpus",
                    *FSTRESS_INT_VARS,
                    "fstress_lag_bound",
                    "fstress_drain_timeout_s",
                ):
                    if name in hv:
                        check_fstress_var(name, hv[name], ncpu, where)
                runs.add(_run_vars(hv))
            for host in [] if plan.external else slot_sut_hosts(inv, slot):
                hv = host_vars(inv, host)
                ncpu = os.cpu_count() if hv.get("ansible_connection") == "local" else None
                cpus = plan.factors.get(
                    "server_cpus",
                    plan.extravars.get("nfs_server_cpus", hv.get("nfs_server_cpus", "")),
                )
                if not (isinstance(cpus, str) and "{{" in cpus):
                    name = "server_cpus" if "server_cpus" in plan.factors else "nfs_server_cpus"
                    check_cpus(name, cpus, ncpu, f" (SUT {host} of slot {slot})")
    except InventoryError as e:
        raise ParamError(str(e)) from None
    return runs


def _run_vars(v: Mapping[str, Any]) -> tuple[str, int | None]:
    """(fstress_lag_bound, fstress_conns) of a load host's variables, untemplated ones only."""
    lag, conns = v.get("fstress_lag_bound") or "", v.get("fstress_conns")
    return (
        lag if isinstance(lag, str) and "{{" not in lag else "",
        conns if isinstance(conns, int) and not isinstance(conns, bool) else None,
    )


# fstress check's flags → the Params fields they come from (any other complaint: the workload's)
_CHECK_FIELDS = (
    ("-lag-bound", "fstress_lag_bound"),
    ("-conns", "fstress_conns"),
    ("-fileset-rate", "fileset_rate"),
    ("-nfs-version", "nfs_version"),
)


def _refusal(stderr: str, returncode: int) -> ParamError:
    """`fstress check`'s last complaint as a ParamError naming the field it refused."""
    line = (stderr.strip().splitlines() or [f"fstress check exit {returncode}"])[-1]
    line = line.removeprefix("fstress: ").removeprefix("check: ")
    field = next((f for flag, f in _CHECK_FIELDS if flag in line), "workload")
    return ParamError(f"{field}: {line}")


def fstress_check(
    workload: str,
    fileset_rate: float,
    lag_bound: str = "",
    conns: int | None = None,
    nfs_version: str = "3",
) -> dict[str, Any]:
    """`bin/fstress check --json` of the workload at the rate its file set is sized for, over
    `nfs_version`: the file set's counts and bytes, or ParamError naming the workload's field."""
    args = [
        "--workload",
        workload,
        "--fileset-rate",
        repr(float(fileset_rate)),
        "--nfs-version",
        str(nfs_version),
    ]
    if lag_bound:
        args += ["--lag-bound", str(lag_bound)]
    if conns is not None:
        args += ["--conns", str(conns)]
    key = (tuple(args), FSTRESS.stat().st_mtime_ns if FSTRESS.is_file() else 0)
    if workload in CANNED_WORKLOADS and key in _canned_checks:
        return _canned_checks[key]
    if not FSTRESS.is_file():
        raise ParamError(
            f"workload: cannot check it, the fstress binary {FSTRESS} is missing; run `make "
            "fstress`"
        )
    try:
        p = subprocess.run(
            [str(FSTRESS), "check", *args, "--json"],
            capture_output=True,
            text=True,
            timeout=FSTRESS_CHECK_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise ParamError(
            f"workload: `fstress check` of {workload} did not finish in "
            f"{FSTRESS_CHECK_TIMEOUT_S:g} s"
        ) from None
    if p.returncode != 0:
        raise _refusal(p.stderr, p.returncode)
    out = json.loads(p.stdout)
    if workload in CANNED_WORKLOADS:
        _canned_checks[key] = out
    return out


def _nfs_version(plan: RatingPlan) -> str:
    """The NFS version the plan's load hosts speak (the factor, else its default)."""
    return str(plan.factors.get("nfs_version", BY_NAME["nfs_version"].default))


def check_capacity(plan: RatingPlan, fileset: Mapping[str, Any]) -> None:
    """The export holds the file set: a tmpfs its size (memory_mb, which also bounds the server
    beside the data), disks their capacity."""
    if plan.external or not fileset.get("needs_fileset", True):
        return
    need = float(fileset["fileset_bytes"])
    what = (
        f"the file set of {fileset['workload']} at fileset_rate {plan.fileset_rate:g} ops/s is "
        f"{need / MiB:.0f} MiB"
    )
    f = {
        name: plan.factors.get(name, BY_NAME[name].default)
        for name in ("fs", "memory_mb", "disks", "disk_size_mb")
    }
    if f["fs"] == "tmpfs":
        size = f["memory_mb"] or TMPFS_DEFAULT_MB
        room = FILL_FRACTION * size * MiB
        if f["memory_mb"]:
            room = min(room, (f["memory_mb"] - MEMORY_FLOOR_MB) * MiB)
        if need > room:
            raise ParamError(
                f"fs: a tmpfs export of {size} MiB (memory_mb {f['memory_mb']}, which also holds "
                f"the server's {MEMORY_FLOOR_MB} MiB) has room for {room / MiB:.0f} MiB; {what}: "
                "raise memory_mb, lower fileset_rate or use a disk file system"
            )
        return
    room = FILL_FRACTION * f["disks"] * f["disk_size_mb"] * MiB
    if need > room:
        raise ParamError(
            f"disk_size_mb: {f['disks']} disk(s) of {f['disk_size_mb']} MiB have room for "
            f"{room / MiB:.0f} MiB; {what}: raise disk_size_mb or disks (btrfs), or lower "
            "fileset_rate"
        )


def validate_plan(
    plan: RatingPlan,
    slots: Sequence[str] | None = None,
    runs: set[tuple[str, int | None]] | None = None,
) -> dict[str, Any]:
    """The whole pass for one plan (reads files only; touches no host). `slots`: the slots it may
    take (default: its slot, or the leasable ones for "auto"); `runs`: their load hosts' fstress
    settings when the caller has checked the inventory already. Returns the file set of
    `fstress check`."""
    check_settings(plan)
    if slots is None:
        slots = tuple(vocabulary.SLOTS) if plan.slot == "auto" else (plan.slot,)
    runs = (runs if runs is not None else check_inventory(plan, slots)) or {
        _run_vars(plan.extravars)
    }
    check_hosts(plan, slots or (tuple(vocabulary.SLOTS) if plan.slot == "auto" else (plan.slot,)))
    with tempfile.TemporaryDirectory(prefix="wb-check-") as tmp:
        wl = plan.workload_file(Path(tmp))
        fileset: dict[str, Any] = {}
        try:
            for lag, conns in sorted(runs, key=repr):
                fileset = fstress_check(wl, plan.fileset_rate, lag, conns, _nfs_version(plan))
        except ParamError as e:
            raise ParamError(text_error(plan, str(e))) from None
    # tenant B's workload, its file set at the same rate as A's
    if tenants.is_active(plan.background):
        try:
            fstress_check(
                plan.background["workload"],
                plan.fileset_rate,
                *sorted(runs, key=repr)[0],
                _nfs_version(plan),
            )
        except ParamError as e:
            raise ParamError(f"background_workload: {e}") from None
    check_capacity(plan, fileset)
    return fileset


def text_error(plan: RatingPlan, msg: str) -> str:
    """fstress's error on a workload text, naming what the user set: the workload factor(s) of the
    failing line when render_workload wrote it, else workload_text (with the line's text)."""
    if not plan.workload_text:
        return msg
    m = re.match(rf"workload: \S*{text_digest(plan.workload_text)}\.wl:(\d+): (.*)", msg)
    if not m:
        return msg
    lines, n = plan.workload_text.splitlines(), int(m.group(1))
    key = lines[n - 1].split("=", 1)[0].strip().lower()
    rendered = any(ln.startswith(FACTORS_MARK) for ln in lines[: n - 1])
    names = [f for f in plan.workload_factors if WORKLOAD_BY_NAME[f].key == key]
    if rendered and names:
        return f"{', '.join(names)}: {m.group(2)}"
    return f"workload_text: line {n} {lines[n - 1].strip()!r}: {m.group(2)}"


def checked_plan(params: Mapping[str, Any], rating_id: str, store: Any) -> RatingPlan:
    """rate_peak's validate: the plan of the Params, through the whole pass, seeded from the store's
    history if asked."""
    plan = plan_from_params(params, rating_id)
    validate_plan(plan)
    if plan.seed_source == "history":
        seed = history_seed(store, plan)
        print(f"seed from history: {seed}")
        plan = seeded(plan, seed)
    print(f"rating {rating_id}: {plan.workload_name()}, {plan.server_text()}, spec {plan.spec}")
    return plan


def validate_plans(plans: Sequence[RatingPlan], what: str) -> None:
    """The pass for several plans (a sweep's samples, a night's baselines), naming the one that
    failed; the inventory is checked once per distinct slot setting."""
    seen: dict[str, set[tuple[str, int | None]]] = {}
    for plan in plans:
        try:
            check_settings(plan)
            slots = tuple(vocabulary.SLOTS) if plan.slot == "auto" else (plan.slot,)
            key = json.dumps(
                [
                    plan.inventory,
                    slots,
                    plan.load_hosts,
                    plan.background,
                    bool(plan.external),
                    plan.extravars,
                    plan.factors.get("server_cpus"),
                ],
                sort_keys=True,
                default=str,
            )
            if key not in seen:
                seen[key] = check_inventory(plan, slots)
            validate_plan(plan, slots=(), runs=seen[key])  # the inventory is done
        except ParamError as e:
            raise ParamError(f"{e} (in {what} {plan.rating_id})") from None
