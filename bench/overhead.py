#!/usr/bin/env python3
"""Orchestration time per trial outside fstress's measured interval (issue 4; goal <= 3 s).

    .venv/bin/python bench/overhead.py [--slot slot2] [--inventory FILE] [--trials 10] [--runlength 2] [--warmup 1]
                                       [--load 200] [--poll 0] [--path playbook|agent|both]
                                       [--json bench/out/overhead.json]

Provisions the slot (default server configuration on tmpfs: nothing here should be disk-bound),
deploys fstress, then runs N trials through AnsibleHarness.measure (ansible-runner →
playbooks/run_trial.yml → fstress on the load host → fetch → fstress merge). Overhead of a trial =
wall time of measure() − runlength − warm-up. Where it goes, from the playbook's event stream:
runner + ansible-playbook start-up (to the first event), each task's duration, and the part of the
`Run fstress` task beyond runlength + warm-up (start-at margin, process start, drain of the last
calls). --poll N runs the fstress task async with poll N s instead of synchronously (for comparison).

--path agent runs the trials through the resident fstress agents (measure/agent.py: deploy starts
one per load host; a trial is a request over its stdin, no Ansible run); --path both alternates a
playbook trial and an agent trial on the same deployment (the warm-up trial first, through the
playbook, as the harness checks the server then), and prints both medians and their ratio.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
from workbench.measure.ansible import AnsibleHarness  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slot", default="slot2")
    ap.add_argument("--inventory", type=Path, default=None, help="default: inventory/local/hosts.yml")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--runlength", type=float, default=2.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--load", type=float, default=200.0)
    ap.add_argument("--poll", type=int, default=0)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "overhead")
    ap.add_argument("--json", type=Path, default=REPO / "bench" / "out" / "overhead.json")
    ap.add_argument("--path", choices=("playbook", "agent", "both"), default="playbook")
    ap.add_argument("--no-provision", action="store_true", help="slot already provisioned and deployed")
    a = ap.parse_args()

    h = AnsibleHarness(slot=a.slot, inventory=a.inventory, factors={"fs": "tmpfs"}, workload="web_server", results_dir=a.out,
                       warmup_s=a.warmup, fileset_rate=500, extravars={"fstress_trial_poll_s": a.poll,
                                                                "fstress_lag_bound": "10ms"},
                       agent=a.path != "playbook")
    t0 = time.monotonic()
    if not a.no_provision:
        h.provision()
        t_prov = time.monotonic() - t0
        h.deploy()
        t_dep = time.monotonic() - t0 - t_prov
        if a.path != "playbook":          # the server check (first trial) is the playbook's
            h.warm_up(a.load, a.runlength)
    else:
        t_prov = t_dep = 0.0
    rows = []
    try:
        for i in range(a.trials):
            if a.path == "both":
                h.agent = i % 2 == 1
            t = h.measure(a.load, a.runlength, check_server=False if a.path != "playbook" else None)
            run = h.last_run
            tim = h.timings[-1]
            fst = sum(v for k, v in run.task_s.items() if k.startswith("Run fstress"))
            if tim["path"] == "agent":
                fst, run.first_event_s = tim["playbook_s"], 0.0
            row = {"trial": i, "path": tim["path"], "valid": t.valid, "reason": t.reason, "wall_s": tim["wall_s"],
                   "overhead_s": tim["overhead_s"], "runner_startup_s": run.first_event_s,
                   "fstress_task_beyond_interval_s": fst - a.runlength - a.warmup,
                   "tasks_s": run.task_s,
                   "after_playbook_s": tim["wall_s"] - run.elapsed_s}
            rows.append(row)
            print(f"trial {i:2d} ({tim['path']:8s}): valid={t.valid} wall {tim['wall_s']:.2f} s, overhead {tim['overhead_s']:.2f} s "
                  f"(runner start {run.first_event_s:.2f}, fstress task beyond interval "
                  f"{row['fstress_task_beyond_interval_s']:.2f})", flush=True)
    finally:
        if not a.no_provision:
            h.teardown()
    by_path = {p: [r["overhead_s"] for r in rows if r["path"] == p] for p in ("playbook", "agent")}
    for p, v in by_path.items():
        if v:
            print(f"{p:8s}: overhead median {statistics.median(v):.2f} s, mean {statistics.mean(v):.2f} s, "
                  f"max {max(v):.2f} s over {len(v)} trials")
    if all(by_path.values()):
        print(f"agent / playbook median overhead: {statistics.median(by_path['agent']) / statistics.median(by_path['playbook']):.2f}")
    ov = [r["overhead_s"] for r in rows]
    tasks: dict[str, list[float]] = {}
    for r in rows:
        for k, v in r["tasks_s"].items():
            tasks.setdefault(k, []).append(v)
    print(f"\nprovision {t_prov:.1f} s, deploy {t_dep:.1f} s (once per sample)")
    print(f"overhead per trial over {len(ov)} trials: mean {statistics.mean(ov):.2f} s, "
          f"median {statistics.median(ov):.2f} s, max {max(ov):.2f} s  (goal <= 3 s)")
    print(f"  runner + ansible-playbook start-up: {statistics.mean(r['runner_startup_s'] for r in rows):.2f} s")
    print(f"  fstress task beyond runlength+warm-up: "
          f"{statistics.mean(r['fstress_task_beyond_interval_s'] for r in rows):.2f} s")
    print("  tasks (mean s):")
    for k, v in sorted(tasks.items(), key=lambda kv: -statistics.mean(kv[1])):
        if statistics.mean(v) >= 0.02:
            print(f"    {statistics.mean(v):6.2f}  {k}")
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(a).items()}, "provision_s": t_prov,
                                  "deploy_s": t_dep, "trials": rows,
                                  "overhead_mean_s": statistics.mean(ov),
                                  "overhead_median_s": statistics.median(ov),
                                  **{f"overhead_median_{p}_s": statistics.median(v) for p, v in by_path.items() if v}},
                                 indent=2))
    return 0 if statistics.median(ov) <= 3.0 else 1


if __name__ == "__main__":
    sys.exit(main())
