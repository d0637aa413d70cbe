"""Where a call's time goes: the client-observed mean split into server, network and client
    queueing.

Each part is measured on its own, none derived from the others, so their sum checks the client's
figure rather than restating it (issue 50):

  client_ms    fstress's mean response time per operation, from the call's *intended* send time to
               its reply (loadgen/internal/results: latency counts from the schedule, not the send)
  server_ms    Ganesha's own mean per operation over the trial's window (GetFULLV3Stats over the
               server's D-Bus, measure.telemetry "server_ops"): from request start in a worker to
               the reply; weighted by the client's count of each operation
  server_queue_ms  the wait before Ganesha reads a request: its NFS connections' receive queue
               by Little's law, mean queued bytes / bytes received per second (measure.telemetry
               "rpc_queue", sampled every 20 ms by the server's sampler)
  network_ms   the network's own round trip: the TCP minimum round trip of Ganesha's NFS
               connections (tcpi_min_rtt: the kernel's, from ACK timing, read by the server's
               sampler, "rpc_queue" "min_rtt_ms"): wire and both stacks, no RPC layer or work.
               Without it (a result stored before it, an external filer) the median round trip
               of the NULL calls fstress sends beside the trial on a connection of its own
               (raw["null_rtt_ms"]): that one also holds the server's RPC layer waking for a
               call on an idle connection — on the default 82–99 % of it at 100–4000 ops/s,
               measured on the wire by bench/split_floor.py — which the server parts already
               count for the calls
  queueing_ms  the client's own queueing: the mean send lag, actual − intended send time
               (raw["send_lag_ms"])

gap_pct = (server + server queue + network + queueing − client) / client × 100: what the parts leave
out or count twice (a call's size on the wire beyond a NULL's; the NULL's own wake-ups on a
connection idle between its calls). NFSv4.1 is not split: Ganesha counts the operations inside a
compound, not the compound.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["trial_split", "rating_split", "split_line"]


def _num(x: Any) -> float | None:
    return (
        float(x)
        if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
        else None
    )


def _server_means(telemetry: Mapping[str, Any]) -> dict[str, tuple[int, float]]:
    """op (lower case) -> (count, Σ ms) of Ganesha's NFSv3 statistics, summed over the server
    hosts."""
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for fig in (telemetry.get("hosts") or {}).values():
        for op, s in ((fig.get("server_ops") or {}).get("v3") or {}).items():
            out[op.lower()][0] += int(s["n"])
            out[op.lower()][1] += int(s["n"]) * float(s["mean_ms"])
    return {op: (int(n), ms) for op, (n, ms) in out.items() if n > 0}


def _server_queue_ms(telemetry: Mapping[str, Any]) -> float | None:
    """The receive queue's wait over the server hosts, weighted by the bytes each received."""
    qs = [q for fig in (telemetry.get("hosts") or {}).values() if (q := fig.get("rpc_queue"))]
    rx = sum(float(q["rx_bytes"]) for q in qs)
    return sum(float(q["wait_ms"]) * float(q["rx_bytes"]) for q in qs) / rx if rx > 0 else None


def _tcp_rtt_ms(telemetry: Mapping[str, Any]) -> float | None:
    """The least TCP minimum round trip of the server hosts' NFS connections, if read."""
    rtts = [
        float(q["min_rtt_ms"])
        for fig in (telemetry.get("hosts") or {}).values()
        if (q := fig.get("rpc_queue")) and _num(q.get("min_rtt_ms")) is not None
    ]
    return min(rtts) if rtts else None


def _gap_pct(parts: float, client_ms: float) -> float | None:
    return 100.0 * (parts - client_ms) / client_ms if client_ms > 0 else None


