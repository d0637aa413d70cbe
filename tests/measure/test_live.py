"""The live view (measure/live.py): the exporter fed by the real telemetry reader (a stand-in sampler
process printing two samples), its HTTP endpoint, a taken port, the rules, the generated Prometheus
configs checked by Debian's promtool, and a real Prometheus scraping the exporter and evaluating a
recording rule; the fstress agents' endpoints (`fstress agent --metrics-addr`, bin/fstress against its
null server): scraped during and after a trial, by a real Prometheus too, and an fstress too old for
the flag started without it (every wait bounded; Prometheus is polled, never slept on)."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from workbench.config.paths import REPO
from workbench.measure import agent as agents
from workbench.measure import live, live_agents, live_config, telemetry

MONITORING = REPO / "monitoring" / "prometheus"
FSTRESS = REPO / "bin" / "fstress"
FAKE_AGENT = Path(__file__).resolve().parent / "fake_agent.py"
PROMETHEUS, PROMTOOL = shutil.which("prometheus"), shutil.which("promtool")


@pytest.fixture
def prometheus_installed() -> None:
    assert PROMETHEUS and PROMTOOL, "Debian's prometheus is not installed: make test (or make celery) installs it"


def _sample(t, cpu_s, reads, rxb, ops):
    return {"t": t, "pid": 7, "cpu": {"cpu_s": cpu_s, "cpus": 2, "quota_cores": 0.5},
            "mem": {"usage": 96 << 20, "limit": 128 << 20},
            "blk": {"7:0": {"r": reads, "w": 0, "rb": reads * 4096, "wb": 0, "r_iops_limit": 400}},
            "net": {"wb0": {"rxb": rxb, "txb": rxb // 2}},
            "qdisc": [{"dev": "wb0", "kind": "tbf", "rate_Bps": 1e6, "delay_s": 0.002, "backlog_b": 0}],
            "nfs_ops": {"v3": {"READ": [ops, 2.0]}}}


# 0.3 s of CPU, 200 reads, 500 kB received and 1000 READs at 2 ms in 1 s; limits 0.5 cores, 400 IOPS, 1 MB/s
PAIR = [_sample(100.0, 1.0, 100, 0, 1000), _sample(101.0, 1.3, 300, 500_000, 2000)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stand_in_sampler(tmp_path: Path, host: str = "sut9") -> Path:
    """A spec dir whose sampler prints PAIR, then waits for the end of its input as wb-telemetry.py does."""
    specs = tmp_path / "specs"
    specs.mkdir()
    code = "import sys\n" + "".join(f"print({json.dumps(json.dumps(s))})\n" for s in PAIR) + \
        "sys.stdout.flush()\nsys.stdin.read()\n"
    (specs / f"{host}.json").write_text(json.dumps({"host": host, "connection": "local",
                                                    "prefix": [sys.executable, "-c", code]}))
    return specs


@pytest.fixture
def endpoints(monkeypatch):
    """Slot ports from a free one (WB_METRICS_PORT_BASE), every endpoint closed afterwards."""
    monkeypatch.delenv(live.OFF_ENV, raising=False)
    monkeypatch.delenv(live.ADDR_ENV, raising=False)
    live.stop_endpoints()
    yield monkeypatch
    live.stop_endpoints()


def _base_for(monkeypatch, slot_number: int) -> int:
    """Set the port base so that slot `slot_number` gets a free port; that port."""
    port = _free_port()
    monkeypatch.setenv(live.PORT_ENV, str(port - slot_number))
    return port


@contextlib.contextmanager
def _trial_with_pair(tmp_path, slot, rating_id, n, load):
    """One trial on `slot` whose sampler delivers PAIR through telemetry's real reader."""
    with live.trial(slot, rating_id, n, load) as done:
        with telemetry.Samplers(_stand_in_sampler(tmp_path), 60, on_interval=live.publisher(slot)) as sampling:
            assert sampling.running[0].wait_for(2, timeout_s=15)
        yield done                      # the reader has ended (joined): the pair is published


