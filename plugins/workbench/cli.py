"""`workbench` command line: rate one sample end to end, or plan a rating's cost.

    workbench rate --workload web_server [--slot slot1] [--profile quick|standard]
                   [--threads N] [--fs ext4|xfs|btrfs|tmpfs] [--disks N] [--memory-mb M]
                   [--read-iops N] [--write-iops N] [--read-bps N] [--write-bps N] [--async]
                   [--cache-policy keep|drop|restart] [--policy binsearch|...] [--out DIR]
    workbench plan --workload web_server [--profile quick] [--policy ...] [--capacity OPS] [--reps N]

`rate`: provision (playbooks/provision_sut.yml) → deploy (deploy_loadgen.yml) → find_peak with
``AnsibleHarness.measure`` (run_trial.yml per trial) → teardown (always). Every trial is appended
to ``trials.jsonl`` as soon as it is measured; spec.json, result.json and sysinfo.json sit beside
it. Bad input fails in one line before anything is provisioned.

`plan`: the dry-run planner (``workbench.simulate.plan``) on a simulated server of the workload's
family: expected cost, trials and convergence of the same spec.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from workbench.trial import TrialResult

REPO = Path(__file__).resolve().parents[2]
FSTRESS = REPO / "bin" / "fstress"

# Profiles: spec fields + harness settings + default factors.
# quick: a real rating in a few minutes on a 2-core box. Ganesha is pinned to core 0 and fstress to
# core 1; the server gets a throttled disk and a memory limit below the file set, so λ* is
# I/O-bound well below CPU saturation (past it fstress flags itself generator-saturated).
PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        "spec": dict(r_sat_ms=40.0, width=0.25, confidence=0.90, accuracy=0.80, policy="binsearch",
                     first_load=200.0, runlength_s=5.0, runlength_policy="fixed", max_trials=40,
                     budget_s=330.0, trial_overhead_s=5.0, resolution=0.05, max_loads=20,
                     max_trials_per_load=4),
        "warmup_s": 2.0,
        "warmup_trial_s": 10.0,          # one discarded trial after deploy, at the first load
        "fileset_rate": 8000.0,
        # this box is shared (2 cores; Ansible itself runs beside fstress): tolerate wake-up jitter
        "extravars": {"fstress_lag_bound": "10ms"},
        "factors": dict(fs="ext4", disks=1, memory_mb=128, read_iops=100),
    },
    "standard": {
        "spec": dict(r_sat_ms=40.0, width=0.10, confidence=0.95, accuracy=0.90, policy="binsearch",
                     first_load=100.0, runlength_s=60.0, runlength_policy="adaptive",
                     runlength_min_s=30.0, runlength_max_s=300.0, trial_overhead_s=10.0),
        "warmup_s": 10.0,
        "warmup_trial_s": 60.0,
        "fileset_rate": 4000.0,
        "factors": {},
    },
}
# smoke: a real but short rating (≈ 1½ min) for the pipeline tests: quick's server and file set
# (λ* I/O-bound near 900 ops/s; a file set that fits the 128 MiB cache makes the box CPU-bound
# past 30k ops/s instead), 2 s trials, at most 2 per load (then classified by their median), a
# wide region (s = 0.5) and a coarse bracket (15 %). λ* is coarse; the mechanics are the same.
PROFILES["smoke"] = {
    **PROFILES["quick"], "warmup_s": 1.0, "warmup_trial_s": 6.0,
    "spec": {**PROFILES["quick"]["spec"], **dict(
        width=0.5, confidence=0.80, accuracy=0.60, first_load=400.0, runlength_s=2.0, max_trials=20,
        budget_s=120.0, trial_overhead_s=4.0, resolution=0.15, max_loads=10, max_trials_per_load=2)},
}

FAMILY_OF_WORKLOAD = {"web_server": "web", "web_proxy": "web", "db_tp": "db", "mail": "mail",
                      "news": "mail", "specsfs97": "mail", "p2p": "db"}

_FACTOR_FLAGS = (("threads", int), ("fs", str), ("disks", int), ("disk_size_mb", int),
                 ("memory_mb", int), ("read_iops", int), ("write_iops", int), ("read_bps", int),
                 ("write_bps", int), ("cache_policy", str), ("backend", str), ("server_cpus", str))


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


# ----------------------------------------------------------------------------- argument parsing

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="workbench", description="NFS benchmarking workbench")
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--workload", default="web_server", help="fstress workload (default web_server)")
        sp.add_argument("--profile", choices=sorted(PROFILES), default="quick")
        sp.add_argument("--policy", help="search policy: linear|binsearch|model|safeguarded")
        sp.add_argument("--r-sat-ms", type=float, help="R_sat: mean response time threshold (ms)")
        sp.add_argument("--runlength-s", type=float, help="runlength of a trial (s)")
        sp.add_argument("--first-load", type=float, help="first offered load (ops/s)")
        sp.add_argument("--seed-load", type=float, help="seeded search: start near this load (ops/s)")
        sp.add_argument("--budget-s", type=float, help="cost cap (runlengths + overheads, s)")
        sp.add_argument("--confidence", type=float)
        sp.add_argument("--accuracy", type=float)
        for name, typ in _FACTOR_FLAGS:
            sp.add_argument("--" + name.replace("_", "-"), dest=name, type=typ, default=None)
        sp.add_argument("--async", dest="sync", action="store_false", default=None,
                        help="export async (default: the profile's / the role's sync)")
        sp.add_argument("--sync", dest="sync", action="store_true", default=None)

    r = sub.add_parser("rate", help="rate one sample end to end on a slot")
    common(r)
    r.add_argument("--slot", default="slot1")
    r.add_argument("--inventory", type=Path, default=REPO / "inventory" / "local" / "hosts.yml")
    r.add_argument("--out", type=Path, help="results directory (default results/<time>-<workload>-<slot>)")
    r.add_argument("--warmup-s", type=float)
    r.add_argument("--fileset-rate", type=float)
    r.add_argument("--fstress-cpus", default=None, help='taskset CPU list for fstress (default "1")')
    r.add_argument("--no-teardown", action="store_true", help="leave the slot provisioned")
    r.add_argument("--quiet", action="store_true", help="no per-trial progress")

    pl = sub.add_parser("plan", help="dry-run planner: expected cost of a rating (simulated server)")
    common(pl)
    pl.add_argument("--capacity", type=float, help="simulated capacity (ops/s) instead of the family model")
    pl.add_argument("--reps", type=int, default=20)
    pl.add_argument("--seed", type=int, default=0)
    return p


def build_spec(args: argparse.Namespace):
    from workbench.search import RatingSpec
    prof = PROFILES[args.profile]
    fields = dict(prof["spec"])
    for attr, key in (("policy", "policy"), ("r_sat_ms", "r_sat_ms"), ("runlength_s", "runlength_s"),
                      ("first_load", "first_load"), ("seed_load", "seed_load"),
                      ("budget_s", "budget_s"), ("confidence", "confidence"), ("accuracy", "accuracy")):
        v = getattr(args, attr, None)
        if v is not None:
            fields[key] = v
    if args.runlength_s is not None:
        fields["runlength_policy"] = "fixed"
    try:
        return RatingSpec(**fields)
    except (TypeError, ValueError) as e:
        raise UsageError(str(e)) from None


def build_factors(args: argparse.Namespace) -> dict[str, Any]:
    from workbench.harness import factor_vars
    f = dict(PROFILES[args.profile]["factors"])
    for name, _ in _FACTOR_FLAGS:
        v = getattr(args, name, None)
        if v is not None:
            f[name] = v
    if args.sync is not None:
        f["sync"] = args.sync
    if f.get("fs") == "tmpfs":
        for k in ("read_iops", "write_iops", "read_bps", "write_bps"):
            if getattr(args, k, None) is None:
                f.pop(k, None)           # a profile's disk throttle means nothing on tmpfs
    try:
        factor_vars(f)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return f


def known_workloads() -> list[str]:
    if not FSTRESS.is_file():
        raise UsageError(f"fstress binary {FSTRESS} is missing: run `make fstress`")
    out = subprocess.run([str(FSTRESS), "workloads"], capture_output=True, text=True, timeout=30)
    return [ln.split()[0] for ln in out.stdout.splitlines() if ln.strip()]


def _inventory_groups(path: Path) -> set[str]:
    import yaml
    groups: set[str] = set()

    def walk(name: str, node: Any) -> None:
        groups.add(name)
        if isinstance(node, dict):
            for child, sub in (node.get("children") or {}).items():
                walk(child, sub)

    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise UsageError(f"cannot read inventory {path}: {e}") from None
    for name, node in data.items():
        walk(name, node)
    return groups


def check_rate_inputs(args: argparse.Namespace) -> None:
    wls = known_workloads()
    if args.workload not in wls and not Path(args.workload).is_file():
        raise UsageError(f"unknown workload {args.workload!r}; canned: {', '.join(wls)}")
    if not args.inventory.is_file():
        raise UsageError(f"inventory {args.inventory} not found")
    groups = _inventory_groups(args.inventory)
    if args.slot not in groups:
        slots = sorted(g for g in groups if g.startswith("slot"))
        raise UsageError(f"slot {args.slot!r} is not a group of {args.inventory} (slots: {', '.join(slots)})")
    for name in ("warmup_s", "fileset_rate"):
        v = getattr(args, name)
        if v is not None and (not math.isfinite(v) or v < 0 or (name == "fileset_rate" and v == 0)):
            raise UsageError(f"--{name.replace('_', '-')} must be a number {'>' if name == 'fileset_rate' else '>='} 0, got {v}")


# ----------------------------------------------------------------------------- progress output

class Progress:
    """One line per trial plus a bar of spent cost against the budget."""

    def __init__(self, spec, stream=sys.stderr, enabled: bool = True) -> None:
        self.spec, self.stream, self.enabled = spec, stream, enabled
        self.t0 = time.monotonic()
        self.n = 0
        self.cost = 0.0
        self.reason = ""

    def before(self, load: float, runlength: float, reason: str) -> None:
        self.reason = reason
        if self.enabled:
            self.stream.write(f"  trial {self.n + 1:>3}: {load:9.1f} ops/s x {runlength:g} s  ({reason}) ...\r")
            self.stream.flush()

    def after(self, t: TrialResult) -> None:
        self.n += 1
        self.cost += float(t.runlength_s or 0.0) + self.spec.trial_overhead_s
        if not self.enabled:
            return
        status = ("valid" + (f" ({t.reason})" if t.reason else "")) if t.valid else f"INVALID: {t.reason}"
        line = (f"  trial {self.n:>3}: {t.load_ops_s:9.1f} ops/s x {t.runlength_s:g} s  mean {t.mean_ms:8.2f} ms"
                f"  p95 {t.p95_ms:8.2f} ms  achieved {t.achieved_rate:9.1f}  {status}  [{self.reason}]")
        budget = self.spec.budget_s
        elapsed = time.monotonic() - self.t0
        if math.isfinite(budget):
            frac = min(self.cost / budget, 1.0)
            bar = "#" * int(round(frac * 30))
            tail = f"  [{bar:<30}] cost {self.cost:5.0f}/{budget:g} s, wall {elapsed:5.0f} s"
        else:
            tail = f"  cost {self.cost:5.0f} s, wall {elapsed:5.0f} s"
        self.stream.write("\x1b[2K" + line + "\n" + tail + "\n")
        self.stream.flush()


def format_result(res, wall_s: float) -> str:
    lo, hi = res.bracket
    ci = res.peak_rate_ci
    near = res.mean_load_ops_s if math.isfinite(res.mean_load_ops_s) else None
    rows = [
        ("peak rate λ*", f"{res.peak_rate:.1f} ops/s"),
        ("converged", f"{res.converged} ({res.reason})"),
        ("bracket", f"[{lo:.1f}, {hi:.1f}] ops/s"),
        ("λ* CI", f"[{ci[0]:.1f}, {ci[1]:.1f}] ops/s"),
        (f"R̄ at {near:g} ops/s" if near is not None else "R̄ at peak",
         # a mean response time is > 0: the t-interval's negative part holds no possible value
         f"{res.mean_ms_at_peak:.2f} ms, CI [{max(0.0, res.mean_ms_ci[0]):.2f}, {res.mean_ms_ci[1]:.2f}]"
         f" (R_sat {res.r_sat_ms:g} ms, accuracy {res.accuracy:.3f}; the tested load nearest λ*)"),
        ("trials", f"{res.n_trials} ({res.n_invalid} invalid) at {res.n_loads} loads"),
        ("cost", f"{res.cost_s:.0f} s (spec units), wall {wall_s:.0f} s"),
    ]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{w}}  {v}" for k, v in rows)


def _json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


# ----------------------------------------------------------------------------- commands

def cmd_rate(args: argparse.Namespace, harness_factory=None) -> int:
    from workbench.harness import AnsibleHarness
    from workbench.search import decide, find_peak, NextTrial

    spec = build_spec(args)
    factors = build_factors(args)
    prof = PROFILES[args.profile]
    warmup = args.warmup_s if args.warmup_s is not None else prof["warmup_s"]
    fileset_rate = args.fileset_rate if args.fileset_rate is not None else prof["fileset_rate"]
    if harness_factory is None:
        check_rate_inputs(args)
    out = args.out or (REPO / "results" / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{args.workload}-{args.slot}")
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    extravars: dict[str, Any] = dict(prof.get("extravars", {}))
    if args.fstress_cpus is not None:
        extravars["fstress_cpus"] = args.fstress_cpus
    make = harness_factory or AnsibleHarness
    try:
        h = make(slot=args.slot, inventory=args.inventory, factors=factors, workload=args.workload,
                 results_dir=out, warmup_s=warmup, fileset_rate=fileset_rate, extravars=extravars,
                 overload_ms=spec.r_sat_ms * (1.0 + spec.width))
    except ValueError as e:
        raise UsageError(str(e)) from None
    (out / "spec.json").write_text(json.dumps({
        "spec": dataclasses.asdict(spec), "profile": args.profile, "workload": args.workload,
        "slot": args.slot, "inventory": str(args.inventory), "factors": factors, "warmup_s": warmup,
        "fileset_rate": fileset_rate, "extravars": extravars}, indent=2, default=_json_default))
    trials_path = out / "trials.jsonl"
    trials_path.write_text("")
    prog = Progress(spec, enabled=not args.quiet)
    log: list[TrialResult] = []

    def measure(load: float, runlength: float) -> TrialResult:
        d = decide(spec, log)
        prog.before(load, runlength, d.reason if isinstance(d, NextTrial) else "")
        return h.measure(load, runlength)

    def on_trial(t: TrialResult) -> None:
        log.append(t)
        with open(trials_path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"n": len(log) - 1, "decision": prog.reason, **t.to_dict()},
                               default=_json_default) + "\n")
        prog.after(t)

    t0 = time.monotonic()
    err = sys.stderr
    res = None
    try:
        err.write(f"workbench rate: {args.workload} on {args.slot}, profile {args.profile}, factors {factors}\n"
                  f"  results: {out}\n  provisioning ...\n")
        h.provision()
        err.write(f"  deploying fstress (file set for {fileset_rate:g} ops/s) ...\n")
        h.deploy()
        if prof.get("warmup_trial_s"):
            w = h.warm_up(spec.seed_load or spec.first_load, prof["warmup_trial_s"])
            err.write(f"  warm-up trial (discarded): {w.load_ops_s:g} ops/s × {w.runlength_s:g} s → mean "
                      f"{w.mean_ms:.2f} ms{'' if w.valid else ' (' + w.reason + ')'}\n")
        err.write(f"  searching: R_sat {spec.r_sat_ms:g} ms, c {spec.confidence:g}, a {spec.accuracy:g}, "
                  f"policy {spec.policy}, runlength {spec.runlength_s:g} s + warm-up {warmup:g} s, "
                  f"budget {spec.budget_s:g} s\n")
        res = find_peak(spec, measure, on_trial=on_trial)
    finally:
        if not args.no_teardown:
            err.write("  teardown ...\n")
            td = h.teardown()
            if td is not None and not getattr(td, "ok", True):
                err.write(f"  warning: teardown failed: {td.message()}\n")
    wall = time.monotonic() - t0
    d = res.to_dict()
    d["wall_s"] = wall
    d["results_dir"] = str(out)
    (out / "result.json").write_text(json.dumps(d, indent=2, default=_json_default))
    print(f"\n{args.workload} on {args.slot} ({args.profile}): {out}")
    print(format_result(res, wall))
    return 0 if res.converged else 1


def cmd_plan(args: argparse.Namespace) -> int:
    from workbench.simulate import SimulatedServer, plan
    spec = build_spec(args)
    if args.reps < 1:
        raise UsageError(f"--reps must be >= 1, got {args.reps}")
    if args.capacity is not None:
        if not (math.isfinite(args.capacity) and args.capacity > 0):
            raise UsageError(f"--capacity must be > 0, got {args.capacity}")
        server = SimulatedServer(capacity_ops_s=args.capacity)
        what = f"simulated server, capacity {args.capacity:g} ops/s"
    else:
        family = FAMILY_OF_WORKLOAD.get(args.workload, "web")
        f = {k: getattr(args, k) for k in ("threads", "disks", "memory_mb", "fs") if getattr(args, k) is not None}
        if "fs" in f and f["fs"] == "tmpfs":
            f.pop("fs")
        try:
            server = SimulatedServer.for_factors(family, f)
        except ValueError as e:
            raise UsageError(str(e)) from None
        what = f"simulated {family} server {f or '(default factors)'}, capacity {server.capacity_ops_s:.0f} ops/s"
    p = plan(spec, server, reps=args.reps, seed=args.seed)
    print(f"plan: {args.workload}, profile {args.profile}, policy {spec.policy} on a {what}")
    print(f"  expected cost    {p['expected_cost_s']:.0f} s  (p10 {p['cost_s']['p10']:.0f}, p90 {p['cost_s']['p90']:.0f})")
    print(f"  expected trials  {p['expected_trials']:.1f}  (p10 {p['trials']['p10']:.0f}, p90 {p['trials']['p90']:.0f})")
    print(f"  expected loads   {p['expected_loads']:.1f}")
    print(f"  convergence      {p['convergence_rate']:.0%} of {p['n_runs']} runs")
    print(f"  median |λ*−true|/true  {p['median_rel_error']:.3f}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.cmd == "rate":
            return cmd_rate(args)
        return cmd_plan(args)
    except UsageError as e:
        print(f"workbench: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # harness failure: one line + where the log is
        from workbench.harness import HarnessError
        if isinstance(e, HarnessError):
            print(f"workbench: {e}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
