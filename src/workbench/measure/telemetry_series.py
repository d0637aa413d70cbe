"""The figures of the server's telemetry samples (measure.telemetry): per-interval series on the
trial's own time base (seconds since its measured window's start), their means over the window,
Ganesha's operations and its receive queue over the window, and telemetry.parquet's rows.

Series (one value per interval between two samples, named with their units):
  server_cpu_cores        Ganesha's CPU time per second of wall time
  server_cpu_limit_cores  the CPUs it may use: min(allowed CPUs, the cgroup's quota)
  server_cpu_throttled_frac  time its cpu cgroup was throttled, per second
  disk_read_iops / disk_write_iops, disk_read_Bps / disk_write_Bps   dispatched by its blkio cgroup
  disk_read_iops_limit ...    the cgroup's throttles, summed over the throttled devices
  disk_busy_frac, disk_queue  the busiest device's io_ticks and time_in_queue per second
  mem_used_bytes, mem_limit_bytes, mem_cache_bytes, mem_majfault_s, mem_failcnt_s
  net_rx_Bps / net_tx_Bps, net_drops_s, net_backlog_bytes, net_overlimits_s,
  net_rate_limit_Bps, net_delay_ms   its network namespace's links and their qdiscs
  server_ops_s, server_mean_ms   NFS operations Ganesha finished per second and their mean latency
                          (its own statistics, from request start in a worker to the reply)
  server_rpc_queue_bytes, server_rpc_wait_ms   the bytes its NFS connections held unread (time mean)
                          and the wait before it read them: queue / bytes received per second
and, over the whole window, `server_ops`: per NFS version and operation Ganesha's count and mean ms,
and `rpc_queue`: the receive queue's wait over the window {"wait_ms", "mean_bytes", "rx_bytes"}
and the network's own round trip "min_rtt_ms" (the connections' TCP minimum round trip) when the
sampler read it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

INTERVAL_S = 1.0  # the sampler's interval (wb-telemetry.py --interval-s)


def _sum(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(sum(vals)) if vals else None


def _limit_sum(devs: Mapping[str, Mapping[str, Any]], key: str) -> float | None:
    """The devices' limit `key` summed, when every device the server used has one (else
    unlimited)."""
    used = [d for d in devs.values() if d.get("r") or d.get("w")] or list(devs.values())
    vals = [d.get(key) for d in used]
    limits = [v for v in vals if isinstance(v, (int, float)) and v > 0]
    return float(sum(limits)) if vals and len(limits) == len(vals) else None


def _rate(a: Mapping[str, Any], b: Mapping[str, Any], key: str, dt: float) -> float | None:
    if isinstance(a.get(key), (int, float)) and isinstance(b.get(key), (int, float)):
        return max(0.0, (b[key] - a[key]) / dt)
    return None


def _cpu(a: Mapping[str, Any], b: Mapping[str, Any], dt: float) -> dict[str, float | None]:
    ca, cb = a.get("cpu") or {}, b.get("cpu") or {}
    caps = [
        v for v in (cb.get("cpus"), cb.get("quota_cores")) if isinstance(v, (int, float)) and v > 0
    ]
    return {
        "server_cpu_cores": _rate(ca, cb, "cpu_s", dt),
        "server_cpu_limit_cores": min(caps) if caps else None,
        "server_cpu_throttled_frac": _rate(ca, cb, "throttled_s", dt),
    }


def _disk(a: Mapping[str, Any], b: Mapping[str, Any], dt: float) -> dict[str, float | None]:
    da, db = a.get("blk") or {}, b.get("blk") or {}
    pairs = [(da[mm], db[mm]) for mm in db if mm in da]
    out: dict[str, float | None] = {
        f"disk_{name}": _sum(_rate(x, y, key, dt) for x, y in pairs)
        for name, key in (
            ("read_iops", "r"),
            ("write_iops", "w"),
            ("read_Bps", "rb"),
            ("write_Bps", "wb"),
        )
    }
    for name, key in (
        ("read_iops", "r_iops_limit"),
        ("write_iops", "w_iops_limit"),
        ("read_Bps", "r_bps_limit"),
        ("write_Bps", "w_bps_limit"),
    ):
        out[f"disk_{name}_limit"] = _limit_sum(db, key)
    busy = [v for x, y in pairs if (v := _rate(x, y, "busy_ms", dt)) is not None]
    queue = [v for x, y in pairs if (v := _rate(x, y, "queue_ms", dt)) is not None]
    out["disk_busy_frac"] = max(busy) / 1000.0 if busy else None
    out["disk_queue"] = max(queue) / 1000.0 if queue else None
    return out


def _mem(a: Mapping[str, Any], b: Mapping[str, Any], dt: float) -> dict[str, float | None]:
    ma, mb = a.get("mem") or {}, b.get("mem") or {}
    return {
        "mem_used_bytes": mb.get("usage"),
        "mem_limit_bytes": mb.get("limit"),
        "mem_cache_bytes": mb.get("cache"),
        "mem_majfault_s": _rate(ma, mb, "majfault", dt),
        "mem_failcnt_s": _rate(ma, mb, "failcnt", dt),
    }


def _net(a: Mapping[str, Any], b: Mapping[str, Any], dt: float) -> dict[str, float | None]:
    na, nb = a.get("net") or {}, b.get("net") or {}
    pairs = [(na[i], nb[i]) for i in nb if i in na]
    qa = {(q.get("dev"), q.get("kind")): q for q in a.get("qdisc") or []}
    qpairs = [
        (qa[k], q) for q in b.get("qdisc") or [] if (k := (q.get("dev"), q.get("kind"))) in qa
    ]
    rates = [
        q["rate_Bps"] for q in b.get("qdisc") or [] if isinstance(q.get("rate_Bps"), (int, float))
    ]
    delays = [
        q["delay_s"] for q in b.get("qdisc") or [] if isinstance(q.get("delay_s"), (int, float))
    ]
    drops = [_rate(x, y, k, dt) for x, y in pairs for k in ("rxdrop", "txdrop")]
    drops += [_rate(x, y, "drops", dt) for x, y in qpairs]
    return {
        "net_rx_Bps": _sum(_rate(x, y, "rxb", dt) for x, y in pairs),
        "net_tx_Bps": _sum(_rate(x, y, "txb", dt) for x, y in pairs),
        "net_drops_s": _sum(drops),
        "net_backlog_bytes": _sum(q.get("backlog_b") for q in b.get("qdisc") or [])
        if b.get("qdisc")
        else None,
        "net_overlimits_s": _sum(_rate(x, y, "overlimits", dt) for x, y in qpairs),
        "net_rate_limit_Bps": float(min(rates)) if rates else None,
        "net_delay_ms": 1000.0 * max(delays) if delays else None,
    }


def _op_sums(sample: Mapping[str, Any]) -> dict[tuple[str, str], tuple[int, float]]:
    """(version, op) -> (count, Σ latency ms) of a sample's Ganesha statistics (count × mean)."""
    out = {}
    for version, ops in (sample.get("nfs_ops") or {}).items():
        for op, (count, mean_ms) in (ops or {}).items():
            out[(version, op)] = (int(count), float(count) * float(mean_ms))
    return out


