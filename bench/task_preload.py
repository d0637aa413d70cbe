#!/usr/bin/env python3
"""What a task process costs before its work starts, with and without its worker's preload.

A LocalExecutor worker (a fork of the scheduler) or a Celery worker runs each task in a fork of
itself (the task SDK's supervisor; os.fork on Linux). The fork parses the DAG file (BundleDagBag)
and runs the task; what its worker had imported it inherits. This forks children that do what a
rate_peak `trial_k.run` does besides its trial — parse dags/rate_peak.py and check one trial record
with great_expectations (`pipeline.steps.checked_record`) — from a parent like the scheduler
(Airflow initialized, nothing else) and from one that ran `workbench.preload.preload()` too, in
alternation, and prints each child's CPU and wall medians and their ratios.

    PYTHONPATH=src:. .venv/bin/python bench/task_preload.py [--children 6] [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DAG_FILE = REPO / "dags" / "rate_peak.py"
RECORD = {"n": 0, "load_ops_s": 400.0, "achieved_rate": 399.0, "mean_ms": 1.2, "p95_ms": 2.5, "errors": 0,
          "ops_total": 3990, "valid": True, "runlength_s": 10.0}


def child_work() -> None:
    """In the fork: what a trial task does before and besides its trial."""
    from airflow.dag_processing.dagbag import BundleDagBag
    bag = BundleDagBag(dag_folder=str(DAG_FILE), safe_mode=False, load_op_links=False,
                       bundle_path=DAG_FILE.parent, bundle_name="dags-folder")
    assert "rate_peak" in bag.dags, bag.import_errors
    from workbench.pipeline.steps import checked_record
    assert checked_record(dict(RECORD))["gx"] == "passed"


def parent(children: int, warm: bool) -> list[tuple[float, float]]:
    """In a fresh interpreter: initialize Airflow (as the scheduler has), preload if `warm`, then fork
    `children` children one after another; each child's (CPU s, wall s)."""
    import airflow.settings  # noqa: F401  (Airflow initialized, as in the scheduler)
    if warm:
        from workbench.preload import preload
        preload()
    out = []
    for _ in range(children):
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                child_work()
            except BaseException as e:          # noqa: BLE001 (report, then leave the fork)
                print(f"child failed: {e!r}", file=sys.stderr)
                code = 1
            os._exit(code)
        _, status, ru = os.wait4(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit("a child failed")
        out.append((ru.ru_utime + ru.ru_stime, time.perf_counter() - t0))
    return out


def run_parent(children: int, warm: bool, home: str) -> list[tuple[float, float]]:
    env = {**os.environ, "AIRFLOW_HOME": home, "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    cmd = [sys.executable, __file__, "--as-parent", "warm" if warm else "cold", "--children", str(children)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"parent failed ({p.returncode}): {p.stderr[-2000:]}")
    return [tuple(x) for x in json.loads(p.stdout.strip().splitlines()[-1])]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--children", type=int, default=6, help="forks per parent, one after another")
    ap.add_argument("--rounds", type=int, default=2, help="cold and warm parents, in alternation")
    ap.add_argument("--as-parent", choices=("cold", "warm"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.as_parent:
        print(json.dumps(parent(args.children, args.as_parent == "warm")))
        return 0
    print(f"$ python bench/task_preload.py --children {args.children} --rounds {args.rounds}")
    res: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory(prefix="wb-preload-") as home:
        for _ in range(args.rounds):
            for mode in ("cold", "warm"):
                res[mode] += run_parent(args.children, mode == "warm", home)
    med = {m: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v)) for m, v in res.items()}
    for m in ("cold", "warm"):
        print(f"{m}: a task process's CPU {med[m][0]:.2f} s, wall {med[m][1]:.2f} s (median of {len(res[m])})")
    print(f"warm ÷ cold: CPU {med['warm'][0] / med['cold'][0]:.2f}×, wall {med['warm'][1] / med['cold'][1]:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
