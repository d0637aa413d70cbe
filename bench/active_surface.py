#!/usr/bin/env python3
"""An active map_surface sweep on real Ganesha, in one process: the DAG's steps in its order
(start_sweep → rate_sample … → decide_round → round_jobs … → finish_sweep) over a local store,
one rating at a time on the slots of WB_SLOTS / WB_INVENTORY. Prints each round's LOO MAPE, why
the sweep stopped, and where the report is.

    WB_SLOTS=slot24 WB_INVENTORY=/tmp/hosts.yml .venv/bin/python bench/active_surface.py \\
        --results /tmp/active --target 20 --factors '{"read_iops": [50, 75, 100], "threads": [8, 12, 16]}'
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# the script's own folder off the path: bench/bottleneck.py would shadow the package pandas imports
sys.path[:] = [str(REPO / "src")] + [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]

from workbench.pipeline import sweep  # noqa: E402
from workbench.store.local import LocalStore  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, type=Path)
    ap.add_argument("--factors", default='{"read_iops": [50, 75, 100], "threads": [8, 12, 16]}')
    ap.add_argument("--target", type=float, default=20.0, help="mape_target_pct")
    ap.add_argument("--degree", type=int, default=1)
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--budget-s", type=float, default=None, help="sweep_budget_s")
    a = ap.parse_args()
    store = LocalStore(a.results)
    store.ensure_bucket()
    sid = f"active_{int(time.time())}"
    params = {"workload": "web_server", "profile": a.profile, "design": "active", "degree": a.degree,
              "mape_target_pct": a.target, "factors": json.loads(a.factors), "sweep_budget_s": a.budget_s}
    t0 = time.monotonic()
    jobs = sweep.start_sweep(store, params, sid)
    for k in range(sweep.MAX_ROUNDS):
        for j in jobs:
            row = sweep.rate_sample(store, j["sweep"], j["item"], log=lambda m: None)
            print(f"  sample {row['i']} {row['sample']}: λ* {row['peak_rate']} ({row['reason']}), "
                  f"cost {row['cost_s']} s, {time.monotonic() - t0:.0f} s", flush=True)
        if sweep.decide_round(store, sid, k)["done"]:
            break
        jobs = sweep.round_jobs(store, sid, k + 1)
    summary = sweep.finish_sweep(store, sid)
    grid = 1
    for lv in params["factors"].values():
        grid *= len(lv)
    print(json.dumps({"sweep_id": sid, "grid": grid, "n_samples": summary["n_samples"],
                      "stopped": summary["stopped"], "mape_by_samples": summary["mape_by_samples"],
                      "cost_s": summary["cost_s"], "wall_s": round(time.monotonic() - t0)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
