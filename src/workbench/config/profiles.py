"""Profiles: the spec fields, harness settings and default factors a rating starts from (quick,
smoke, standard), and the simulated family of each canned workload."""
from __future__ import annotations

from typing import Any


# The fit's per-look error, as a share of 1 − c. The former 0.5 cost up to 15 % more; 1.0 fell
# below 90 % in region on the knee and cold families (docs/performance.md, issue 16 fifth stage).
FIT_STOP_ERROR_SHARE = 0.8


def local_policy(confidence: float, runlength_s: float | None = None) -> dict[str, Any]:
    """The default policy since issue 16 (docs/controller.md "The local policy"): policy "local"
    with stop rule "fit". Its fit stops at confidence 1 − FIT_STOP_ERROR_SHARE·(1 − c) (the stop is
    tested after every trial: a stricter per-look level keeps the sequential error near 1 − c) and
    reports the λ* CI at 1 − (1 − c)/5; one trial above 4·R_sat saturates a load; a load that completes
    significantly fewer operations than offered is saturated; trials away from R_sat run
    runlength_s/2 (`probe_runlength_s`; None: no probes). Chosen by bench/validity.py
    (docs/performance.md "Issue 16")."""
    fields: dict[str, Any] = dict(
        policy="local", stop_rule="fit", far_factor=4.0, throughput_rule=True,
        fit_confidence=round(1.0 - FIT_STOP_ERROR_SHARE * (1.0 - confidence), 6),
        fit_ci_confidence=round(1.0 - (1.0 - confidence) / 5.0, 6))
    if runlength_s is not None:
        fields["probe_runlength_s"] = runlength_s / 2.0
    return fields


LOCAL_FIELDS = ("far_factor", "throughput_rule", "probe_runlength_s", "fit_confidence", "fit_ci_confidence")


def resolve_policy(fields: dict[str, Any]) -> dict[str, Any]:
    """A profile's spec fields after the caller's overrides (policy, confidence): another policy than
    "local" rates as it did before issue 16 (the inside rule, none of the local policy's fields); the
    local policy's fit confidences follow the final c."""
    out = dict(fields)
    if out.get("policy") != "local":
        if out.get("stop_rule") == "fit":
            out["stop_rule"] = "inside"
        for k in LOCAL_FIELDS:
            out.pop(k, None)
    else:
        c = float(out.get("confidence", 0.95))
        local = local_policy(c)
        out.update(fit_confidence=local["fit_confidence"], fit_ci_confidence=local["fit_ci_confidence"])
    return out


# Profiles: spec fields + harness settings + default factors.
# quick: a real rating in a few minutes on a 2-core box. Ganesha is pinned to core 0 and fstress to
# core 1; the server gets a throttled disk and a memory limit below the file set, so λ* is
# I/O-bound well below CPU saturation (past it fstress flags itself generator-saturated).
QUICK_FACTORS = dict(fs="ext4", disks=1, memory_mb=128, read_iops=400)
SMOKE_FACTORS = {**QUICK_FACTORS, "read_iops": 100}     # λ* ≈ 950 ops/s: fewer calls per test trial
PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        # the local policy without probes (5 s trials are short already) and without the
        # throughput rule (the shared box's generator may lag; the harness already flags < 90 %)
        "spec": dict(r_sat_ms=40.0, width=0.25, confidence=0.90, accuracy=0.80,
                     **{**local_policy(0.90), "throughput_rule": False},
                     first_load=200.0, runlength_s=10.0, runlength_policy="fixed", max_trials=40,
                     budget_s=450.0, trial_overhead_s=5.0, resolution=0.05, max_loads=20,
                     max_trials_per_load=4),
        "warmup_s": 2.0,
        "warmup_trial_s": 10.0,          # one discarded trial after deploy, at the first load
        "fileset_rate": 8000.0,
        # this box is shared (2 cores; Ansible itself runs beside fstress): tolerate wake-up jitter
        "extravars": {"fstress_lag_bound": "10ms"},
        # 400 read IOPS, 10 s trials: λ* ≈ 4100 ops/s, repeatable within ±5 % (README "Why this
        # default"; docs/performance.md "Repeatability"); at 100 IOPS and 5 s it was not (−9 %…+4 %)
        "factors": QUICK_FACTORS,
    },
    "standard": {
        "spec": dict(r_sat_ms=40.0, width=0.10, confidence=0.95, accuracy=0.90, **local_policy(0.95, 60.0),
                     first_load=100.0, runlength_s=60.0, runlength_policy="adaptive",
                     runlength_min_s=30.0, runlength_max_s=300.0, trial_overhead_s=10.0),
        "warmup_s": 10.0,
        "warmup_trial_s": 60.0,
        "fileset_rate": 4000.0,
        "factors": {},
    },
}


# smoke: a real but short rating (≈ 1½ min) for the pipeline tests: quick's server at 100 read
# IOPS and quick's file set (λ* I/O-bound near 950 ops/s; a file set that fits the 128 MiB cache
# makes the box CPU-bound past 30k ops/s instead), 2 s trials, at most 2 per load (then classified by their median), a
# wide region (s = 0.5) and a coarse bracket (15 %). λ* is coarse; the mechanics are the same.
PROFILES["smoke"] = {
    **PROFILES["quick"], "warmup_s": 1.0, "warmup_trial_s": 6.0, "factors": SMOKE_FACTORS,
    "spec": {**PROFILES["quick"]["spec"], **local_policy(0.80), "throughput_rule": False, **dict(
        width=0.5, confidence=0.80, accuracy=0.60, first_load=400.0, runlength_s=2.0, max_trials=20,
        budget_s=120.0, trial_overhead_s=4.0, resolution=0.15, max_loads=10, max_trials_per_load=2)},
}


# genomics: large sequential reads and writes, disk-bound like db
FAMILY_OF_WORKLOAD = {"web_server": "web", "web_proxy": "web", "db_tp": "db", "mail": "mail",
                      "news": "mail", "specsfs97": "mail", "p2p": "db", "genomics": "db"}