def _op_deltas(
    a: Mapping[str, Any], b: Mapping[str, Any]
) -> dict[tuple[str, str], tuple[int, float]]:
    """(version, op) -> (calls finished, their Σ latency ms) between two samples of one server."""
    sa, sb = _op_sums(a), _op_sums(b)
    return {
        k: (n - sa.get(k, (0, 0.0))[0], ms - sa.get(k, (0, 0.0))[1])
        for k, (n, ms) in sb.items()
        if n > sa.get(k, (0, 0.0))[0]
    }


def _ops(a: Mapping[str, Any], b: Mapping[str, Any], dt: float) -> dict[str, float | None]:
    if not b.get("nfs_ops") or not a.get("nfs_ops"):
        return {"server_ops_s": None, "server_mean_ms": None}
    d = _op_deltas(a, b).values()
    n, ms = sum(x for x, _ in d), sum(y for _, y in d)
    return {"server_ops_s": n / dt, "server_mean_ms": ms / n if n else None}


def _queue(a: Mapping[str, Any], b: Mapping[str, Any], dt: float) -> dict[str, float | None]:
    """The receive queue's time mean and its wait by Little's law, W = L / λ (Little 1961), in
    bytes: L the queued bytes' time mean, λ the bytes received per second."""
    qa, qb = a.get("rpcq") or {}, b.get("rpcq") or {}
    queued, rx = _rate(qa, qb, "q_Bs", dt), _rate(qa, qb, "rx_b", dt)
    return {
        "server_rpc_queue_bytes": queued,
        "server_rpc_wait_ms": 1000.0 * queued / rx if queued is not None and rx else None,
    }


def _pairs(
    samples: Sequence[Mapping[str, Any]], t0: float, t1: float
) -> Iterable[tuple[Any, Any, float]]:
    """Consecutive samples (a, b, seconds between) of one server run whose interval ends inside
    [t0, t1] (wall seconds; half an interval of slack at the end)."""
    for a, b in zip(samples, samples[1:]):
        dt = float(b["t"]) - float(a["t"])
        if dt > 0 and t0 < float(b["t"]) <= t1 + 0.5 * INTERVAL_S and a.get("pid") == b.get("pid"):
            yield a, b, dt


