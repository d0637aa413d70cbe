#!/usr/bin/env python3
"""What one serialization of each DAG costs, with the Params' schema dialect as shipped and without.

    PYTHONPATH=src .venv/bin/python bench/dag_parse.py [--repeats 3]

Airflow serializes a DAG at every parse by a DAG processor and twice per `dag.test()` (the DAG and
the bag it re-syncs), and resolves every Param of every task each time (apache/airflow#32434). Per
DAG: tasks, Params, the median CPU s of `DagSerialization.serialize_dag` as shipped (draft-07
named, `config.vocabulary.PARAM_DIALECT`) and with the dialect stripped from every Param (jsonschema's
default, 2020-12), alternating A/B in one process, and their ratio.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from workbench.dagrun import load_dag  # noqa: E402

DAG_IDS = ("rate_peak", "map_surface", "nightly_regression", "compare_ratings")


def _all_params(dag) -> list:
    return [holder.params.get_param(name) for holder in (dag, *dag.tasks) for name in holder.params]


def variants(dag, dialect: dict) -> dict[str, dict]:
    """Param → its schema: as shipped, and with the dialect's key removed."""
    params = _all_params(dag)
    return {"shipped": {id(p): p.schema for p in params},
            "stripped": {id(p): {k: v for k, v in p.schema.items() if k not in dialect} for p in params}}


def use(dag, schemas: dict) -> None:
    for p in _all_params(dag):
        p.schema = schemas[id(p)]


def cpu_s(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="serializations per DAG and variant (median)")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    from airflow.serialization.serialized_objects import DagSerialization

    from workbench.config.vocabulary import PARAM_DIALECT
    print(f"$ python bench/dag_parse.py --repeats {args.repeats}")
    print("| DAG | tasks | Params | serialize as shipped (CPU s) | dialect stripped (CPU s) | ratio |")
    print("|---|---|---|---|---|---|")
    for dag_id in DAG_IDS:
        dag = load_dag(dag_id)
        schemas = variants(dag, PARAM_DIALECT)
        runs: dict[str, list[float]] = {k: [] for k in schemas}
        for _ in range(args.repeats):
            for name, variant in schemas.items():     # A/B alternating: drifts in the machine fall on both
                use(dag, variant)
                runs[name].append(cpu_s(lambda: DagSerialization.serialize_dag(dag)))
        new, old = statistics.median(runs["shipped"]), statistics.median(runs["stripped"])
        print(f"| {dag_id} | {len(dag.tasks)} | {len(dag.params)} | {new:.2f} | {old:.2f} | "
              f"{new / old if old else float('nan'):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
