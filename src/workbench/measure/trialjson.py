"""fstress's merged trial JSON → a `TrialResult`, with the harness's validity rules (see
ansible)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.controller.trial import TrialResult
from workbench.measure.timeseries import SeriesError, compact
from workbench.stats.steady import judge

MIN_ACHIEVED_FRACTION = 0.95  # SPEC SFS: achieved throughput within 5 % of the requested load


def _num(d: Mapping[str, Any], key: str, default: float = 0.0) -> float:
    v = d.get(key, default)
    try:
        v = float(v)
    except (TypeError, ValueError):
        return default
    return v if math.isfinite(v) else default


# fstress's one line when the server did not drain before the trial (its exit 4, package probe)
_NOT_DRAINED = re.compile(r"server not drained after ([0-9.]+) s")


def drain_s(raw: Mapping[str, Any] | None) -> float | None:
    """How long the server took to drain before the trial: the (merged) JSON's drain.drain_s — the
    longest load host's — or None when fstress did not probe."""
    d = (raw or {}).get("drain")
    v = d.get("drain_s") if isinstance(d, Mapping) else None
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 else None


# fstress's saturation causes a full NFSv4.1 session slot table explains (loadgen/README.md
# "Saturation rule" 1 and 3): calls waiting in its backlog for a slot were not sent on time and hold
# call slots
_SLOT_BACKLOG_CAUSES = ("sent ", "outstanding-calls cap")


def slot_backlog(raw: Mapping[str, Any]) -> int:
    """The calls that waited for a free NFSv4.1 session slot when they alone explain fstress's
    saturation verdict — the backlog of a server whose slot table is full (the slots are the
    server's concurrency limit: loadgen/README.md "NFSv4.1"), not a generator that fell behind; else
        0."""
    waits = int(_num(raw.get("nfs4") or {}, "slot_waits"))
    causes = [c.strip() for c in str(raw.get("saturation_reason") or "").split(";") if c.strip()]
    ok = raw.get("nfs_version") == "4.1" and waits > 0 and causes
    return waits if ok and all(c.startswith(_SLOT_BACKLOG_CAUSES) for c in causes) else 0


PER_HOST_FIELDS = (
    "offered_rate",
    "achieved_rate",
    "ops_total",
    "mean_ms",
    "p95_ms",
    "errors",
    "timeouts",
    "generator_saturated",
    "saturation_reason",
    "seed",
    "first_calls",
)


