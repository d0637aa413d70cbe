#!/usr/bin/env python3
"""λ* over nfs_version ∈ {3, 4.1} on real Ganesha: map_surface's steps in this process (issue 35).

    .venv/bin/python bench/nfs_versions.py --store DIR [--profile quick] [--workload web_server]
        [--inventory FILE] [--slot slot1]

The map_surface DAG's tasks without Airflow, over a local store in DIR: start_sweep (a full factorial
over nfs_version "3" and "4.1", every sample through the validation pass), rate_sample for each
sample in seeding order (the second seeded from the first's λ*, as the DAG does), decide_round,
finish_sweep (fit) → surface_report_step (report). Both samples rate the same server
configuration: the slot's Ganesha exports v3 and v4.1 either way. Prints each sample's λ*, its interval and the ratio; the report
(λ* and intervals side by side) is DIR/surfaces/<sweep id>/report.html.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True, type=Path, help="local results store (a directory)")
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--workload", default="web_server")
    ap.add_argument("--inventory", help="inventory file (default: the local workbench's)")
    ap.add_argument("--slot", default="slot1", help="the slot both samples rate on")
    a = ap.parse_args(argv)
    os.environ["WB_SLOTS"] = a.slot                     # before workbench reads it: the sweep's "auto" slot
    if a.inventory:
        os.environ["WB_INVENTORY"] = str(Path(a.inventory).resolve())
    from analysis.rating_report import report_step
    from analysis.surface_report import surface_report_step
    from workbench.pipeline import sweep
    from workbench.store.local import LocalStore

    store = LocalStore(a.store)
    store.ensure_bucket()
    sweep_id = f"nfs_versions_{a.profile}_{a.workload}"
    t0 = time.time()
    jobs = sweep.start_sweep(store, {"profile": a.profile, "workload": a.workload, "design": "fullfact",
                                     "factors": {"nfs_version": ["3", "4.1"]}}, sweep_id)
    rows = [sweep.rate_sample(store, j["sweep"], j["item"], report=report_step) for j in jobs]
    sweep.decide_round(store, sweep_id, 0)
    sweep.finish_sweep(store, sweep_id)
    print(f"report: {surface_report_step(store, sweep_id)}")
    by = {r["sample"]["nfs_version"]: r for r in rows}
    for v, r in sorted(by.items()):
        print(json.dumps({"nfs_version": v, "peak_rate": r["peak_rate"], "peak_rate_ci": r["peak_rate_ci"],
                          "converged": r["converged"], "n_trials": r["n_trials"], "rating_id": r["rating_id"]}))
    if by["3"]["peak_rate"] and by["4.1"]["peak_rate"]:
        print(f"λ*(4.1) / λ*(3) = {by['4.1']['peak_rate'] / by['3']['peak_rate']:.3f}; wall {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
