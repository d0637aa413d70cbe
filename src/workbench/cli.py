"""`workbench` command line: rate one sample end to end, or plan a rating's cost.

    workbench rate [--workload web_server] [--slot slot1] [--profile quick|smoke|standard]
                   [--r-sat-ms 40[,20,80]] [--results DIR]
                   [factor flags: --fs --disks --memory-mb --read-iops ...]
                   [workload factors: --zipf-alpha --files-per-ops --read-size-kb --mix-read-pct …]
                   [--server-address A --server-export PATH [--server-description TEXT] ...]
                   [--agent on|off] [--check] [--no-teardown] [--quiet | --verbose]
    workbench plan [--workload web_server] [--profile quick] [--capacity OPS] [--reps N]
    workbench compare A B [--results DIR] [--tolerance 0.10] [--confidence 0.95] [--out FILE]
                      [--publish]
                      (exit 1 on a regression, 2 on no verdict or bad input: a CI job can gate
                      on it)

`rate` runs the same steps as the rate_peak DAG (``pipeline.runner.run_rating``) over a
`LocalStore` in the results directory, taking the same slot lease: the trial log is
``DIR/ratings/<id>/trials/<n>.json``, so a rating killed mid-way resumes, with no trial lost or
repeated, when the same command is run again with the same ``--results``. Bad input fails in one
line (exit 2) before anything is provisioned: the Params checks and the whole validation pass
(``params.validation``: settings, inventory, slot, CPU lists, workload via ``fstress check``,
file set against the export); ``--check`` stops there, touching no host. ``--r-sat-ms 40,20,80``
rates several R_sat goals from one search (the first is the headline λ*; the result block and the
report give λ*, its bracket and CI per goal).

`--workload` is a canned name or a workload file (fstress format); the workload factors override
a canned workload's keys (``config.workloads``). The text fstress runs is stored with the rating
(``ratings/<id>/workload.wl``, result.json ``workload_text``).

`plan`: the dry-run planner (``planning.dryrun.plan``) on a simulated server of the workload's
family: expected cost, trials and convergence of the same spec.

`compare`: B's λ* against A's (``analysis.compare``): the change with its CI, Welch's test at a
common load, the verdict in words, and an HTML page with both latency-vs-load curves.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.cli_args import (
    SPEC_OPTIONS,
    Parser,
    UsageError,
    compare_parser,
    one_line,
    option_strings,
    pack_levels,
    plan_parser,
    r_sat_goals,
    rate_parser,
)
from workbench.config import tenants, workloads
from workbench.config.external import EXTERNAL_PARAMS
from workbench.config.factors import FACTORS
from workbench.config.paths import FSTRESS, REPO
from workbench.config.profiles import FAMILY_OF_WORKLOAD, PROFILES, with_policy
from workbench.config.untrusted import UNSAFE_ID_CHARS
from workbench.controller.spec import RatingSpec
from workbench.measure.ansible import AnsibleHarness, HarnessError
from workbench.pipeline.stop import RatingKilled


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="workbench", description="NFS benchmarking workbench")
    sub = p.add_subparsers(dest="cmd", required=True)
    rate_parser(sub)
    plan_parser(sub)
    compare_parser(sub)
    return p


def check_rate_inputs(plan) -> dict[str, Any]:
    """The validation pass on what the plan meets outside itself (reads files only): fstress is
    built, the slot is a slot of the inventory with the hosts asked for, CPU lists exist, the
    workload and its file set pass `fstress check` and fit the export. Returns the file set."""
    from workbench.params.plan import ParamError
    from workbench.params.validation import validate_plan

    if not FSTRESS.is_file():
        raise UsageError(f"fstress binary {FSTRESS} is missing: run `make fstress`")
    try:
        return validate_plan(plan)
    except ParamError as e:
        raise UsageError(str(e)) from None


def build_plan(args: argparse.Namespace, rating_id: str):
    """The rating plan of the command line: the same Params checks as the DAGs', plus the
    CLI's own settings (first load, warm-up, file set, fstress CPUs, inventory)."""
    from workbench.params.plan import ParamError, plan_from_params, with_settings

    # the slot is checked against the inventory (check_rate_inputs), not against WB_SLOTS
    params: dict[str, Any] = {"workload": args.workload, "profile": args.profile, "slot": "auto"}
    params.update({f.name: getattr(args, f.name) for f in FACTORS})
    params.update({name: getattr(args, name) for name in workloads.WORKLOAD_FACTOR_NAMES})
    params.update({k: getattr(args, k) for k in SPEC_OPTIONS})
    params.update({k: getattr(args, k) for k in EXTERNAL_PARAMS})
    params.update(r_sat_goals(args.r_sat_ms))
    params["load_hosts"] = args.load_hosts
    params["factor_pack"] = args.factor_pack
    params["pack_factors"] = pack_levels(args.pack_factors) or None
    params.update({name: getattr(args, name, None) for name in tenants.params_schema()})
    if args.seed_load is not None:
        params["seed_source"] = "load"
    try:
        plan = plan_from_params(params, rating_id, workload_files=True)
        return with_settings(
            plan,
            slot=args.slot,
            first_load=args.first_load,
            warmup_s=args.warmup_s,
            fileset_rate=args.fileset_rate,
            fstress_cpus=args.fstress_cpus,
            inventory=args.inventory,
        )
    except ParamError as e:
        raise UsageError(str(e)) from None