def test_metric_names_are_in_base_units():
    assert live.metric_name("server_cpu_cores") == ("workbench_server_cpu_cores", 1.0)
    assert live.metric_name("disk_read_iops") == ("workbench_disk_read_ops_per_second", 1.0)
    assert live.metric_name("disk_read_iops_limit") == ("workbench_disk_read_limit_ops_per_second", 1.0)
    assert live.metric_name("net_rx_Bps") == ("workbench_net_rx_bytes_per_second", 1.0)
    assert live.metric_name("server_mean_ms") == ("workbench_server_mean_seconds", 1e-3)
    assert live.metric_name("server_cpu_throttled_frac") == ("workbench_server_cpu_throttled_ratio", 1.0)
    assert live.metric_name("mem_majfault_s") == ("workbench_mem_majfault_per_second", 1.0)
    assert live.metric_name("mem_used_bytes") == ("workbench_mem_used_bytes", 1.0)
    assert live.metric_name("bad-name") is None
    assert [live.slot_number(s) for s in ("slot1", "slot5", "sshslot1", "filer")] == [1, 5, 1, 0]


def test_a_sample_pair_is_published_with_its_labels_and_served(tmp_path, endpoints):
    port = _base_for(endpoints, 3)
    labels = {"slot": "slot3", "host": "sut9", "rating_id": "r-unit"}
    trial_labels = {"slot": "slot3", "rating_id": "r-unit"}
    with _trial_with_pair(tmp_path, "slot3", "r-unit", 4, 2000.0) as done:
        reg = live._views["slot3"].registry
        assert reg.get_sample_value("workbench_server_cpu_cores", labels) == pytest.approx(0.3)
        assert reg.get_sample_value("workbench_server_cpu_limit_cores", labels) == 0.5
        assert reg.get_sample_value("workbench_disk_read_ops_per_second", labels) == pytest.approx(200)
        assert reg.get_sample_value("workbench_disk_read_limit_ops_per_second", labels) == 400
        assert reg.get_sample_value("workbench_net_rx_bytes_per_second", labels) == pytest.approx(500_000)
        assert reg.get_sample_value("workbench_net_delay_seconds", labels) == pytest.approx(0.002)
        assert reg.get_sample_value("workbench_server_ops_per_second", labels) == pytest.approx(1000)
        assert reg.get_sample_value("workbench_server_mean_seconds", labels) == pytest.approx(0.002)
        assert reg.get_sample_value("workbench_mem_used_bytes", labels) == 96 << 20
        assert reg.get_sample_value("workbench_trial_number", trial_labels) == 4
        assert reg.get_sample_value("workbench_trial_running", trial_labels) == 1
        # the endpoint serves the same, in the text format, on slot3's port of 127.0.0.1
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert 'workbench_trial_offered_ops_per_second{rating_id="r-unit",slot="slot3"} 2000.0' in text
        assert 'workbench_server_cpu_cores{host="sut9",rating_id="r-unit",slot="slot3"} 0.3' in text
        done.done(1950.0, 12.5, True)
    assert reg.get_sample_value("workbench_trial_achieved_ops_per_second", trial_labels) == 1950
    assert reg.get_sample_value("workbench_trial_mean_seconds", trial_labels) == pytest.approx(0.0125)
    assert reg.get_sample_value("workbench_trial_running", trial_labels) == 0
    assert reg.get_sample_value("workbench_server_cpu_cores", labels) is None      # until the next trial's


def test_a_taken_port_is_logged_once_and_the_trial_goes_on(tmp_path, endpoints, caplog):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        endpoints.setenv(live.PORT_ENV, str(taken.getsockname()[1] - 2))
        caplog.set_level(logging.WARNING, logger=live.__name__)
        for n in range(2):
            with live.trial("slot2", "r-taken", n, 100.0) as done:
                done.done(99.0, 1.0, True)
    lines = [r.getMessage() for r in caplog.records if r.name == live.__name__]
    assert len(lines) == 1 and "no endpoint for slot2" in lines[0], lines
    assert live._views["slot2"].registry.get_sample_value(
        "workbench_trial_number", {"slot": "slot2", "rating_id": "r-taken"}) == 1