def intervals(samples: Sequence[Mapping[str, Any]], t0: float, t1: float) -> list[dict[str, Any]]:
    """One row per interval between consecutive samples that ends inside [t0, t1] (wall seconds):
    "t_s" its end since t0, then every series of the module docstring."""
    return [
        {"t_s": round(float(b["t"]) - t0, 3), **interval_row(a, b, dt)}
        for a, b, dt in _pairs(samples, t0, t1)
    ]


def interval_row(a: Mapping[str, Any], b: Mapping[str, Any], dt: float) -> dict[str, float | None]:
    """Every series of the module docstring over the interval between samples a and b."""
    return {
        **_cpu(a, b, dt),
        **_disk(a, b, dt),
        **_mem(a, b, dt),
        **_net(a, b, dt),
        **_ops(a, b, dt),
        **_queue(a, b, dt),
    }


def server_ops(
    samples: Sequence[Mapping[str, Any]], t0: float, t1: float
) -> dict[str, dict[str, Any]]:
    """{version: {op: {"n", "mean_ms"}}}: what Ganesha's own statistics saw over the window."""
    total: dict[tuple[str, str], list[float]] = {}
    for a, b, _ in _pairs(samples, t0, t1):
        for k, (n, ms) in _op_deltas(a, b).items():
            acc = total.setdefault(k, [0, 0.0])
            acc[0] += n
            acc[1] += ms
    out: dict[str, dict[str, Any]] = {}
    for (version, op), (count, ms_sum) in sorted(total.items()):
        out.setdefault(version, {})[op] = {"n": int(count), "mean_ms": ms_sum / count}
    return out


def rpc_queue(
    samples: Sequence[Mapping[str, Any]], t0: float, t1: float
) -> dict[str, float] | None:
    """The receive queue over the window: Little's law on the window's sums (as `_queue`); and
    "min_rtt_ms", the median over the window's samples of the connections' least TCP minimum round
    trip (the network's own, when the sampler read one)."""
    q_bs = rx_b = span_s = 0.0
    rtts_us = []
    for a, b, dt in _pairs(samples, t0, t1):
        qa, qb = a.get("rpcq") or {}, b.get("rpcq") or {}
        if isinstance(qb.get("min_rtt_us"), (int, float)):
            rtts_us.append(float(qb["min_rtt_us"]))
        if all(isinstance(x.get(k), (int, float)) for x in (qa, qb) for k in ("q_Bs", "rx_b")):
            q_bs, rx_b, span_s = (
                q_bs + qb["q_Bs"] - qa["q_Bs"],
                rx_b + qb["rx_b"] - qa["rx_b"],
                span_s + dt,
            )
    if rx_b <= 0:
        return None
    out = {"wait_ms": 1000.0 * q_bs / rx_b, "mean_bytes": q_bs / span_s, "rx_bytes": rx_b}
    if rtts_us:
        out["min_rtt_ms"] = statistics.median(rtts_us) / 1000.0
    return out


def summary(samples: Sequence[Mapping[str, Any]], t0: float, t1: float) -> dict[str, Any] | None:
    """The window's intervals as series (name → list) and their means; None without an interval."""
    rows = intervals(samples, t0, t1)
    if not rows:
        return None
    names = [k for k in rows[0] if k != "t_s"]
    series = {k: [r.get(k) for r in rows] for k in ["t_s", *names]}
    mean = {}
    for k in names:
        vals = [v for v in series[k] if isinstance(v, (int, float))]
        mean[k] = sum(vals) / len(vals) if vals else None
    ops, queue = server_ops(samples, t0, t1), rpc_queue(samples, t0, t1)
    return {
        "interval_s": INTERVAL_S,
        "n_intervals": len(rows),
        "series": series,
        "mean": mean,
        **({"server_ops": ops} if ops else {}),
        **({"rpc_queue": queue} if queue else {}),
    }


def table_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """telemetry.parquet's rows: one per trial, server host and interval (n, host, load_ops_s, t_s
    and every series), on the trial's time base, beside the trial table."""
    rows = []
    for r in records:
        hosts = ((r.get("raw") or {}).get("telemetry") or {}).get("hosts") or {}
        for host, fig in sorted(hosts.items()):
            series = fig.get("series") or {}
            for i in range(len(series.get("t_s") or [])):
                rows.append(
                    {
                        "n": r.get("n"),
                        "host": host,
                        "load_ops_s": r.get("load_ops_s"),
                        **{k: v[i] for k, v in series.items()},
                    }
                )
    return rows
