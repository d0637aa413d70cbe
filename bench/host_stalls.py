#!/usr/bin/env python3
"""How often this host stalls a runnable thread, the noise behind fstress's send-lag bound.

    .venv/bin/python bench/host_stalls.py [--seconds 60] [--period-ms 1] [--fifo 1] [--json F]

A thread sleeps `period` again and again and records how late each wake-up is (actual − asked).
On an idle machine that overshoot is the timer slack plus whatever stopped the thread: other
runnable work (gone under SCHED_FIFO, --fifo N) or the hypervisor descheduling the VM (steal,
read from /proc/stat over the same interval). A late wake-up of X ms is what a stall does to an
fstress send due at that moment: if stalls past the bound cover more than 1 % of a trial, its
send-lag p99 passes the bound and the trial is invalid. Bounded: at most --seconds of wall time.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

THRESHOLDS_MS = (2.0, 5.0, 10.0, 20.0)


def steal_s() -> float:
    """Total steal time of all CPUs (s): /proc/stat's `cpu` line, 8th value, in USER_HZ ticks."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


def measure(seconds: float, period_s: float) -> dict:
    late_ms: list[float] = []
    steal0, end = steal_s(), time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.monotonic()
        time.sleep(period_s)
        late_ms.append((time.monotonic() - t0 - period_s) * 1e3)
    stolen = steal_s() - steal0
    late_ms.sort()
    n = len(late_ms)

    def q(p: float) -> float:          # nearest-rank quantile
        return late_ms[min(n - 1, max(0, int(p * n + 0.5) - 1))]

    return {"seconds": seconds, "period_ms": period_s * 1e3, "wakeups": n,
            "late_ms": {"p50": q(0.50), "p99": q(0.99), "p999": q(0.999), "max": late_ms[-1]},
            "late_over_ms": {f"{t:g}": sum(x > t for x in late_ms) for t in THRESHOLDS_MS},
            # time behind by more than t: the share of a constant-rate schedule sent later than t
            "behind_s_over_ms": {f"{t:g}": sum(x - t for x in late_ms if x > t) / 1e3 for t in THRESHOLDS_MS},
            "steal_s": stolen, "steal_pct_of_one_cpu": 100.0 * stolen / seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--period-ms", type=float, default=1.0)
    ap.add_argument("--fifo", type=int, default=0, help="SCHED_FIFO priority 1-99 (0: the default policy)")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if not 0 < a.seconds <= 3600 or not 0.05 <= a.period_ms <= 1000:
        ap.error("--seconds must be in (0, 3600] and --period-ms in [0.05, 1000]")
    if not 0 <= a.fifo <= 99:
        ap.error("--fifo must be 0-99")
    if a.fifo:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(a.fifo))
        except PermissionError:
            ap.error("--fifo needs root (CAP_SYS_NICE)")
    r = measure(a.seconds, a.period_ms / 1e3)
    r["policy"] = f"SCHED_FIFO {a.fifo}" if a.fifo else "SCHED_OTHER"
    lm = r["late_ms"]
    print(f"{r['policy']}: {r['wakeups']} wake-ups of {a.period_ms:g} ms over {a.seconds:g} s")
    print(f"  late ms   p50 {lm['p50']:.3f}  p99 {lm['p99']:.3f}  p99.9 {lm['p999']:.3f}  max {lm['max']:.3f}")
    print("  late >    " + "  ".join(f"{t} ms: {c}" for t, c in r["late_over_ms"].items()))
    print("  behind >  " + "  ".join(f"{t} ms: {s * 1e3:.1f} ms" for t, s in r["behind_s_over_ms"].items()))
    print(f"  steal     {r['steal_s']:.2f} s ({r['steal_pct_of_one_cpu']:.2f} % of one CPU)")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(r, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
