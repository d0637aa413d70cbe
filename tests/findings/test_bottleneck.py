"""The bottleneck verdict: the resource saturated first as the load rises to λ*, or "unknown"."""
from __future__ import annotations

from workbench.findings.bottleneck import change_text, trial_utilization, verdict

MiB = 2 ** 20


def _trial(load, *, reads=None, read_limit=None, cpu=0.2, cpu_limit=1.0, throttled=0.0, mem=None,
           gen_saturated=False, harness=False, telemetry=True, missing=None):
    mean = {"server_cpu_cores": cpu, "server_cpu_limit_cores": cpu_limit, "server_cpu_throttled_frac": throttled}
    if reads is not None:
        mean.update(disk_read_iops=reads, disk_read_iops_limit=read_limit)
    if mem is not None:
        used, limit, failcnt, majfault = mem
        mean.update(mem_used_bytes=used, mem_limit_bytes=limit, mem_failcnt_s=failcnt, mem_majfault_s=majfault)
    tel = {"hosts": {"sut1": {"mean": mean}} if telemetry else {}, **({"missing": missing} if missing else {})}
    raw = {"telemetry": tel, "generator_saturated": gen_saturated,
           "saturation_reason": "send lag p99 9 ms > 2 ms" if gen_saturated else ""}
    return {"load_ops_s": load, "valid": not harness, "harness_failure": harness, "raw": raw}


def test_the_disk_read_throttle_reached_at_lambda_is_named_with_its_figures():
    trials = [_trial(800, reads=80, read_limit=400, cpu=0.06), _trial(3200, reads=320, read_limit=400, cpu=0.25),
              _trial(4000, reads=398, read_limit=400, cpu=0.31), _trial(4400, reads=400, read_limit=400, cpu=0.33),
              # far past λ*: everything is loaded; not read
              _trial(12800, reads=400, read_limit=400, cpu=0.99)]
    v = verdict({"peak_rate": 4039.3, "bracket": [4000, 4400]}, trials)
    assert v["resource"] == "disk read IOPS" and v["at_ops_s"] == 4000
    assert v["line"] == "disk read IOPS — 398/400 at 4000 ops/s, server CPU 31 % of 1 core", v["line"]
    assert [row["load_ops_s"] for row in v["loads"]] == [800, 3200, 4000, 4400]


def test_a_cpu_cap_is_named_even_when_the_disk_fills_later():
    trials = [_trial(1000, reads=50, read_limit=400, cpu=0.2, cpu_limit=0.3, throttled=0.1),
              _trial(2000, reads=100, read_limit=400, cpu=0.29, cpu_limit=0.3, throttled=0.6),
              _trial(2400, reads=380, read_limit=400, cpu=0.3, cpu_limit=0.3, throttled=0.7)]
    v = verdict({"peak_rate": 2100, "bracket": [2000, 2400]}, trials)
    assert v["resource"] == "server CPU" and v["at_ops_s"] == 2000, v
    assert "97 % of 0.3 cores" in v["line"]


def test_memory_pressure_behind_a_saturated_cpu_is_named_memory():
    full = (100 * MiB, 104 * MiB, 50.0, 900.0)
    trials = [_trial(1000, cpu=0.5, mem=(60 * MiB, 104 * MiB, 0.0, 0.0)), _trial(2000, cpu=0.95, mem=full)]
    v = verdict({"peak_rate": 1900, "bracket": [1000, 2000]}, trials)
    assert v["resource"] == "memory" and "100/104 MiB" in v["line"], v
    # the same fill without reclaim at the limit is no pressure: the CPU is the finding
    calm = [_trial(1000, cpu=0.5), _trial(2000, cpu=0.95, mem=(100 * MiB, 104 * MiB, 0.0, 0.0))]
    assert verdict({"bracket": [1000, 2000]}, calm)["resource"] == "server CPU"


def test_the_generator_is_a_resource_too():
    trials = [_trial(1000, cpu=0.1), _trial(2000, cpu=0.2, gen_saturated=True)]
    v = verdict({"bracket": [1000, 2000]}, trials)
    assert v["resource"] == "generator" and "send lag" in v["line"], v


def test_thin_evidence_is_unknown_with_what_is_missing():
    no_metrics = [_trial(1000, telemetry=False, missing={"server": "no telemetry spec (an external server)"})]
    no_metrics[0].update(achieved_rate=998.0, mean_ms=12.5)
    no_metrics[0]["raw"]["drain"] = {"probe": "read", "null": {"probe": "null", "idle_rtt_us": 61.2}}
    v = verdict({"bracket": [1000, 2000]}, no_metrics)
    assert v["resource"] == "unknown" and "an external server" in v["line"], v
    assert v["line"].endswith("client side at 1000 ops/s: achieved 998, mean 12.5 ms, idle NULL round trip 61 µs")
    calm = [_trial(1000, reads=100, read_limit=400, cpu=0.3), _trial(2000, reads=150, read_limit=400, cpu=0.4)]
    v = verdict({"bracket": [1000, 2000]}, calm)
    assert v["resource"] == "unknown" and "server CPU 40 %" in v["line"], v


def test_a_harness_failure_carries_no_utilization():
    assert trial_utilization(_trial(1000, reads=400, read_limit=400, harness=True)) == {}


def test_the_nightly_change_names_the_resource_and_what_moved_at_a_load_both_nights_read():
    disk = [_trial(800, reads=80, read_limit=400, cpu=0.06), _trial(4000, reads=398, read_limit=400, cpu=0.31)]
    tonight = verdict({"bracket": [800, 4000]}, disk)
    cpu = [_trial(800, reads=80, read_limit=400, cpu=0.5), _trial(1600, reads=160, read_limit=400, cpu=0.95)]
    before = verdict({"bracket": [800, 1600]}, cpu)
    assert change_text(tonight, before) == (
        "disk read IOPS (the night before: server CPU); at 800 ops/s server CPU 50 → 6 %")
    assert change_text(tonight, tonight) == (
        "disk read IOPS, as the night before; at 4000 ops/s no resource moved by 10 points")
    assert change_text(None, before) is None and change_text(tonight, None).endswith("(no earlier verdict to compare)")