def trial_split(raw: Mapping[str, Any]) -> dict[str, Any]:
    """One trial's split: overall and per operation, or {"missing": why} without a part."""
    client_ms = _num(raw.get("mean_ms"))
    network_ms = _tcp_rtt_ms(raw.get("telemetry") or {})
    if network_ms is None:
        null = raw.get("null_rtt_ms") or {}
        network_ms = _num(null.get("p50", null.get("mean"))) if null.get("n") else None
    queueing_ms = _num((raw.get("send_lag_ms") or {}).get("mean"))
    server = _server_means(raw.get("telemetry") or {})
    server_queue_ms = _server_queue_ms(raw.get("telemetry") or {})
    ops = {
        op: o
        for op, o in (raw.get("ops") or {}).items()
        if _num(o.get("mean_ms")) is not None and o.get("count")
    }
    present = (
        ("client mean", client_ms is not None),
        ("send lag", queueing_ms is not None),
        ("network round trip (TCP, or NULL calls beside the trial)", network_ms is not None),
        ("server statistics (Ganesha, NFSv3)", bool(server)),
        ("server receive queue", server_queue_ms is not None),
    )
    missing = [name for name, ok in present if not ok]
    uncovered = sorted(op for op in ops if op not in server)
    if not missing and uncovered:
        missing.append("server statistics of " + ", ".join(uncovered))
    if (
        missing
        or client_ms is None
        or network_ms is None
        or queueing_ms is None
        or server_queue_ms is None
    ):
        return {"missing": "; ".join(missing)}
    weight = sum(int(o["count"]) for o in ops.values())
    server_ms = (
        sum(int(o["count"]) * server[op][1] / server[op][0] for op, o in ops.items()) / weight
    )
    outside = server_queue_ms + network_ms + queueing_ms  # the same for every operation
    parts = server_ms + outside
    return {
        "client_ms": client_ms,
        "server_ms": server_ms,
        "server_queue_ms": server_queue_ms,
        "network_ms": network_ms,
        "queueing_ms": queueing_ms,
        "parts_ms": parts,
        "gap_pct": _gap_pct(parts, client_ms),
        "count": weight,
        "ops": _per_op(ops, server, outside),
    }


def _per_op(
    ops: Mapping[str, Mapping[str, Any]],
    server: Mapping[str, tuple[float, float]],
    outside: float,
) -> dict[str, dict[str, Any]]:
    """Each operation's split: its client mean against its server mean plus the parts outside the
    server (the same for every operation)."""
    return {
        op: {
            "client_ms": float(o["mean_ms"]),
            "server_ms": server[op][1] / server[op][0],
            "count": int(o["count"]),
            "gap_pct": _gap_pct(server[op][1] / server[op][0] + outside, float(o["mean_ms"])),
        }
        for op, o in sorted(ops.items())
    }


def _combine(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Trials at one load as one: each figure weighted by the trial's count of replies."""
    w = sum(r["count"] for r in rows)
    out = {
        k: sum(r[k] * r["count"] for r in rows) / w
        for k in (
            "client_ms",
            "server_ms",
            "server_queue_ms",
            "network_ms",
            "queueing_ms",
            "parts_ms",
        )
    }
    out.update(count=w, trials=len(rows), gap_pct=_gap_pct(out["parts_ms"], out["client_ms"]))
    return out


def rating_split(result: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """result["latency_split"]: per load (valid trials) the split, the largest |gap| below λ*, and
    why trials had none."""
    by_load: dict[float, list[dict[str, Any]]] = defaultdict(list)
    missing: dict[str, int] = defaultdict(int)
    for r in records:
        if not r.get("valid"):
            continue
        s = trial_split(r.get("raw") or {})
        if "missing" in s:
            missing[s["missing"]] += 1
        else:
            by_load[float(r["load_ops_s"])].append(s)
    loads = [{"load_ops_s": load, **_combine(rows)} for load, rows in sorted(by_load.items())]
    peak = _num(result.get("peak_rate"))
    below = [
        row
        for row in loads
        if peak is not None and row["load_ops_s"] < peak and row["gap_pct"] is not None
    ]
    return {
        "loads": loads,
        "max_abs_gap_pct_below_peak": max((abs(r["gap_pct"]) for r in below), default=None),
        "at_peak": below[-1] if below else None,
        **({"missing": {why: n for why, n in sorted(missing.items())}} if missing else {}),
    }


def split_line(split: Mapping[str, Any] | None) -> str | None:
    """One line for the console, the e-mail and the report's headline: the split at the highest
    load below λ*."""
    row = (split or {}).get("at_peak")
    if not row:
        why = "; ".join((split or {}).get("missing") or {}) or "no valid trial below λ*"
        return f"not split ({why})"
    # stored before it
    queue = f" + server queue {row['server_queue_ms']:.3f}" if "server_queue_ms" in row else ""
    return (
        f"{row['client_ms']:.3f} ms at {row['load_ops_s']:g} ops/s = server "
        f"{row['server_ms']:.3f}{queue} + network {row['network_ms']:.3f} + client queueing "
        f"{row['queueing_ms']:.3f} ({row['gap_pct']:+.1f} %)"
    )
