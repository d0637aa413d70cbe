"""Why λ* is where it is: the resource that saturates first as the offered load rises to λ*.

The USE method (Gregg: utilization, saturation, errors per resource) over each trial's server
telemetry (measure.telemetry, raw["telemetry"]) and the generator's own figures:

  resource            utilization (per trial, the window's mean)          its limit
  disk read IOPS      disk_read_iops / disk_read_iops_limit                the cgroup's throttle
  disk write IOPS     disk_write_iops / disk_write_iops_limit
  disk read bandwidth, disk write bandwidth   Bps / Bps limit
  server CPU          server_cpu_cores / server_cpu_limit_cores           allowed CPUs or the quota
  network             max(rx, tx) Bps / the link's qdisc rate
  generator           1 when fstress says it saturated by itself (_own_saturation), else its CPU
                      share (generator_cpu_s over the trial's wall time, per allowed CPU)
  disk busy           disk_busy_frac: the busiest device's time with I/O in flight (%util; a loop
                      device serves one request at a time, so near 1 it is saturated without
                      throttle)
  memory              mem_used_bytes / mem_limit_bytes; *pressure* only with reclaim at the limit
                      (mem_failcnt_s > 0) and cache misses (major faults or disk reads)

A resource is saturated in a trial at utilization ≥ SATURATED (0.85). The verdict looks at the
trials up to the first overloaded load above λ* (the bracket's upper end; loads far past λ* load
every resource): the resource saturated at the lowest offered load is the bottleneck (ties: the
higher utilization). Server CPU with no quota, or a busy device doing mostly reads, that saturates
while memory is under pressure is named memory: the CPU goes to reclaim, the device to cache misses.
With no resource saturated, or without telemetry, the verdict is "unknown", with what is missing or
the highest utilization seen — never a guess presented as a finding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SATURATED", "trial_utilization", "busiest", "verdict", "client_side", "change_text"]

SATURATED = 0.85
OWN_LAG_SHARE = 0.25  # send lag / client mean from which a saturated fstress is its own limit
# utilization: (name, numerator series, limit series) over the server telemetry's means
_CAPPED = (
    ("disk read IOPS", "disk_read_iops", "disk_read_iops_limit"),
    ("disk write IOPS", "disk_write_iops", "disk_write_iops_limit"),
    ("disk read bandwidth", "disk_read_Bps", "disk_read_Bps_limit"),
    ("disk write bandwidth", "disk_write_Bps", "disk_write_Bps_limit"),
    ("server CPU", "server_cpu_cores", "server_cpu_limit_cores"),
)


def _num(x: Any) -> float | None:
    return (
        float(x)
        if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
        else None
    )


def _server_utilization(mean: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, used, limit in _CAPPED:
        u, lim = _num(mean.get(used)), _num(mean.get(limit))
        if u is not None and lim:
            out[name] = {"u": u / lim, "used": u, "limit": lim}
    rate = _num(mean.get("net_rate_limit_Bps"))
    flow = max(
        (v for v in (_num(mean.get("net_rx_Bps")), _num(mean.get("net_tx_Bps"))) if v is not None),
        default=None,
    )
    if rate and flow is not None:
        out["network"] = {"u": flow / rate, "used": flow, "limit": rate}
    busy = _num(mean.get("disk_busy_frac"))
    if busy is not None:
        out["disk busy"] = {
            "u": busy,
            "reads": _num(mean.get("disk_read_iops")) or 0.0,
            "writes": _num(mean.get("disk_write_iops")) or 0.0,
        }
    mem, mem_limit = _num(mean.get("mem_used_bytes")), _num(mean.get("mem_limit_bytes"))
    if mem is not None and mem_limit:
        misses = (_num(mean.get("mem_majfault_s")) or 0.0) + (
            _num(mean.get("disk_read_iops")) or 0.0
        )
        out["memory"] = {
            "u": mem / mem_limit,
            "used": mem,
            "limit": mem_limit,
            "pressure": mem / mem_limit >= SATURATED
            and (_num(mean.get("mem_failcnt_s")) or 0) > 0
            and misses > 0,
        }
    return out


def _worst(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """Of two server hosts' figures for one resource, the more utilized."""
    return b if a is None or b["u"] > a["u"] else a


def _own_saturation(raw: Mapping[str, Any], why: str) -> bool:
    """Whether fstress's saturation flag is the generator's own limit. Not after a send error (the
    server reset the connection), nor when the send lag is a small part of the response time: a
    backlogged server holds the calls the generator may have outstanding, so the next sends wait
    (recorded runs: own limit ≥ 0.36 of the mean, a server's backlog ≤ 0.01;
    bench/bottleneck.py)."""
    lag, mean = _num((raw.get("send_lag_ms") or {}).get("mean")), _num(raw.get("mean_ms"))
    own_share = lag / mean if lag is not None and mean else 1.0
    return not why.startswith("send error") and own_share >= OWN_LAG_SHARE


