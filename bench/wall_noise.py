#!/usr/bin/env python3
"""Trial-to-trial noise of the real server at the wall, at a fixed trial length (issue 30).

    .venv/bin/python bench/wall_noise.py [--loads 3600,3800,4000,4200] [--trials 6] [--runlength 60]
        [--slot slot1] [--profile quick] [--out /tmp/wall-noise/<time>]

Leases the slot, provisions the main job's default server (`workbench rate --profile P`'s plan),
deploys fstress and its warm-up trial, then runs --trials trials of --runlength s at each load in
the order given (ascending by default: no trial follows an overloaded one at a higher load),
ending after the first load whose median trial mean exceeds --stop-ms, and tears down (also on a
failure) — provision, deploy and teardown are the pipeline's own steps; a killed run's slot is
reaped by the next start. Each trial's record is written where a rating's are
(OUT/work/trials/<n>.json), so

    PYTHONPATH=src:. .venv/bin/python bench/wall_calibration.py --ratings 'OUT/work'

reads them beside the logged 2 s and 10 s ratings and prints the same figures (sd of the log trial
mean near λ40, lag-1) for the real server at this trial length: what the `wall` family's swing at
60 s (WALL_SWING·√(10 s/r)) is checked against. Prints each trial's mean and, per load, the sd of
log trial mean. Runs as root (slots); nothing else should run beside it.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# the script's own folder off the path: bench/bottleneck.py would shadow the package pandas imports
sys.path[:] = [str(REPO / "src")] + [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
from workbench import cli  # noqa: E402
from workbench.lease.heartbeat import holding  # noqa: E402
from workbench.lease.leases import lease_slot  # noqa: E402
from workbench.pipeline.slot import harness_for, reap_slots, teardown  # noqa: E402
from workbench.pipeline.steps import deploy, provision  # noqa: E402
from workbench.store.local import LocalStore  # noqa: E402

LEASE_WAIT_S = 600.0


def loads_arg(text: str) -> list[float]:
    loads = [float(x) for x in text.split(",") if x.strip()]
    if not loads or any(not (math.isfinite(x) and x > 0) for x in loads):
        raise argparse.ArgumentTypeError(f"loads must be positive numbers, comma-separated; got {text!r}")
    return loads


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loads", type=loads_arg, default=loads_arg("3600,3800,4000,4200"))
    ap.add_argument("--trials", type=int, default=6, help="trials at each load (1–50)")
    ap.add_argument("--runlength", type=float, default=60.0, help="s per trial (1–600)")
    ap.add_argument("--slot", default="slot1")
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--stop-ms", type=float, default=400.0,
                    help="end the ladder after a load whose median trial mean exceeds this (default 10·R_sat)")
    ap.add_argument("--out", type=Path, default=Path(f"/tmp/wall-noise/{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"))
    a = ap.parse_args(argv)
    if not (1 <= a.trials <= 50 and 1 <= a.runlength <= 600):
        ap.error("--trials must be 1–50 and --runlength 1–600 s")
    args = cli._parser().parse_args(["rate", "--profile", a.profile, "--slot", a.slot, "--results", str(a.out)])
    plan = cli.build_plan(args, rating_id=a.out.name)
    plan = dataclasses.replace(plan, workdir=str(a.out / "work"))
    reap_slots(log=lambda s: print(s, flush=True))     # slots whose holder is gone, as every start does
    plan = lease_slot(plan, wait_s=LEASE_WAIT_S, log=lambda s: print(s, flush=True))
    by_load: dict[float, list[float]] = {}
    try:
        t0 = time.monotonic()
        store = LocalStore(a.out)                   # the pipeline's steps: spec, sysinfo and timings to OUT
        provision(plan, store)
        warm = deploy(plan, store)
        print(f"{plan.server_text()}\nprovision + deploy {time.monotonic() - t0:.0f} s; {warm}", flush=True)
        with holding(plan):
            h = harness_for(plan)
            n = 0
            for load in a.loads:
                for _ in range(a.trials):
                    t = h.measure(load, a.runlength, trial_id=n)
                    by_load.setdefault(load, []).append(t.mean_ms)
                    print(f"trial {n:3d}  {load:7.0f} ops/s × {a.runlength:g} s  mean {t.mean_ms:9.2f} ms  "
                          f"p95 {t.p95_ms:9.2f} ms  valid {t.valid}{'' if t.valid else ' (' + t.reason + ')'}", flush=True)
                    n += 1
                if statistics.median(by_load[load]) > a.stop_ms:
                    print(f"median above {a.stop_ms:g} ms at {load:g} ops/s: the ladder ends here", flush=True)
                    break
    finally:
        print(f"teardown: {teardown(plan)}", flush=True)   # a failed one keeps the lease, marked dirty
    print(f"\nper load ({a.runlength:g} s trials): n, median mean ms, sd of log trial mean")
    for load, ms in by_load.items():
        logs = [math.log(max(m, 1e-3)) for m in ms]
        sd = statistics.stdev(logs) if len(logs) > 1 else math.nan
        print(f"  {load:7.0f}  {len(ms):2d}  {statistics.median(ms):9.2f}  {sd:.3f}")
    print(f"\nrecords: {a.out / 'work' / 'trials'}; the calibration figures:\n"
          f"  PYTHONPATH=src:. .venv/bin/python bench/wall_calibration.py --ratings '{a.out / 'work'}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
