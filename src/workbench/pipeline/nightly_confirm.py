"""The night's verdicts from the change-point detector over each baseline's stored history (issue
31).

    compare (judge: suspects) → needs_rerun (branch) → rerun (the suspects and the canary) → decide

A suspect is a drop to a new level that began within the last NEW_LEVEL_NIGHTS nights (fewer than
MIN_HISTORY nights: today's per-night test's regression). It is re-rated tonight; the canary (config
`canary`: a fixed configuration rated every night) is re-rated with it, again while its sequential
test cannot tell (at most CANARY_RERUNS). Then: not confirmed by the re-run → ok; confirmed and the
canary moved (or the suspect is the canary) → LAB CHANGE; confirmed and the canary held (or there is
none) → REGRESSION; the canary unsteady → NO VERDICT. A regression or lab change names the first
night of the new level and the settings that differ from the last good night (stored params, spec,
sysinfo).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench.controller.result import goal_results
from workbench.findings import changepoints as cpm
from workbench.findings import nightly_changes as nc
from workbench.store.base import Store

VOLATILE = frozenset(
    {
        "rating_id",
        "lease_token",
        "seed_load",
        "seed_source",
        "urls",
        "finished_unix",
        "night",
        "workdir",
        "timestamp",
        "time",
        "date",
        "started",
        "finished",
        "uptime_s",
    }
)


def rerun_key(store: Store, night: str, name: str, k: int = 0) -> str:
    """nightly/<night>/rerun/<name>.<k>.json: tonight's k-th re-rating of a baseline (not a
    night)."""
    return store.nightly_key(night, f"rerun/{name}.{k}.json")


def goal_peak(result: Mapping[str, Any] | None, r_sat_ms: float | None) -> float | None:
    """λ* of a result at one R_sat goal (None: the rating's own)."""
    if not result:
        return None
    if r_sat_ms is None:
        return result.get("peak_rate")
    same = [
        g
        for g in goal_results(result)
        if g.get("r_sat_ms") is not None and float(g["r_sat_ms"]) == r_sat_ms
    ]
    return same[0].get("peak_rate") if same else None


def reported_first_nights(
    store: Store, night: str, label_of: Callable[[Mapping], str], label: str, nights: Sequence[str]
) -> list[str]:
    """First nights of the new levels already reported (regression or lab change) for this baseline
    and goal on the last NEW_LEVEL_NIGHTS nights before `night`: not reported again."""
    out = []
    for n in [x for x in nights if x < night][-cpm.NEW_LEVEL_NIGHTS :]:
        for v in store.get_json(store.verdicts_key(n), None) or []:
            if (
                label_of(v) == label
                and (v.get("regression") or v.get("lab_change"))
                and v.get("change_point")
            ):
                out.append(v["change_point"]["first_night"])
    return out


def judge(
    v: dict[str, Any], points: Sequence[Mapping[str, Any]], reported: Sequence[str]
) -> dict[str, Any]:
    """compare_to_history's verdict `v` of tonight with the detector's fields; its `regression`
    waits for decide (a suspect). points: the history and tonight (date, peak_rate, peak_rate_ci,
        ci_level)."""
    values, se, nights = nc.series(points)
    detector, cp = nc.suspect(values, se, bool(v.get("regression")))
    if cp is not None and any(
        r in nights and abs(nights.index(r) - cp.index) <= 1 for r in reported
    ):
        cp = None  # this new level was reported on an earlier night
    v.update(
        detector=detector,
        per_night_regression=bool(v.get("regression")),
        regression=False,
        suspect=cp is not None,
        change_point=None if cp is None else nc.change_summary(cp, nights),
        confirmed=None,
        rerun=None,
        canary=None,
        lab_change=False,
        changed=[],
    )
    if cp is not None:
        v["reason"] = (
            f"suspected new level from {v['change_point']['first_night']}: λ* {cp.after:.1f} "
            f"against {cp.before:.1f} ops/s ({100 * cp.rel_change:+.1f} %); a confirming re-run "
            "decides"
        )
    return v


def needs_rerun(verdicts: Sequence[Mapping[str, Any]]) -> bool:
    """The branch: re-rate when any baseline is a suspect."""
    return any(v.get("suspect") for v in verdicts)


def canary_series(
    store: Store,
    night: str,
    verdicts: Sequence[Mapping[str, Any]],
    canary: str,
) -> tuple[list[float], list[str]] | None:
    """The canary's λ* per night (its first goal's verdict history, tonight last) followed by
    tonight's stored re-runs of it; None when the canary was not rated tonight."""
    mine = [v for v in verdicts if v.get("name") == canary]
    if not mine:
        return None
    values, _, nights = nc.series(mine[0].get("history") or [])
    k = 0
    while (rec := store.get_json(rerun_key(store, night, canary, k), None)) is not None:
        peak = goal_peak(rec.get("result"), mine[0].get("r_sat_ms"))
        if peak and peak > 0:
            values.append(float(peak))
        k += 1
    return values, nights


def canary_say(
    store: Store,
    night: str,
    v: Mapping[str, Any],
    canary: str | None,
    verdicts: Sequence[Mapping[str, Any]],
) -> str:
    """The canary on the suspect's change point, aligned by date: moved | held | unsteady | none
    configured
    | not rated tonight | too little history (< 2 nights before the new level) | is the canary."""
    if canary is None:
        return "none configured"
    if v.get("name") == canary:
        return "is the canary"
    got = canary_series(store, night, verdicts, canary)
    if got is None:
        return "not rated tonight"
    values, nights = got
    cp = nc.from_summary(v["change_point"])
    # the canary's first night of the level
    index = sum(n < v["change_point"]["first_night"] for n in nights)
    if index < 2:  # nothing to compare with: judged as without a canary
        return "too little history"
    return cpm.canary_verdict(values, dataclasses.replace(cp, index=index, start=0))


def night_settings(store: Store, night: str, name: str) -> dict[str, Any]:
    """What a night's rating of baseline `name` ran with: its params, its stored plan and
    sysinfo."""
    rec = store.get_json(store.baseline_key(night, name), None) or {}
    rid = rec.get("rating_id")
    return {
        "params": rec.get("params"),
        "plan": store.get_json(store.spec_key(rid), None) if rid else None,
        "sysinfo": store.get_json(store.sysinfo_key(rid), None) if rid else None,
    }


def what_changed(store: Store, name: str, change_point: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The settings that differ between the last good night and the first night of the new level."""
    good, first = change_point.get("last_good_night"), change_point["first_night"]
    if good is None:
        return []
    return nc.settings_diff(
        night_settings(store, good, name), night_settings(store, first, name), ignore=VOLATILE
    )


def _rerun_of(store: Store, night: str, v: Mapping[str, Any]) -> dict[str, Any] | None:
    rec = store.get_json(rerun_key(store, night, v["name"]), None)
    return (
        None
        if rec is None
        else {
            "rating_id": rec.get("rating_id"),
            "peak_rate": goal_peak(rec.get("result"), v.get("r_sat_ms")),
        }
    )


def _pct(cp: Mapping[str, Any]) -> str:
    lo, hi = cp.get("rel_ci") or (None, None)
    ci = f" [{100 * lo:+.1f}, {100 * hi:+.1f}] %" if lo is not None and hi is not None else ""
    return f"{100 * cp['rel_change']:+.1f} %{ci}"


def decide_one(
    store: Store,
    night: str,
    v: Mapping[str, Any],
    canary: str | None,
    verdicts: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """A suspect's final verdict after its re-run (module doc); others unchanged."""
    if not v.get("suspect"):
        return dict(v)
    values, se, _ = nc.series(v["history"])
    cp, rerun = nc.from_summary(v["change_point"]), _rerun_of(store, night, v)
    out = {**v, "rerun": rerun}
    ok = nc.confirmed(v["detector"], values, se, (rerun or {}).get("peak_rate"), cp)
    if not ok:
        peak = (rerun or {}).get("peak_rate")
        return {
            **out,
            "confirmed": False,
            "reason": f"a new level from {v['change_point']['first_night']} was "
            f"suspected; the re-run (λ* {peak if peak is None else round(peak, 1)} ops/s) did not "
            "confirm it",
        }
    said = canary_say(store, night, v, canary, verdicts)
    out.update(confirmed=True, canary=said)
    when = (
        f"from {v['change_point']['first_night']} (last good night "
        f"{v['change_point']['last_good_night']})"
    )
    if said == "unsteady":
        return {
            **out,
            "inconclusive": True,
            "reason": f"new level {when} confirmed, but the canary {canary} "
            f"is unsteady: no verdict tonight",
        }
    changed = what_changed(store, v["name"], v["change_point"])
    lab = said in ("moved", "is the canary")
    what = "the canary moved too: the lab changed" if lab else f"canary: {said}"
    return {
        **out,
        "regression": not lab,
        "lab_change": lab,
        "changed": changed,
        "reason": f"λ* {_pct(v['change_point'])} {when}, confirmed by the re-run; {what}; changed: "
        + (
            ", ".join(f"{c['setting']} {c['before']} → {c['after']}" for c in changed)
            or "nothing stored"
        ),
    }


def decide(store: Store, night: str, verdicts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every baseline's final verdict (decide_one); verdicts.json to the store."""
    canary = (store.get_json(store.night_config_key(night)) or {}).get("canary")
    out = [decide_one(store, night, v, canary, verdicts) for v in verdicts]
    store.put_json(store.verdicts_key(night), out)
    return out


def rerun(
    store: Store,
    night: str,
    verdicts: Sequence[Mapping[str, Any]],
    rate: Callable[[Store, str, Mapping[str, Any], str, str], Any],
) -> list[str]:
    """Re-rate each suspect once; then the canary, again while a confirmed suspect's canary verdict
    is "unsteady" (at most CANARY_RERUNS). rate(store, night, baseline, key, rating_id) stores a
    record at key. Returns the keys rated."""
    cfg = store.get_json(store.night_config_key(night)) or {}
    by_name, canary = {b["name"]: b for b in cfg.get("baselines") or []}, cfg.get("canary")
    done = []
    for name in sorted({v["name"] for v in verdicts if v.get("suspect")}):
        done.append(_rate_k(store, night, by_name[name], 0, rate))
    if (
        not isinstance(canary, str)
        or canary not in by_name
        or not any(v.get("suspect") and v["name"] != canary for v in verdicts)
    ):
        return done
    for k in range(cpm.CANARY_RERUNS):
        if k and not any(
            v.get("canary") == "unsteady" for v in decide_and_keep(store, night, verdicts, canary)
        ):
            break
        done.append(_rate_k(store, night, by_name[canary], k, rate))
    return done


def decide_and_keep(store: Store, night: str, verdicts: Sequence[Mapping[str, Any]], canary: str):
    """decide_one for each suspect, nothing stored (rerun's loop)."""
    return [decide_one(store, night, v, canary, verdicts) for v in verdicts if v.get("suspect")]


def _rate_k(store: Store, night: str, baseline: Mapping[str, Any], k: int, rate) -> str:
    key = rerun_key(store, night, baseline["name"], k)
    if not store.exists(key):  # a retried task: already re-rated
        rate(store, night, baseline, key, f"nightly__{night}__{baseline['name']}__rerun{k}")
    return key