def test_off_publishes_nothing(endpoints):
    endpoints.setenv(live.OFF_ENV, "off")
    with live.trial("slot1", "r-off", 0, 100.0) as done:
        done.done(100.0, 1.0, True)
    assert live.publisher("slot1") is None and live._views == {}


def _promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60)


def _config(tmp_path: Path, targets_host: str = "127.0.0.1", node: str | None = "127.0.0.1:9100") -> Path:
    args = ["config", "--targets-host", targets_host, "--rules", str(MONITORING / "rules.yml")]
    out = subprocess.run([sys.executable, "-m", "workbench.measure.live_config", *args, *(["--node", node] if node else [])],
                         capture_output=True, text=True, timeout=60, check=True)
    path = tmp_path / "prometheus.yml"
    path.write_text(out.stdout)
    return path


def test_promtool_accepts_the_rules_and_the_generated_configs(tmp_path, prometheus_installed):
    rules = _promtool("check", "rules", str(MONITORING / "rules.yml"))
    assert rules.returncode == 0 and "SUCCESS: 12 rules found" in rules.stdout, rules.stdout + rules.stderr
    cfg = _promtool("check", "config", str(_config(tmp_path)))
    assert cfg.returncode == 0 and "SUCCESS: 1 rule files found" in cfg.stdout, cfg.stdout + cfg.stderr
    scraped = yaml.safe_load(_config(tmp_path).read_text())["scrape_configs"]
    assert [j["job_name"] for j in scraped] == ["workbench", "fstress", "node"]
    assert [t for j in scraped for c in j["static_configs"] for t in c["targets"]] == [
        *(f"127.0.0.1:{live.PORT_BASE + k}" for k in range(1, 6)),
        *(f"127.0.0.1:{live.PORT_BASE + 10 + k}" for k in range(1, 6)), "127.0.0.1:9100"]
    # docker-compose.yml's copy: what the generator prints for the worker's container (its rules path
    # exists only in the container: syntax only)
    compose = MONITORING / "compose" / "prometheus.yml"
    generated = _config(tmp_path, "airflow-worker").read_text()
    in_container = generated.replace(str(MONITORING / "rules.yml"), "/etc/prometheus/workbench/rules.yml")
    assert yaml.safe_load(compose.read_text()) == yaml.safe_load(in_container)
    syntax = _promtool("check", "config", "--syntax-only", str(compose))
    assert syntax.returncode == 0, syntax.stdout + syntax.stderr


