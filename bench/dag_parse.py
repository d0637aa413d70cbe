#!/usr/bin/env python3
"""What the DAGs' Params cost a parse: set after the tasks (as shipped) against Airflow's usual way.

    PYTHONPATH=src .venv/bin/python bench/dag_parse.py [--repeats 3]

A task made inside `with DAG(params=…)` keeps a deep copy of all the DAG's Params (the SDK's
BaseOperator, get_merged_defaults), and Airflow serializes and resolves every copy at every parse by
a DAG processor, twice per `dag.test()` (apache/airflow#32434) and in every task process that loads
the DAG file. The DAGs set their Params after their tasks (dags/README.md), so no task holds a copy.
Per DAG: tasks, Params; the CPU s of giving every task its copies as Airflow would (the constructor's
deep copies); the median CPU s of `DagSerialization.serialize_dag` and the serialized size, as
shipped and with the copies, alternating A/B in one process; and the serialize ratio.
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from workbench.dagrun import load_dag  # noqa: E402

DAG_IDS = ("rate_peak", "map_surface", "nightly_regression", "compare_ratings")


def with_copies(dag) -> tuple[dict, float]:
    """Each task's Params as Airflow's constructor leaves them (a deep copy of the DAG's, source
    "dag"), and the CPU s those copies took."""
    t0 = time.process_time()
    copies = {}
    for task in dag.tasks:
        params = copy.deepcopy(dag.params)
        params._fill_missing_param_source("dag")
        copies[task.task_id] = params
    return copies, time.process_time() - t0


def use(dag, params_of: dict | None) -> None:
    from airflow.sdk.definitions.param import ParamsDict
    for task in dag.tasks:
        task.params = params_of[task.task_id] if params_of else ParamsDict()


def serialize(dag) -> tuple[float, int]:
    from airflow.serialization.serialized_objects import DagSerialization
    t0 = time.process_time()
    data = DagSerialization.serialize_dag(dag)
    return time.process_time() - t0, len(json.dumps(data, default=str))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="serializations per DAG and variant (median)")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    print(f"$ python bench/dag_parse.py --repeats {args.repeats}")
    print("| DAG | tasks | Params | one copy a task (CPU s) | serialize shipped (CPU s, KB) | with copies (CPU s, KB) | ratio |")
    print("|---|---|---|---|---|---|---|")
    for dag_id in DAG_IDS:
        dag = load_dag(dag_id)
        copies, copy_s = with_copies(dag)
        runs: dict[str, list[tuple[float, int]]] = {"shipped": [], "copies": []}
        for _ in range(args.repeats):
            for name, params_of in (("shipped", None), ("copies", copies)):   # A/B: drifts fall on both
                use(dag, params_of)
                runs[name].append(serialize(dag))
        new, old = (statistics.median(s for s, _ in runs[k]) for k in ("shipped", "copies"))
        kb_new, kb_old = (runs[k][0][1] / 1000 for k in ("shipped", "copies"))
        print(f"| {dag_id} | {len(dag.tasks)} | {len(dag.params)} | {copy_s:.2f} | {new:.3f}, {kb_new:.0f} | "
              f"{old:.3f}, {kb_old:.0f} | {new / old if old else float('nan'):.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
