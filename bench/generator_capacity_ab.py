#!/usr/bin/env python3
"""Generator capacity of two fstress builds side by side (before/after a change), one run.

    git archive main loadgen | tar -x -C /tmp/base
    python3 bench/generator_capacity_ab.py --base-src /tmp/base/loadgen [--duration S] [--warmup S]
        [--repeats N] [--rates LIST] [--json OUT]

Python 3 standard library only. It builds fstress from --base-src ("base") and from this
checkout's loadgen/ ("new"), and the reference client, starts one null server (the base's) on
CPU 0 and runs bench/generator_capacity.py's trials, ladders and report for both builds, the two
alternating trial by trial at every rate (so a noisy box weighs on both alike): one core at
quantum 50 us and 500 us, two shards on CPUs 0,1, two shards on the one generator core; then the
reference client (windows 1, 16, 256). It prints each build's report (the issue-34 acceptance
ratios) and the new / base ratios of CPU per call at 10k, 100k and each build's highest passing
rate. Default rates: a shorter ladder than generator_capacity.py's (no 20k, 50k).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import generator_capacity as gc  # bench/, next to this file

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--base-src", type=Path, required=True, help="loadgen/ directory of the base version")
ap.add_argument("--duration", type=float, default=3.0)
ap.add_argument("--warmup", type=float, default=1.0)
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--rates", default="10000,100000,200000,300000,400000,600000,800000,1000000,1400000,2000000")
ap.add_argument("--json", type=Path)
a = ap.parse_args()
a.rates = [int(x) for x in a.rates.split(",")]
env = dict(os.environ, CGO_ENABLED="0")
with tempfile.TemporaryDirectory(prefix="gencmp-") as td:
    tmp = Path(td)
    bins = {}
    for name, src in (("base", a.base_src), ("new", gc.REPO / "loadgen")):
        subprocess.run(["go", "build", "-o", str(tmp / name), "./cmd/fstress"], cwd=src, env=env, check=True)
        bins[name] = tmp / name
    subprocess.run(["go", "build", "-o", str(tmp / "refclient"), "."], cwd=gc.REPO / "bench" / "refclient", env=env, check=True)
    port = gc.free_port()
    server = subprocess.Popen(["taskset", "-c", "0", str(bins["base"]), "nullserver", "--listen", f"127.0.0.1:{port}"],
                              env=dict(os.environ, GOMAXPROCS="1"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        wl = gc.workload(tmp)
        configs = [("one core", "1", "50us", 0), ("one core, quantum 500us", "1", "500us", 0),
                   ("2 shards", "0,1", "50us", 0), ("2 shards on one core", "1", "50us", 2)]
        lads = {b: [] for b in bins}
        for cname, cpus, q, shards in configs:
            st = {b: {"name": cname, "cpus": cpus, "quantum": q, "max_rate": None, "trials": [], "failed": 0, "on": True} for b in bins}
            for rate in a.rates:
                if not any(s["on"] for s in st.values()):
                    break
                reps = {b: [] for b in bins}
                for _ in range(a.repeats):
                    for b in bins:
                        if st[b]["on"]:
                            reps[b].append(gc.fstress_trial(a, bins[b], wl, port, cpus, q, rate, tmp, shards))
                for b in bins:
                    if not st[b]["on"]:
                        continue
                    r = reps[b]
                    passed = sum(not t["saturated"] for t in r)
                    st[b]["trials"].extend(r)
                    lags = ", ".join(f"{t['lag_p99_ms']:.2f}" for t in r)
                    cpu = statistics.median(t["cpu_us_per_op"] for t in r)
                    print(f"  {b:<4} {cname:<24} {rate:>9,}: {passed}/{len(r)} pass, lag p99 [{lags}] ms, CPU {cpu:.3f} us/op",
                          file=sys.stderr, flush=True)
                    if 2 * passed > len(r):
                        st[b]["max_rate"] = rate
                    st[b]["failed"] = st[b]["failed"] + 1 if passed == 0 else 0
                    if st[b]["failed"] == 2:
                        st[b]["on"] = False
            for b in bins:
                lads[b].append({k: v for k, v in st[b].items() if k not in ("failed", "on")})
        refs = gc.reference(a, tmp / "refclient", port, "1")
    finally:
        server.kill()
        server.wait()
acc = {}
for b in bins:
    print(f"\n===== {b} =====")
    acc[b] = gc.report(lads[b], refs)
print("\nnew / base, CPU per call (median of passing repeats)")
for ln, lb in zip(lads["new"], lads["base"]):
    row = []
    for label, rn, rb in (("10k", 10_000, 10_000), ("100k", 100_000, 100_000), ("max", ln["max_rate"], lb["max_rate"])):
        cn, cb = gc.cpu_at(ln, rn), gc.cpu_at(lb, rb)
        row.append(f"{label}: {gc.fmt(cn, '.3f')} / {gc.fmt(cb, '.3f')} = {gc.fmt(cn / cb if cn and cb else None)}x")
    print(f"  {ln['name']:<24} max {gc.fmt(ln['max_rate'], ',d')} / {gc.fmt(lb['max_rate'], ',d')};  " + ";  ".join(row))
if a.json:
    a.json.write_text(json.dumps({"ladders": lads, "reference": refs, "acceptance": acc}, indent=1))