def _prom_query(port: int, expr: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        return json.load(urllib.request.urlopen(url, timeout=5))["data"]["result"]
    except OSError:                     # not listening yet
        return []


def _await(prom: subprocess.Popen, port: int, expr: str, log: Path, timeout_s: float = 20) -> list[dict]:
    """The first non-empty result of `expr`: Prometheus's API asked again after each scrape of slot1's
    exporter (its scrape counter's condition, the event a new value waits for), until a deadline."""
    deadline = time.monotonic() + timeout_s
    scrapes = live._view("slot1").scrapes
    while True:
        with scrapes.cond:
            seen = scrapes.n
        if result := _prom_query(port, expr):
            return result
        assert prom.poll() is None, log.read_text()[-2000:]
        left = deadline - time.monotonic()
        assert left > 0, f"no {expr} within {timeout_s} s:\n" + log.read_text()[-2000:]
        with scrapes.cond:
            scrapes.cond.wait_for(lambda: scrapes.n > seen, left)


def test_a_real_prometheus_scrapes_a_trial_and_records_its_utilization(tmp_path, endpoints, prometheus_installed):
    """Prometheus 2.42 (Debian) on a free port with the generated config, rules and console page;
    the exporter of this process on slot1 fed PAIR: the recording rule's value over the HTTP API
    (0.3 cores of a 0.5-core limit), and the console page of the rating rendered with its figures."""
    _base_for(endpoints, 1)
    web = _free_port()
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={_config(tmp_path, node=None)}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{web}",
                             f"--web.console.templates={MONITORING / 'consoles'}",
                             f"--web.console.libraries={MONITORING / 'console_libraries'}"],
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "wb"),
                            start_new_session=True)
    log = tmp_path / "prometheus.log"
    try:
        with _trial_with_pair(tmp_path, "slot1", "r-live", 0, 1000.0) as done:
            result = _await(prom, web, 'workbench:server_cpu_utilization:ratio{rating_id="r-live"}', log)
            assert result[0]["metric"]["slot"] == "slot1" and result[0]["metric"]["host"] == "sut9"
            assert float(result[0]["value"][1]) == pytest.approx(0.6)
            page = urllib.request.urlopen(f"http://127.0.0.1:{web}/consoles/workbench.html?rating_id=r-live",
                                          timeout=10).read().decode()
            assert "Workbench: rating r-live" in page and "1000 ops/s" in page, page[:3000]
            assert "workbench:server_cpu_utilization:ratio{rating_id=" in page
            done.done(990.0, 3.0, True)
        # the trial's end waited (bounded) for one more scrape: its result reaches Prometheus
        achieved = _await(prom, web, 'workbench_trial_achieved_ops_per_second{rating_id="r-live"}', log)
        assert float(achieved[0]["value"][1]) == 990.0, achieved
    finally:
        prom.terminate()
        try:
            prom.wait(timeout=15)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait(timeout=15)


# ------------------------------------------------------------------ the fstress agents' endpoints
def test_the_agents_ports_labels_and_flag(endpoints):
    endpoints.setenv(live.PORT_ENV, "9650")
    assert [live_agents.agent_port_for(s) for s in ("slot1", "slot5", "sshslot2", "filer", "", None)] == [
        9661, 9665, 9662, None, None, None]
    assert live_agents.agent_labels(None) == {} and live_agents.agent_labels("slot7") == {"rating_id": "", "slot": "slot7"}
    spec = {"host": "h", "prefix": ["/x/fstress"], "pid_file": "/x/p", "connection": "local"}
    assert agents.agent_argv(spec, "d", "fd:5")[-2:] == ["--metrics-addr", "fd:5"]
    assert "--metrics-addr" not in agents.agent_argv(spec, "d")
    with live_agents.agent_endpoint("ssh", 9661) as (addr, fds):
        assert (addr, fds) == ("127.0.0.1:9661", ())                 # an SSH host's agent: its own loopback
    ssh = agents.agent_argv({**spec, "connection": "ssh", "ssh_host": "10.0.0.5"}, "d", addr)
    assert ssh[-1].endswith("agent --deployment d --pid-file /x/p --metrics-addr 127.0.0.1:9661")
    port = _free_port()
    with live_agents.agent_endpoint("local", port) as (addr, fds):          # a local one: a socket made here
        assert addr == f"fd:{fds[0]}"
        with live_agents.agent_endpoint("local", port) as taken:            # the port taken: no endpoint, no failure
            assert taken == (None, ())
    assert live_agents.agent_endpoint("local", None).__enter__() == (None, ())


# an fstress before protocol 2: `agent --metrics-addr` is an unknown flag (a usage line, exit 2)
_OLD = 'case " $* " in *" --metrics-addr "*) echo "flag provided but not defined: -metrics-addr" >&2; exit 2;; esac; '


