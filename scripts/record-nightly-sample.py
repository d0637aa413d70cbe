#!/usr/bin/env python3
"""Record three real nightly nights of one baseline into a local store, for the tests that judge
verdicts and reports on recorded trials (tests/data/nightly_store/):

    night 1  web_server, smoke, read_iops 100   (the baseline: no history yet)
    night 2  the same configuration             (not a regression)
    night 3  read_iops 40                       (a regression)

Each night runs the nightly pipeline's own steps (start_night → rate_baseline → compare) on a real
slot, so night 2 and 3 are seeded at the reference load of the nights before, as in the DAG.
Only the objects `compare` reads are kept (config, records, spec, result, trials), and each trial
record without its raw fstress JSON (as tests/data/regression_sample.json): 0.13 MB instead of 1.6.

    sudo .venv/bin/python scripts/record-nightly-sample.py [--slot slot1] [--out tests/data/nightly_store]
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from workbench.pipeline import nightly
from workbench.store.local import LocalStore

NIGHTS = {"2026-11-01": 100, "2026-11-02": 100, "2026-11-03": 40}
BASELINE = "web"


def without_raw(obj):
    """obj with every trial record's `raw` (the fstress JSON) left out."""
    if isinstance(obj, dict):
        return {k: without_raw(v) for k, v in obj.items() if k != "raw"}
    if isinstance(obj, list):
        return [without_raw(v) for v in obj]
    return obj


def kept_keys(store: LocalStore, rating_ids: list[str]) -> list[str]:
    """What `compare` reads: each night's configuration and baseline record, each rating's spec,
    result and trials."""
    keys = [k for night in NIGHTS for k in (store.night_config_key(night), store.baseline_key(night, BASELINE))]
    for rid in rating_ids:
        keys += [store.spec_key(rid), store.result_key(rid), *store.list_keys(store.trials_prefix(rid))]
    return sorted(keys)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slot", default="slot1")
    ap.add_argument("--out", type=Path, default=Path("tests/data/nightly_store"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="wb-nightly-rec-"))
    store = LocalStore(work)
    rating_ids = []
    for night, read_iops in NIGHTS.items():
        params = {"workload": "web_server", "profile": "smoke", "read_iops": read_iops, "slot": args.slot}
        cfg = work / "nightly.yml"
        cfg.write_text(f"tolerance: 0.25\nconfidence: 0.95\nbaselines:\n  - name: {BASELINE}\n"
                       f"    params: {json.dumps(params)}\n")
        jobs = nightly.start_night(store, str(cfg), None, night)
        records = [nightly.rate_baseline(store, night, j["baseline"]) for j in jobs]
        rating_ids += [r["rating_id"] for r in records]
        for v in nightly.compare(store, night, records):
            print(night, f"read_iops {read_iops}: λ* {v['current_peak']}", "REGRESSION" if v["regression"] else "ok")
    shutil.rmtree(args.out, ignore_errors=True)
    for key in kept_keys(store, rating_ids):
        dst = args.out / key
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(json.dumps(without_raw(store.get_json(key)), indent=1) + "\n")
    print(f"recorded {sum(1 for _ in args.out.rglob('*.json'))} objects under {args.out}")


if __name__ == "__main__":
    main()