def _generator(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    why = str(raw.get("saturation_reason") or "fstress saturated")
    if raw.get("generator_saturated") and _own_saturation(raw, why):
        return {"u": 1.0, "why": why}
    cpu_s, wall_s = _num(raw.get("generator_cpu_s")), _num(raw.get("duration_s"))
    if cpu_s is None or not wall_s:
        return None
    n_cpu = max(1, len(raw.get("per_host") or []) or 1)
    wall_s += _num(raw.get("warmup_s")) or 0.0
    return {"u": cpu_s / wall_s / n_cpu, "used": cpu_s / wall_s, "limit": float(n_cpu)}


def trial_utilization(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each resource's utilization in one trial ({} for a harness failure or a trial without
    figures)."""
    raw = record.get("raw") or {}
    if record.get("harness_failure") or not raw:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for host_figures in ((raw.get("telemetry") or {}).get("hosts") or {}).values():
        for name, fig in _server_utilization(host_figures.get("mean") or {}).items():
            out[name] = _worst(out.get(name), fig)
    gen = _generator(raw)
    if gen is not None:
        out["generator"] = gen
    return out


def busiest(record: Mapping[str, Any]) -> str | None:
    """The trial's bottleneck candidate for the progress line: its most utilized resource, e.g.
    "disk read IOPS 94 %" (None without figures)."""
    u = trial_utilization(record)
    if not u:
        return None
    name, fig = max(u.items(), key=lambda kv: kv[1]["u"])
    return f"{name} {_pct(fig)}"


def _saturated(name: str, fig: Mapping[str, Any]) -> bool:
    return bool(fig.get("pressure")) if name == "memory" else fig["u"] >= SATURATED


def _pct(fig: Mapping[str, Any]) -> str:
    return f"{100 * fig['u']:.0f} %"


def _figure(name: str, fig: Mapping[str, Any]) -> str:
    """'398/400' for a counted limit, '31 %' otherwise."""
    if name.endswith("IOPS") and "limit" in fig:
        return f"{fig['used']:.0f}/{fig['limit']:.0f}"
    if name == "server CPU" and "limit" in fig:
        return f"{_pct(fig)} of {fig['limit']:g} core{'s' if fig['limit'] != 1 else ''}"
    if name == "disk busy" and "reads" in fig:
        return f"{_pct(fig)} ({fig['reads']:.0f} reads/s, {fig['writes']:.0f} writes/s)"
    if name == "memory" and "limit" in fig:
        return f"{fig['used'] / 2**20:.0f}/{fig['limit'] / 2**20:.0f} MiB"
    if name == "generator" and fig.get("why"):
        return f"saturated ({fig['why']})"
    return _pct(fig)


def _rows(
    result: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
) -> list[tuple[float, dict[str, Any]]]:
    """(offered load, utilization) of the trials the verdict reads: up to the bracket's upper
    end."""
    bracket = result.get("bracket") or [None, None]
    top = _num(bracket[1]) if len(bracket) > 1 else None
    rows = [
        (float(r["load_ops_s"]), u)
        for r in records
        if _num(r.get("load_ops_s")) is not None and (u := trial_utilization(r))
    ]
    near = [(x, u) for x, u in rows if top is None or x <= top * 1.0001]
    return sorted(near or rows, key=lambda p: p[0])


def _from_misses(name: str, fig: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a saturated resource works for a page cache under pressure: CPU without a quota
    (reclaim and misses), or a device without a throttle kept busy mostly by reads (the misses)."""
    if name == "server CPU":
        return not _quota(records)
    return name == "disk busy" and fig.get("reads", 0.0) >= fig.get("writes", 0.0)


def verdict(result: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """result.json's "bottleneck": {resource, line, at_ops_s, utilization (at that load), loads
    (each trial's utilization, for the report's plot)}; resource "unknown" when the evidence is
    thin."""
    rows = _rows(result, records)
    loads = [{"load_ops_s": x, **{k: round(v["u"], 4) for k, v in u.items()}} for x, u in rows]
    first: dict[str, tuple[float, dict[str, Any]]] = {}
    for x, u in rows:
        for name, fig in u.items():
            if _saturated(name, fig) and name not in first:
                first[name] = (x, fig)
    if not first:
        return _unknown(rows, loads, records, result)
    hard = {k: v for k, v in first.items() if k != "memory"} or first
    name = min(hard, key=lambda k: (hard[k][0], -hard[k][1]["u"]))
    at, fig = hard[name]
    util = dict(rows).get(at, {})
    shown, via = {name}, ""
    if "memory" in first and first["memory"][0] <= at and _from_misses(name, fig, records):
        # why that resource saturated
        via = f" under reclaim; its misses keep {name} at {_figure(name, fig)}"
        name, fig = "memory", util.get("memory") or first["memory"][1]
        shown.add(name)
    others = ", ".join(f"{k} {_figure(k, v)}" for k, v in sorted(util.items()) if k not in shown)
    line = f"{name} — {_figure(name, fig)}{via} at {at:g} ops/s" + (f", {others}" if others else "")
    return {
        "resource": name,
        "line": line,
        "at_ops_s": at,
        "utilization": {k: round(v["u"], 4) for k, v in util.items()},
        "loads": loads,
    }


def _quota(records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the server's CPU was capped by a cgroup quota (then its CPU is the limit, not
    reclaim)."""
    for r in records:
        for fig in (((r.get("raw") or {}).get("telemetry") or {}).get("hosts") or {}).values():
            if (fig.get("mean") or {}).get("server_cpu_throttled_frac"):
                return True
    return False


def _idle_rtt_us(raw: Mapping[str, Any]) -> float | None:
    """The server's idle NULL round trip before the trial (fstress's drain probe; its NULL
    stage)."""
    drain = raw.get("drain") or {}
    null = drain if drain.get("probe") == "null" else drain.get("null") or {}
    return _num(null.get("idle_rtt_us"))


def client_side(result: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> str:
    """What a client sees at the highest load read: achieved against offered, the mean response
    time, and the idle NULL round trip (the evidence when the server's own figures are missing)."""
    bracket = result.get("bracket") or [None, None]
    top = _num(bracket[1]) if len(bracket) > 1 else None
    seen = [
        r
        for r in records
        if not r.get("harness_failure")
        and r.get("raw")
        and _num(r.get("load_ops_s"))
        and (top is None or float(r["load_ops_s"]) <= top * 1.0001)
    ]
    if not seen:
        return ""
    r = max(seen, key=lambda t: float(t["load_ops_s"]))
    rtt = _idle_rtt_us(r["raw"])
    return (
        f"client side at {float(r['load_ops_s']):g} ops/s: achieved "
        f"{_num(r.get('achieved_rate')) or 0:.0f}, mean {_num(r.get('mean_ms')) or 0:.3g} ms"
        + (f", idle NULL round trip {rtt:.0f} µs" if rtt else "")
    )


def _unknown(
    rows: list[tuple[float, dict[str, Any]]],
    loads: list[dict[str, Any]],
    records: Sequence[Mapping[str, Any]],
    result: Mapping[str, Any],
) -> dict[str, Any]:
    missing = sorted(
        {
            f"{h}: {why}"
            for r in records
            for h, why in (
                ((r.get("raw") or {}).get("telemetry") or {}).get("missing") or {}
            ).items()
        }
    )
    if rows:
        x, u = rows[-1]
        name, fig = max(u.items(), key=lambda kv: kv[1]["u"])
        seen = (
            f"no resource near its limit; the highest at {x:g} ops/s: {name} {_figure(name, fig)}"
        )
    else:
        seen = "no telemetry in any trial"
    client = client_side(result, records)
    line = (
        f"unknown — {seen}"
        + (f" (missing: {'; '.join(missing[:2])})" if missing else "")
        + (f"; {client}" if client else "")
    )
    return {
        "resource": "unknown",
        "line": line,
        "at_ops_s": rows[-1][0] if rows else None,
        "utilization": {k: round(v["u"], 4) for k, v in (rows[-1][1] if rows else {}).items()},
        "loads": loads,
        **({"missing": missing} if missing else {}),
    }


def _at_common_load(
    now: Mapping[str, Any], before: Mapping[str, Any]
) -> tuple[float, dict, dict] | None:
    """The highest offered load both verdicts read, with each night's utilization there."""
    a = {row["load_ops_s"]: row for row in now.get("loads") or []}
    b = {row["load_ops_s"]: row for row in before.get("loads") or []}
    common = sorted(set(a) & set(b))
    return (common[-1], a[common[-1]], b[common[-1]]) if common else None


def change_text(now: Mapping[str, Any] | None, before: Mapping[str, Any] | None) -> str | None:
    """How tonight's bottleneck verdict differs from the last night's (the nightly verdict's
    "bottleneck"): the resource named, and each resource's utilization at the highest load both read
    where it moved by ≥ 10 points. None when tonight has no verdict."""
    if not now:
        return None
    if not before:
        return f"{now['line']} (no earlier verdict to compare)"
    head = (
        f"{now['resource']}, as the night before"
        if now["resource"] == before.get("resource")
        else f"{now['resource']} (the night before: {before.get('resource')})"
    )
    common = _at_common_load(now, before)
    if common is None:
        return f"{head}; no load read on both nights"
    x, a, b = common
    moved = [
        f"{k} {100 * b[k]:.0f} → {100 * a[k]:.0f} %"
        for k in sorted(set(a) & set(b) - {"load_ops_s"})
        if _num(a[k]) is not None and _num(b[k]) is not None and abs(a[k] - b[k]) >= 0.10
    ]
    return f"{head}; at {x:g} ops/s " + (
        ", ".join(moved) if moved else "no resource moved by 10 points"
    )