def test_an_fstress_too_old_for_the_view_is_started_without_it(tmp_path, endpoints):
    # a free agent port for slot3 (at the fixed base 9650 a suite run's real slot3 agent held 9663:
    # no endpoint, so no --metrics-addr to refuse and an empty log)
    _base_for(endpoints, live.AGENT_PORT_OFFSET + 3)
    spec = {"host": "old", "prefix": ["sh", "-c", _OLD + 'exec "$0" "$@"', sys.executable, str(FAKE_AGENT), "ok"],
            "pid_file": "", "connection": "local", "run_args": []}
    fleet = agents.Fleet([spec], slot="slot3", log_dir=tmp_path)
    try:
        (a,) = fleet.agents
        assert a.hello["protocol"] == 1 and "--metrics-addr" not in a.argv
        assert "flag provided but not defined" in (tmp_path / "agent-old.log").read_text()
        (r,) = fleet.run([["--rate", "10", "--duration", "1", "--seed", "1", "--client-id", "0"]], timeout_s=10)
        assert r.ok
    finally:
        fleet.close()
    endpoints.setenv(live.OFF_ENV, "off")                 # the view off: never the flag
    fleet = agents.Fleet([spec], slot="slot3")
    assert "--metrics-addr" not in fleet.agents[0].argv and fleet.agents[0].hello["protocol"] == 1
    fleet.close()