def results_dir(args: argparse.Namespace) -> Path:
    """The results directory: --results (checked: config.untrusted.check_results_path, its name is
    the rating id) or results/<time>-<workload>-<slot>. Nothing is made here."""
    from workbench.config.untrusted import check_results_path

    if args.results is None:
        stem = UNSAFE_ID_CHARS.sub("_", f"{Path(args.workload).stem}-{args.slot}")[:80]
        return (
            REPO / "results" / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{stem}"
        ).resolve()
    try:
        check_results_path(args.results)
        out = Path(args.results).resolve()
        check_results_path(str(out))  # as resolved (a symbolic link may name anything)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if out.exists() and not out.is_dir():
        raise UsageError(f"--results: {out} exists and is not a directory; give a directory")
    return out


def cmd_rate(args: argparse.Namespace, harness_factory=None) -> int:
    from analysis.rating_report import report_step
    from workbench.output.console import Progress, result_block
    from workbench.params.plan import ParamError, resumable_plan
    from workbench.pipeline.runner import run_rating
    from workbench.store.local import LocalStore

    out = results_dir(args)
    plan = build_plan(args, rating_id=out.name)
    fileset = check_rate_inputs(plan) if harness_factory is None else {}
    if args.check:
        size = (
            f"; file set {fileset['files']} files, {fileset['fileset_bytes'] / 2**20:.0f} MiB "
            f"at {plan.fileset_rate:g} ops/s"
            if fileset.get("needs_fileset")
            else ""
        )
        print(
            f"workbench rate: inputs OK ({plan.workload_name()} on {plan.slot}, "
            f"{plan.server_text()}{size})"
        )
        return 0
    store = LocalStore(out)
    try:
        plan = resumable_plan(store, plan, workdir=out / "work")
    except ParamError as e:
        raise UsageError(str(e)) from None
    spec = plan.rating_spec()
    prog = Progress(
        spec.budget_s, spec.trial_overhead_s, enabled=not args.quiet, verbose=args.verbose
    )
    err = sys.stderr
    err.write(
        f"workbench rate: {plan.workload_name()} on {plan.slot}, profile {plan.profile}\n  "
        f"results: {out}\n"
    )
    t0 = time.monotonic()
    res = run_rating(
        plan,
        store,
        log=lambda s: err.write(s + "\n"),
        on_trial=prog.trial,
        teardown_after=not args.no_teardown,
        make=harness_factory or AnsibleHarness,
        agent=None if getattr(args, "agent", None) is None else args.agent == "on",
        report=report_step,
    )
    where = store.url(store.rating_prefix(plan.rating_id))
    print(f"\n{plan.workload_name()} on {plan.slot} ({plan.profile}), stored in\n  {where}")
    print(result_block(res, time.monotonic() - t0))
    return 0 if res["converged"] else 1


def cmd_plan(args: argparse.Namespace) -> int:
    from workbench.planning.dryrun import plan

    fields = with_policy(PROFILES[args.profile]["spec"], args.policy)
    fields.update(
        {
            k: getattr(args, k)
            for k in (*SPEC_OPTIONS[1:], "first_load")
            if getattr(args, k) is not None
        }
    )
    fields.update(r_sat_goals(args.r_sat_ms))
    if args.runlength_s is not None:
        fields["runlength_policy"] = "fixed"
    try:
        spec = RatingSpec.from_dict(fields)
    except (TypeError, ValueError) as e:
        raise UsageError(str(e)) from None
    if args.reps < 1:
        raise UsageError(f"--reps must be >= 1, got {args.reps}")
    server, what = _planned_server(args)
    p = plan(spec, server, reps=args.reps, seed=args.seed)
    print(f"plan: {args.workload}, profile {args.profile}, policy {spec.policy.name} on a {what}")
    print(
        f"  expected cost    {p['expected_cost_s']:.0f} s  (p10 {p['cost_s']['p10']:.0f}, p90 "
        f"{p['cost_s']['p90']:.0f})"
    )
    print(
        f"  expected trials  {p['expected_trials']:.1f}  (p10 {p['trials']['p10']:.0f}, p90 "
        f"{p['trials']['p90']:.0f})"
    )
    print(f"  expected loads   {p['expected_loads']:.1f}")
    print(f"  convergence      {p['convergence_rate']:.0%} of {p['n_runs']} runs")
    print(f"  median |λ*−true|/true  {p['median_rel_error']:.3f}")
    return 0


