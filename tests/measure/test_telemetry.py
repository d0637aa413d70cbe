"""The server's telemetry: the role's sampler (run for real on this host) and the per-interval rates."""
from __future__ import annotations

import importlib.util
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


def _script():
    spec = importlib.util.spec_from_file_location("wb_telemetry", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_sampler_reads_ganeshas_full_v3_statistics_from_a_dbus_send_reply():
    """A reply of Ganesha 4.3's GetFULLV3Stats as dbus-send printed it (tests/data, captured from a
    real server after a web_server run): each operation's count and mean ms; a disabled reply is none."""
    mod = _script()
    ops = mod.full_stats(mod.dbus_values((REPO / "tests" / "data" / "ganesha_fullv3_reply.txt").read_text()), 7)
    assert ops["GETATTR"] == [660, pytest.approx(0.0155847)] and ops["LOOKUP"] == [171, pytest.approx(0.0411488)]
    assert set(ops) >= {"READ", "ACCESS", "READDIR", "FSSTAT", "CREATE", "WRITE"}
    disabled = 'method return time=1 sender=:1.0\n   boolean false\n   string "v3_full stats disabled"\n'
    assert mod.full_stats(mod.dbus_values(disabled), 7) is None


def test_server_ops_are_the_window_differences_of_ganeshas_counts_and_latency_sums():
    """Hand case: READ 100 calls at 1 ms mean, then 400 at 2 ms mean overall → 300 calls, (800 − 100) ms
    / 300 = 2.333 ms in the window; a sample before the window and a restart do not count."""
    def s(t, n, mean, pid=7):
        return {"t": t, "pid": pid, "nfs_ops": {"v3": {"READ": [n, mean], "GETATTR": [2 * n, 0.01]}}}
    out = telemetry.summary([s(99.0, 50, 1.0), s(100.0, 100, 1.0), s(101.0, 250, 1.6), s(102.0, 400, 2.0),
                             s(103.0, 5, 1.0, pid=8)], 100.0, 102.0)
    assert out["server_ops"]["v3"]["READ"] == {"n": 300, "mean_ms": pytest.approx(700 / 300)}
    assert out["server_ops"]["v3"]["GETATTR"] == {"n": 600, "mean_ms": pytest.approx(0.01)}
    assert out["series"]["server_ops_s"] == pytest.approx([450, 450])
    assert out["series"]["server_mean_ms"][0] == pytest.approx((250 * 1.6 - 100 * 1.0 + 300 * 0.01) / 450)


def test_the_receive_queue_wait_is_littles_law_on_the_window_sums():
    """Hand case: 2000 byte-seconds queued while 400 000 bytes arrived → W = 2000 / 400 000 s = 5 ms;
    the first interval's 300 B mean queue / 100 000 B/s = 3 ms."""
    def s(t, q_bs, rx_b):
        return {"t": t, "pid": 7, "rpcq": {"q_Bs": q_bs, "rx_b": rx_b, "n": 1}}
    out = telemetry.summary([s(100.0, 50.0, 1000), s(101.0, 350.0, 101000), s(102.0, 2050.0, 401000)], 100.0, 102.0)
    assert out["rpc_queue"] == {"wait_ms": pytest.approx(5.0), "mean_bytes": pytest.approx(1000.0),
                                "rx_bytes": pytest.approx(400000.0)}
    assert out["series"]["server_rpc_wait_ms"][0] == pytest.approx(3.0)
    assert out["series"]["server_rpc_queue_bytes"] == pytest.approx([300.0, 1700.0])


def test_the_sampler_reads_the_receive_queue_of_a_real_connection(tmp_path):
    """A real process holding a TCP connection it does not read: the sampler copies its descriptor and
    sees the 1000 bytes queued all along (mean 1000 B) and received once."""
    import socket
    server = subprocess.Popen([sys.executable, "-c", "import socket, sys\ns = socket.create_server(('127.0.0.1', 0))\n"
                               "print(s.getsockname()[1], flush=True)\nc, _ = s.accept()\nprint('ok', flush=True)\n"
                               "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        assert server.stdout.readline().strip() == "ok"
        client.sendall(b"x" * 1000)
        queue = _script().RecvQueue(port)
        deadline = time.monotonic() + 10
        while (first := queue.figures(server.pid)) and first["n"] == 0 and time.monotonic() < deadline:
            queue.__init__(port)          # the bytes may still be on their way to the socket
        assert first.pop("min_rtt_us") > 0 and first == {"q_Bs": 0.0, "rx_b": 1000, "n": 1}, first
        t_first = queue._last[0]
        for _ in range(20):
            queue.poll()
        last = queue.figures(server.pid)
        assert last["rx_b"] == 1000 and last["n"] == 1
        assert last["q_Bs"] / (queue._last[0] - t_first) == pytest.approx(1000)      # queued all along
        client.close()
    finally:
        server.kill()
        server.wait()


def test_the_sampler_finds_a_connection_made_after_its_first_look(tmp_path):
    """Ganesha listens on a dual-stack TCP6 socket and the trial's connections arrive after the
    sampler started: only the namespace's TCP6 counts change, and the sampler must look again."""
    import socket
    server = subprocess.Popen([sys.executable, "-c", "import socket, sys\n"
                               "s = socket.create_server(('::', 0), family=socket.AF_INET6, dualstack_ipv6=True)\n"
                               "print(s.getsockname()[1], flush=True)\nc, _ = s.accept()\nprint('ok', flush=True)\n"
                               "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        queue = _script().RecvQueue(port)
        assert queue.figures(server.pid)["n"] == 0          # listening, nothing connected yet
        client = socket.create_connection(("::1", port), timeout=5)     # a TCP6 socket too
        assert server.stdout.readline().strip() == "ok"
        client.sendall(b"x" * 500)
        deadline = time.monotonic() + 10
        while (seen := queue.figures(server.pid))["rx_b"] < 500 and time.monotonic() < deadline:
            queue.poll()                                     # the bytes may still be on their way
        assert seen["n"] == 1 and seen["rx_b"] == 500, seen
        assert 0 < seen["min_rtt_us"] < 1_000_000, seen          # the handshake gave an RTT sample
        client.close()
    finally:
        server.kill()
        server.wait()