@pytest.fixture
def null_server():
    """`fstress nullserver` of bin/fstress on a free loopback port."""
    assert FSTRESS.is_file(), "bin/fstress is missing: make fstress"
    port = _free_port()
    proc = subprocess.Popen([str(FSTRESS), "nullserver", "--listen", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stderr is not None and "listening" in proc.stderr.readline()   # once it listens; EOF: failed
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _agent_base(monkeypatch) -> int:
    """A port base whose slot1 ports (this process's and its agents', base+1 and base+11) are free; set."""
    for _ in range(20):
        base = _free_port() - 11
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", base + 1))
            except OSError:
                continue
        monkeypatch.setenv(live.PORT_ENV, str(base))
        return base
    raise AssertionError("no free pair of ports")


def _agent_fleet(tmp_path: Path, server_port: int) -> agents.Fleet:
    """A real agent (bin/fstress) of slot1 against the null server, its live view on."""
    spec = {"host": "loadT", "prefix": [str(FSTRESS)], "pid_file": str(tmp_path / "agent.pid"), "connection": "local",
            "run_args": ["--server", f"127.0.0.1:{server_port}", "--mount-port", str(server_port), "--export", "/export",
                         "--workload", "web_server", "--drain-timeout", "0"]}
    return agents.Fleet([spec], deployment="dep-live", slot="slot1", log_dir=tmp_path)


def _agent_trial(fleet: agents.Fleet, runlength_s: float) -> tuple[threading.Thread, list]:
    """A trial at 300 ops/s on a thread; its HostResults land in the list."""
    args = agents.trial_args(fleet.specs[0], rate=300, runlength_s=runlength_s, warmup_s=0.2, client_id=0, seed=1,
                             start_at=time.time())
    out: list = []
    th = threading.Thread(target=lambda: out.extend(fleet.run([args], timeout_s=30)), daemon=True)
    th.start()
    return th, out


def _scrape(url: str) -> list:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    return [s for f in text_string_to_metric_families(text) for s in f.samples]


def _value(samples: list, name: str, **labels: str) -> float | None:
    for s in samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return None


@pytest.mark.timeout(60)
def test_a_real_agent_serves_its_trial_as_it_runs(tmp_path, endpoints, null_server):
    """bin/fstress's agent on slot1's agent port: during the trial running 1 and the completed calls
    growing (scrapes paced by the trial's thread, bounded), after it running 0, every call sent
    completed; labelled by the deployment and the rating and slot of this process's view."""
    base = _agent_base(endpoints)
    fleet = _agent_fleet(tmp_path, null_server)
    try:
        hello = fleet.agents[0].hello
        assert hello["protocol"] == 2 and hello["metrics"] == f"127.0.0.1:{base + 11}", hello
        url, want = f"http://{hello['metrics']}/metrics", {"rating_id": "r-agent", "slot": "slot1"}
        with live.trial("slot1", "r-agent", 0, 300.0):
            th, out = _agent_trial(fleet, 1.5)
            seen: list[float] = []
            deadline = time.monotonic() + 20
            while len(seen) < 2 and time.monotonic() < deadline and th.is_alive():
                s = _scrape(url)
                done = _value(s, "fstress_calls_completed_total", **want)
                if _value(s, "fstress_trial_running", **want) == 1 and done and (not seen or done > seen[-1]):
                    seen.append(done)
                th.join(timeout=0.05)                      # the pace: the trial's end, or 50 ms
            th.join(timeout=30)
        assert len(seen) == 2, f"no growing count during the trial: {seen}"
        assert out and out[0].ok and out[0].result, out
        s = _scrape(url)
        assert _value(s, "fstress_trial_running", deployment="dep-live", **want) == 0
        done, sent = _value(s, "fstress_calls_completed_total", **want), _value(s, "fstress_calls_sent_total", **want)
        assert done == sent and done >= out[0].result["ops_total"] and _value(s, "fstress_calls_in_flight", **want) == 0
        assert _value(s, "fstress_offered_ops_per_second", **want) == 300
        assert _value(s, "fstress_send_lag_seconds_count", **want) == out[0].result["ops_total"]
    finally:
        fleet.close()


@pytest.mark.timeout(90)
def test_a_real_prometheus_scrapes_the_agents(tmp_path, endpoints, null_server, prometheus_installed):
    """The generated config's job fstress scrapes the real agent of slot1: the recording rule of its
    achieved rate (rate() of the completed calls) during the trial, its running 1 then 0."""
    _agent_base(endpoints)
    web = _free_port()
    log = tmp_path / "prometheus.log"
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={_config(tmp_path, node=None)}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{web}"],
                            stdout=subprocess.DEVNULL, stderr=open(log, "wb"), start_new_session=True)
    fleet = _agent_fleet(tmp_path, null_server)
    sel = 'rating_id="r-prom",slot="slot1"'
    try:
        with live.trial("slot1", "r-prom", 0, 300.0):       # slot1's exporter: its scrapes pace _await
            _await(prom, web, 'up{job="fstress"} == 1', log)
            th, out = _agent_trial(fleet, 3.0)
            rate = _await(prom, web, f"fstress:achieved_ops_per_second:rate5s{{{sel}}} > 0", log)
            assert 0 < float(rate[0]["value"][1]) < 600, rate
            running = _await(prom, web, f'fstress_trial_running{{{sel},deployment="dep-live"}} == 1', log)
            assert running[0]["metric"]["job"] == "fstress"
            th.join(timeout=30)
            assert out and out[0].ok, out
            _await(prom, web, f"fstress_trial_running{{{sel}}} == 0", log)
    finally:
        fleet.close()
        prom.terminate()
        try:
            prom.wait(timeout=15)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait(timeout=15)


@pytest.mark.timeout(60)
def test_an_agent_in_a_network_namespace_is_scraped_from_outside(tmp_path, endpoints):
    """A local load host lives in a network namespace of its own (the slots'): its agent serves on the
    socket made in this one (fd:N), so this host's Prometheus reaches it; inside, nothing listens."""
    base = _agent_base(endpoints)
    ns = f"wb-livetest-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        spec = {"host": "loadNS", "prefix": ["ip", "netns", "exec", ns, str(FSTRESS)],
                "pid_file": str(tmp_path / "agent.pid"), "connection": "local", "run_args": []}
        fleet = agents.Fleet([spec], deployment="dep-ns", slot="slot1", log_dir=tmp_path)
        try:
            assert fleet.agents[0].hello["metrics"] == f"127.0.0.1:{base + 11}"
            assert _value(_scrape(f"http://127.0.0.1:{base + 11}/metrics"), "fstress_trials_total",
                          deployment="dep-ns") == 0
            inside = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Htln"], capture_output=True, text=True)
            assert str(base + 11) not in inside.stdout, inside.stdout
        finally:
            fleet.close()
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