def _planned_server(args: argparse.Namespace):
    from workbench.measure.simulated import SimulatedServer

    if args.capacity is not None:
        if not (math.isfinite(args.capacity) and args.capacity > 0):
            raise UsageError(f"--capacity must be > 0, got {args.capacity}")
        return SimulatedServer(
            capacity_ops_s=args.capacity
        ), f"simulated server, capacity {args.capacity:g} ops/s"
    family = FAMILY_OF_WORKLOAD.get(args.workload, "web")
    f = {
        k: getattr(args, k)
        for k in ("threads", "disks", "memory_mb", "fs")
        if getattr(args, k) is not None
    }
    if f.get("fs") == "tmpfs":
        f.pop("fs")
    try:
        server = SimulatedServer.for_factors(family, f)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return (
        server,
        f"simulated {family} server {f or '(default factors)'}, capacity "
        f"{server.capacity_ops_s:.0f} ops/s",
    )


def cmd_compare(args: argparse.Namespace) -> int:
    from analysis import compare
    from workbench.params.plan import ParamError
    from workbench.store.base import StoreError

    try:
        (sa, a_id), (sb, b_id) = (
            compare.open_rating(args.a, args.results),
            compare.open_rating(args.b, args.results),
        )
        out = compare.compare_ratings(
            compare.load_rating(sa, a_id),
            compare.load_rating(sb, b_id),
            args.tolerance,
            args.confidence,
        )
    except (ParamError, StoreError) as e:
        raise UsageError(str(e)) from None
    v = out["verdict"]
    page = Path(args.out or f"compare-{a_id}-vs-{b_id}.html")
    page.write_text(out["html"])
    print(
        f"A {a_id}: λ* {v['baseline_peak']:.4g} ops/s\nB {b_id}: λ* {_num(v['current_peak'])} ops/s"
    )
    print(f"{v['word']}: {v['reason']}\npage: {page.resolve()}")
    if args.publish:
        print(f"stored: {compare.publish(sb, out)}")
    return compare_exit_code(v)


def compare_exit_code(v: Any) -> int:
    """`workbench compare`'s exit code, for a CI job to gate on: 1 on a regression, 2 on no verdict
    (B did not converge and its bracket decides nothing; also bad input), 0 otherwise."""
    return 1 if v.get("regression") else 2 if v.get("inconclusive") else 0


def _num(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, (int, float)) else "—"


def _trace_file(exc: BaseException) -> Path:
    """The traceback of an unexpected error, in a file of its own (the console gets one line)."""
    import tempfile
    import traceback

    fd, name = tempfile.mkstemp(prefix="workbench-trace-", suffix=".txt")
    with open(fd, "w") as f:
        f.write("".join(traceback.format_exception(exc)))
    return Path(name)


def main(argv: Sequence[str] | None = None) -> int:
    from workbench.lease.leases import LeaseLost, SlotBusy, check_settings
    from workbench.lease.store import LeaseConfigError

    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.cmd == "rate":
            check_settings()  # WB_LEASE_*: refused before anything, --check too
        return {"rate": cmd_rate, "plan": cmd_plan, "compare": cmd_compare}[args.cmd](args)
    except UsageError as e:  # one line, whatever the message held, naming the flag
        print(f"workbench: {one_line(str(e), option_strings(parser))}", file=sys.stderr)
        return 2
    except LeaseConfigError as e:  # WB_LEASE_STORE, WB_LEASE_STALE_S, WB_LEASE_WAIT_S
        print(f"workbench: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("workbench: interrupted (re-run the same command to resume)", file=sys.stderr)
        return 130
    except RatingKilled as e:  # SIGTERM: the slot is torn down by a detached process
        print(f"workbench: {e} (re-run the same command to resume)", file=sys.stderr)
        return 143
    except HarnessError as e:  # a provisioning step failed: one line + the log
        print(f"workbench: {e}", file=sys.stderr)
        return 1
    except SlotBusy as e:  # a refusal: the slot is another rating's (the message names the holder)
        print(f"workbench: {one_line(str(e), set())}", file=sys.stderr)
        return 2
    except LeaseLost as e:  # another rating took the slot over mid-rating
        why = one_line(str(e), set())
        print(f"workbench: {why} (re-run the same command to resume)", file=sys.stderr)
        return 1
    except Exception as e:  # unexpected: one line here, the whole trace in a file
        print(
            f"workbench: unexpected {type(e).__name__}: {one_line(str(e), set())[:300]} "
            f"(full trace: {_trace_file(e)})",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
