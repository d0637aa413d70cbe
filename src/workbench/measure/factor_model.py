"""The factor model of the simulated server families (db: disk-bound, web: memory/cache-bound,
mail: metadata/sync-write mix): a family's capacity, service and base time at a setting of the
server factors (threads, disks, memory_mb, fs), in kind like seed 000 Fig. 2
(SimulatedServer.for_factors), and the factor grid of the surface tests."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

# the factors a setting leaves out (800 MB as seed 000 §6)
DEFAULT_FACTORS: dict[str, Any] = {
    "threads": 8,
    "disks": 1,
    "memory_mb": 800,
    "fs": "ext4",
}


FAMILIES: dict[str, dict[str, Any]] = {
    # disk_ms: per-miss disk service; iops: per-spindle random IOPS; ws_mb: working set; hit_max:
    # best cache hit ratio; cpu_ops: CPU/cache-hit throughput; contention: threads at which lock
    # contention halves throughput; fs: categorical multipliers on capacity (and 1/x on service
    # time).
    "db": dict(
        disk_ms=4.0,
        iops=400.0,
        ws_mb=8192.0,
        hit_max=0.5,
        cpu_ops=10000.0,
        cpu_ms=0.2,
        base_ms=1.0,
        contention=400.0,
        fs={"ext4": 1.0, "xfs": 1.12, "btrfs": 0.8},
    ),
    "web": dict(
        disk_ms=4.0,
        iops=300.0,
        ws_mb=400.0,
        hit_max=0.97,
        cpu_ops=12000.0,
        cpu_ms=0.1,
        base_ms=1.0,
        contention=150.0,
        fs={"ext4": 1.0, "xfs": 1.0, "btrfs": 0.93},
    ),
    "mail": dict(
        disk_ms=6.0,
        iops=300.0,
        ws_mb=2048.0,
        hit_max=0.7,
        cpu_ops=6000.0,
        cpu_ms=0.3,
        base_ms=1.5,
        contention=250.0,
        fs={"ext4": 1.0, "xfs": 0.88, "btrfs": 0.7},
    ),
}


def _smooth_min(a: float, b: float, k: float = 3.0) -> float:
    # (a^-k + b^-k)^(-1/k): a soft minimum of two bottleneck throughputs
    return (a**-k + b**-k) ** (-1.0 / k)


def family_capacity(family: str, factors: Mapping[str, Any]) -> tuple[float, float, float]:
    """(capacity_ops_s, service_ms, base_ms) of a family at a factor setting.

    miss  = 1 - hit_max * (1 - exp(-memory_mb / ws_mb))  # cache miss ratio
    S     = miss * disk_ms + (1 - miss) * cpu_ms         # mean per-op service (ms)
    disk  = disks * iops / miss                          # ops/s the spindles sustain
    cpu   = cpu_ops                                      # ops/s of cache hits / CPU
    thr   = threads * 1000 / S                           # Little: each nfsd holds one op
    cap   = softmin(thr, 1 / (miss/disk' + (1-miss)/cpu)) * fs / (1 + threads / contention)
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {sorted(FAMILIES)}, got {family!r}")
    p = FAMILIES[family]
    f = {**DEFAULT_FACTORS, **dict(factors)}
    unknown = set(f) - set(DEFAULT_FACTORS)
    if unknown:
        raise ValueError(f"unknown factors {sorted(unknown)}; known: {sorted(DEFAULT_FACTORS)}")
    threads, disks, mem = float(f["threads"]), float(f["disks"]), float(f["memory_mb"])
    if threads < 1 or disks < 1 or mem <= 0:
        raise ValueError("threads >= 1, disks >= 1 and memory_mb > 0 required")
    fs = f["fs"]
    if fs not in p["fs"]:
        raise ValueError(f"fs must be one of {sorted(p['fs'])} for family {family!r}, got {fs!r}")
    mult = p["fs"][fs]
    miss = 1.0 - p["hit_max"] * (1.0 - math.exp(-mem / p["ws_mb"]))
    service = miss * p["disk_ms"] + (1.0 - miss) * p["cpu_ms"]
    disk_ops = disks * p["iops"]
    # time per op on the bottleneck mix: miss fraction on disks, all ops on CPU (harmonic
    # combination)
    resource = 1.0 / (miss / disk_ops + 1.0 / p["cpu_ops"])
    thread_lim = threads * 1000.0 / service
    cap = _smooth_min(thread_lim, resource) * mult / (1.0 + threads / p["contention"])
    return cap, service / mult, p["base_ms"]


def surface_grid(
    disks: Iterable[int] = (1, 2, 3, 4),
    threads: Iterable[int] = (1, 2, 4, 8, 16, 32, 64, 100),
    **fixed: Any,
) -> list[dict[str, Any]]:
    """The seed-000 §6 32-sample surface: disks {1..4} x nfsds {1,2,4,...,100} (other factors
    fixed)."""
    return [{"disks": d, "threads": t, **fixed} for d in disks for t in threads]
