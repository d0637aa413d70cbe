"""The server's telemetry: the role's sampler (run for real on this host) and the per-interval rates."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from workbench.config.paths import REPO
from workbench.measure import telemetry

SCRIPT = REPO / "roles" / "nfs_server" / "files" / "wb-telemetry.py"


def _sample(t, cpu_s, reads, busy_ms, rxb, majfault=0, failcnt=0, pid=7):
    return {"t": t, "pid": pid, "cpu": {"cpu_s": cpu_s, "cpus": 1},
            "mem": {"usage": 120 << 20, "limit": 128 << 20, "cache": 90 << 20, "majfault": majfault,
                    "failcnt": failcnt},
            "blk": {"7:0": {"r": reads, "w": 0, "rb": reads * 4096, "wb": 0, "r_iops_limit": 400,
                            "busy_ms": busy_ms, "queue_ms": 2 * busy_ms}},
            "net": {"wb0": {"rxb": rxb, "rxp": 0, "rxdrop": 0, "txb": 2 * rxb, "txp": 0, "txdrop": 0}},
            "qdisc": [{"dev": "wb0", "kind": "tbf", "rate_Bps": 1e6, "delay_s": None, "backlog_b": 10,
                       "drops": 0, "overlimits": 0}]}


def test_rates_are_the_differences_of_the_counters_inside_the_window():
    s = [_sample(99.0, 1.0, 0, 0, 0), _sample(100.0, 1.3, 400, 500, 1000),
         _sample(101.0, 1.6, 790, 1500, 3000), _sample(102.0, 2.2, 1190, 2500, 6000),
         _sample(103.0, 9.0, 9999, 9999, 9999)]           # after the window: left out
    out = telemetry.summary(s, 100.0, 102.0)
    assert out["n_intervals"] == 2 and out["series"]["t_s"] == [1.0, 2.0]
    assert out["series"]["server_cpu_cores"] == pytest.approx([0.3, 0.6])
    assert out["series"]["disk_read_iops"] == pytest.approx([390, 400])
    assert out["mean"]["disk_read_iops"] == pytest.approx(395)
    assert out["mean"]["disk_read_iops_limit"] == 400
    assert out["series"]["disk_busy_frac"] == pytest.approx([1.0, 1.0])
    assert out["series"]["disk_queue"] == pytest.approx([2.0, 2.0])
    assert out["series"]["net_tx_Bps"] == pytest.approx([4000, 6000])
    assert out["mean"]["net_rate_limit_Bps"] == 1e6 and out["mean"]["mem_limit_bytes"] == 128 << 20


def test_a_server_restart_between_two_samples_is_no_interval():
    s = [_sample(100.0, 5.0, 100, 0, 0), _sample(101.0, 0.1, 3, 0, 0, pid=8), _sample(102.0, 0.4, 5, 0, 0, pid=8)]
    out = telemetry.summary(s, 99.5, 102.0)
    assert out["n_intervals"] == 1 and out["series"]["server_cpu_cores"] == pytest.approx([0.3])
    assert telemetry.summary(s[:1], 99.0, 102.0) is None


def test_of_trial_names_what_is_missing():
    sampling = telemetry.Samplers(REPO / "no-such-dir", 10)
    with sampling:
        pass
    out = telemetry.of_trial(sampling, {"start_unix_ns": int(100e9), "duration_s": 2.0}, 2.0)
    assert out["hosts"] == {} and "no telemetry spec" in out["missing"]["server"]


def test_the_roles_sampler_reads_a_real_process_and_stops_when_its_input_ends(tmp_path):
    """wb-telemetry.py on this host against a real process standing in for Ganesha (its pid file):
    CPU time, allowed CPUs and its cgroups' figures; it stops at the end of its stdin, not at --max-s."""
    busy = subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<30: pass"])
    try:
        (tmp_path / "ganesha.pid").write_text(f"{busy.pid}\n")
        specs = tmp_path / "specs"
        specs.mkdir()
        (specs / "sutx.json").write_text(json.dumps({"host": "sutx", "connection": "local", "prefix": [
            sys.executable, str(SCRIPT), "--state", str(tmp_path)]}))
        t0 = time.time()
        with telemetry.Samplers(specs, max_s=600) as sampling:
            assert sampling.running[0].wait_for(3, timeout_s=15)
        assert time.time() - t0 < 20            # stopped by the end of its input, far before --max-s
        samples = sampling.samples["sutx"]
        assert len(samples) >= 3 and all(s["pid"] == busy.pid for s in samples), samples
        out = telemetry.summary(samples, samples[0]["t"], samples[-1]["t"])
        assert out["mean"]["server_cpu_cores"] > 0.3       # a busy loop: most of a core
        assert out["mean"]["server_cpu_limit_cores"] == len(os.sched_getaffinity(busy.pid))
    finally:
        busy.kill()
        busy.wait()