def per_host_figures(parts: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each load host's own figures (its part of the trial, before the merge), by host name."""
    return [
        {
            "host": host,
            **{k: part.get(k) for k in PER_HOST_FIELDS if k in part},
            "send_lag_p99_ms": (part.get("send_lag_ms") or {}).get("p99"),
            "outstanding_at_stop": (part.get("series") or {}).get("outstanding_at_stop"),
            "drain_s": drain_s(part),
        }
        for host, part in sorted(parts.items())
    ]


def with_timeseries(
    raw: Mapping[str, Any], parts: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """raw with fstress's full `series` replaced by its compact form `timeseries`
    (measure.timeseries), small enough to store with every trial; a series that does not merge is
    named in `timeseries_error` (it does not change the trial's validity)."""
    out = dict(raw)
    try:
        ts = compact(out, parts)
    except (SeriesError, KeyError, TypeError, ValueError) as e:
        ts, out["timeseries_error"] = None, f"{type(e).__name__}: {e}"
    out.pop("series", None)
    if ts is not None:
        out["timeseries"] = ts
    return out


BACKGROUND_FIELDS = (
    "offered_rate",
    "achieved_rate",
    "ops_total",
    "mean_ms",
    "p95_ms",
    "p99_ms",
    "errors",
    "timeouts",
    "generator_saturated",
    "saturation_reason",
)


# Tenant B's load must run through this share of A's measured window for the trial to measure A
# beside B; a trial short of it is a harness failure (its two starts missed each other), re-run.
MIN_BESIDE_SHARE = 0.9
# The common start's least margin when two or more generators must meet (tenant B, several load
# hosts): at 0.5 s A's and B's both started late (the hosts' command dispatch and fstress's set-up
# outlast it), up to 0.17 s apart with nothing else running; at 1.5 s both started on time.
SHARED_START_MARGIN_S = 1.5


def beside_share(a: Mapping[str, Any], b: Mapping[str, Any]) -> float | None:
    """The share of A's measured window [s_A, s_A + d_A) during which B's generator was sending:
    B's warm-up and measured window [s_B − w_B, s_B + d_B); None when either lacks its window."""
    s_a, d_a = _num(a, "start_unix_ns") / 1e9, _num(a, "duration_s")
    s_b, d_b, w_b = _num(b, "start_unix_ns") / 1e9, _num(b, "duration_s"), _num(b, "warmup_s")
    if s_a <= 0 or s_b <= 0 or d_a <= 0 or d_b <= 0:
        return None
    overlap = min(s_a + d_a, s_b + d_b) - max(s_a, s_b - max(w_b, 0.0))
    return min(max(overlap / d_a, 0.0), 1.0)


def background_figures(
    background: Mapping[str, Any],
    raw: Mapping[str, Any] | None,
    parts: Mapping[str, Mapping[str, Any]],
    a_raw: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Tenant B's own figures of a trial (config.tenants): its merged result and each of its load
    hosts'; `missing` when B delivered no merged result. With A's merged result `a_raw`: the share
    of A's measured window B ran beside (beside_share) and B's start less A's (`start_offset_s`)."""
    out: dict[str, Any] = {"workload": background.get("workload"), "ops_s": background.get("ops_s")}
    if raw is None:
        return {**out, "missing": True}
    share = beside_share(a_raw, raw) if a_raw is not None else None
    if share is not None and a_raw is not None:
        offset_s = (_num(raw, "start_unix_ns") - _num(a_raw, "start_unix_ns")) / 1e9
        out |= {"beside_share": round(share, 4), "start_offset_s": round(offset_s, 3)}
    return {
        **out,
        **{k: raw.get(k) for k in BACKGROUND_FIELDS if k in raw},
        "drain_s": drain_s(raw),
        "per_host": per_host_figures(parts),
    }


def missed_background(bg: Mapping[str, Any] | None) -> str | None:
    """The harness failure's reason when tenant B ran beside less than MIN_BESIDE_SHARE of A's
    measured window; else None."""
    share = (bg or {}).get("beside_share")
    if share is None or share >= MIN_BESIDE_SHARE:
        return None
    return (
        f"harness: tenant B ran beside {share:.0%} of the measured window, under "
        f"{MIN_BESIDE_SHARE:.0%} (B started {(bg or {}).get('start_offset_s', 0.0):+.2f} s from A)"
    )


def _background_reasons(bg: Mapping[str, Any] | None) -> list[str]:
    """Tenant B did not offer its load (its generator saturated, or no result): the trial did not
    measure A beside B. B's slow answers or errors are the server's, kept in raw["background"]."""
    if not bg:
        return []
    if bg.get("missing"):
        return ["background tenant: no result from its load hosts"]
    if bg.get("generator_saturated"):
        sat = [h["host"] for h in bg.get("per_host") or () if h.get("generator_saturated")]
        return [
            f"background tenant: generator saturated{' on ' + ', '.join(sat) if sat else ''}: "
            f"{bg.get('saturation_reason') or 'no reason given'}"
        ]
    return []


def _host_reasons(hosts: list[Mapping[str, Any]], min_achieved: float) -> list[str]:
    """A load host that saturated or fell behind its share invalidates the trial, named: the
    merge would spread its shortfall over the others."""
    out = []
    for h in hosts:
        offered, achieved = _num(h, "offered_rate"), _num(h, "achieved_rate")
        if h.get("generator_saturated"):
            out.append(
                f"generator saturated on {h['host']}: "
                f"{h.get('saturation_reason') or 'no reason given'}"
            )
        elif achieved < min_achieved * offered:
            out.append(
                f"load host {h['host']} fell behind: achieved {achieved:.1f} of {offered:.1f} ops/s"
            )
    return out


def result_from_json(
    raw: Mapping[str, Any],
    load_ops_s: float,
    runlength_s: float,
    min_achieved: float = MIN_ACHIEVED_FRACTION,
    overload_ms: float | None = None,
) -> TrialResult:
    """Map a (merged) fstress JSON result to a TrialResult and judge its validity.

    overload_ms: RPC timeouts (no NFS errors) in a trial whose mean response time of the answered
    calls is already ≥ overload_ms do not invalidate it: a timed-out call took longer than any
    answered one, so counting it could only raise the mean — the trial is above the peak either
    way (an overloaded server, not a harness fault). The CLI sets it to R_sat·(1 + s), the top of
    the peak-rate region; None (default) = every timeout invalidates, as SPEC SFS does. Likewise
    over NFSv4.1 a saturation verdict that only the server's full session slot table explains
    (slot_backlog: calls queued for a slot, so not sent on time) in such a trial keeps it valid.

    achieved_rate is the server's replies per second: fstress's achieved rate counts a timed-out
    call as finished, so its share of the calls is taken out (an overloaded trial at 12 800 ops/s
    with 93 857 of 128 000 calls timed out answered 3 414/s). Whether the generator kept to its
    schedule is judged on fstress's own figure.
    """
    errors = int(_num(raw, "errors"))
    timeouts = int(_num(raw, "timeouts"))
    above = overload_ms is not None and errors == 0 and _num(raw, "mean_ms") >= overload_ms
    overloaded = above and timeouts > 0
    reasons, backlog = _invalid_reasons(raw, load_ops_s, min_achieved, above, overloaded)
    return TrialResult(
        mean_ms=max(_num(raw, "mean_ms"), 0.0),
        p95_ms=max(_num(raw, "p95_ms"), 0.0),
        p99_ms=max(_num(raw, "p99_ms"), 0.0),
        std_ms=max(_num(raw, "std_ms"), 0.0),
        achieved_rate=_replies_per_s(raw),
        ops_total=int(_num(raw, "ops_total")),
        errors=errors + timeouts,
        valid=not reasons,
        reason="; ".join(reasons)
        if reasons
        else (
            f"overloaded: {timeouts} timeouts, mean {_num(raw, 'mean_ms'):.0f} ms >= "
            f"{overload_ms:g} ms"
            + (f", {backlog} calls waited for a session slot" if backlog else "")
            if overloaded or backlog
            else ""
        ),
        load_ops_s=float(load_ops_s),
        runlength_s=float(runlength_s),
        drain_s=drain_s(raw),
        raw=_judged(with_timeseries(raw), float(load_ops_s)),
    )


def _replies_per_s(raw: Mapping[str, Any]) -> float:
    """The server's replies per second: fstress's achieved rate (calls finished per second,
    answered or timed out) less the timed-out calls' share."""
    sent = max(_num(raw, "achieved_rate"), 0.0)
    timeouts = int(_num(raw, "timeouts"))
    ops = _num(raw, "ops_total")
    return sent * max(0.0, 1.0 - timeouts / ops) if ops > 0 else sent


def _invalid_reasons(
    raw: Mapping[str, Any],
    load_ops_s: float,
    min_achieved: float,
    above: bool,
    overloaded: bool,
) -> tuple[list[str], int]:
    """(why the trial is invalid, calls that waited for a session slot): a load host or the
    generator saturated (not when the slot table alone explains it in a trial above the region),
    tenant B's, errors and timeouts (not in an overloaded trial), the generator behind its
    schedule, nothing measured."""
    offered = _num(raw, "offered_rate", load_ops_s) or float(load_ops_s)
    sent = max(_num(raw, "achieved_rate"), 0.0)
    errors, timeouts = int(_num(raw, "errors")), int(_num(raw, "timeouts"))
    hosts = raw.get("per_host") or []
    reasons = _host_reasons(hosts, min_achieved) if len(hosts) > 1 else []
    backlog = (
        slot_backlog(raw) if above and len(hosts) <= 1 and raw.get("generator_saturated") else 0
    )
    if raw.get("generator_saturated") and not reasons and not backlog:
        reasons.append(f"generator saturated: {raw.get('saturation_reason') or 'no reason given'}")
    reasons += _background_reasons(raw.get("background"))
    if (errors > 0 or timeouts > 0) and not overloaded:
        reasons.append(f"{errors} errors, {timeouts} timeouts")
    if sent < min_achieved * offered and not backlog:  # the generator fell behind its schedule
        reasons.append(f"achieved {sent:.1f} ops/s < {min_achieved:.0%} of offered {offered:.1f}")
    if int(_num(raw, "ops_total")) <= 0 and not reasons:
        reasons.append("no operations measured")
    return reasons, backlog


def _judged(raw: dict[str, Any], load_ops_s: float) -> dict[str, Any]:
    """raw with the steady-state verdict of its series (stats.steady; the controller acts on it,
    controller.steadiness)."""
    raw["steady"] = judge(raw.get("timeseries"), load_ops_s)
    return raw


def invalid_result(
    load_ops_s: float,
    runlength_s: float,
    reason: str,
    raw: Mapping[str, Any] | None = None,
    *,
    harness_failure: bool = False,
    drain: float | None = None,
) -> TrialResult:
    """A trial without measurements: the server's invalid trial, or (harness_failure) a harness
    failure, which the controller ignores and re-runs (TrialResult.harness_failure)."""
    return TrialResult(
        mean_ms=0.0,
        p95_ms=0.0,
        achieved_rate=0.0,
        valid=False,
        reason=reason,
        load_ops_s=float(load_ops_s),
        runlength_s=float(runlength_s),
        raw=dict(raw) if raw else None,
        harness_failure=harness_failure,
        drain_s=drain,
    )


def harness_result(
    load_ops_s: float, runlength_s: float, reason: str, raw: Mapping[str, Any] | None = None
) -> TrialResult:
    """A harness failure: the trial measured nothing of the server (see invalid_result). A server
    that did not drain before the trial is one (no load was sent): its drain time is kept."""
    m = _NOT_DRAINED.search(reason)
    return invalid_result(
        load_ops_s,
        runlength_s,
        reason,
        raw,
        harness_failure=True,
        drain=float(m.group(1)) if m else None,
    )


def host_parts(parts_dir: Path) -> dict[str, dict[str, Any]]:
    """The load hosts' own results of a trial (run_trial.yml fetches <host>.json before merging)."""
    out = {}
    for f in sorted(parts_dir.glob("*.json")):
        part = read_json(f)
        if part is not None:  # else the merge read them all, or the run failed already
            out[f.stem] = part
    return out


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def background_out(out: Path) -> Path:
    """Where run_trial.yml merges tenant B's result of the trial whose result is `out`."""
    return out.with_name(f"{out.stem}.background.json")
