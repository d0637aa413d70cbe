"""fstress against a real NFS-Ganesha on loopback (issue 2 acceptance).

Every canned workload runs >= 10 s at a rate the server sustains with 0 protocol errors,
achieved rate within 0.5% of offered and the op mix within tolerance; bad input gives a one-line
error, a non-zero exit and no JSON file; two clients started together merge exactly.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import FSTRESS, start_slot, stop_slot

from workbench.measure.timeseries import compact, merge_series

CANNED = ["specsfs97", "web_server", "web_proxy", "db_tp", "p2p", "mail", "news", "genomics"]
RATE_OPS_S = 400  # well below what loopback Ganesha sustains for every canned mix
# A calm trial is steady: its one undisturbed run in CALM_ATTEMPTS. In the suite another worker's
# burst mid-trial can make a 0.35 ms series drift enough for Mann–Kendall (suite runs of 11-24 and 11-28:
# "trend up"); a verdict that is wrong on a calm server fails every attempt.
CALM_ATTEMPTS = 3
DURATION_S = 10
# Mix tolerance for a 10 s run (4000 ops): the scheduler is stratified (deterministic blocks),
# so |actual - target| <= 1/n per op; 0.1 percentage point is the >=100k-ops goal and holds here too.
MIX_TOL_PP = 0.1
# Send-lag bound (fstress --lag-bound): the one the product uses on this shared 2-core box (profile
# quick, src/workbench/config/profiles.py). Even so the whole VM stalls at times: send-lag p99 of 2.9–5.6 ms
# (db_tp, mail, news), then 38.6 ms (p2p) and 26 ms (specsfs97, export on tmpfs) at 400 ops/s in
# three runs, with every op answered on time and the mix exact. So, as the Go engine test does, a
# generator-saturated exit (3) is accepted when send lag is its only reason; any other reason fails.
# Pacing precision is measured where it can be, on an isolated core: bench/loadgen.py (p99 ≈ 120 µs
# at 50 % of capacity, docs/performance.md).
LAG_BOUND = "10ms"

# one session Ganesha (conftest `ganesha`) serves them all: under xdist they share a worker
pytestmark = pytest.mark.xdist_group("ganesha")


def run_json(slot, tmp_path: Path, workload: str, *extra: str, rate=RATE_OPS_S, duration=DURATION_S):
    out = tmp_path / f"{workload}.json"
    fs = slot.fstress("fileset", *slot.connect_args(), "--workload", workload, "--rate", str(rate))
    assert fs.returncode == 0, fs.stderr
    proc = slot.fstress(
        "run", *slot.connect_args(), "--workload", workload, "--rate", str(rate),
        "--duration", str(duration), "--warmup", "2", "--lag-bound", LAG_BOUND, "--json", str(out), *extra,
    )
    return proc, out


def assert_ran(proc, r: dict) -> None:
    """Exit 0, or exit 3 (generator saturated) for send lag alone (see LAG_BOUND): every reason
    fstress (or `fstress merge`, which joins its inputs' reasons with "; ") gives is send lag."""
    reasons = str(r.get("saturation_reason") or "").split("; ")
    if proc.returncode == 3 and r.get("generator_saturated") and all(x.startswith("send-lag") for x in reasons):
        return
    assert proc.returncode == 0, proc.stderr
    assert r["generator_saturated"] is False, r.get("saturation_reason")


@pytest.mark.integration
def test_workloads_lists_all_canned(fstress_bin):
    out = subprocess.run([str(fstress_bin), "workloads"], capture_output=True, text=True, check=True)
    names = {line.split()[0] for line in out.stdout.splitlines() if line.strip()}
    assert set(CANNED) <= names


@pytest.mark.integration
@pytest.mark.parametrize("workload", CANNED)
def test_canned_workload_on_ganesha(ganesha, tmp_path, workload):
    proc, out = run_json(ganesha, tmp_path, workload)
    assert out.is_file(), proc.stderr
    r = json.loads(out.read_text())
    assert_ran(proc, r)
    assert r["duration_s"] >= DURATION_S - 1e-9
    assert r["errors"] == 0 and r["timeouts"] == 0, r["ops"]
    assert abs(r["achieved_rate"] - r["offered_rate"]) <= 0.005 * r["offered_rate"], (
        r["achieved_rate"], r["offered_rate"])
    assert r["ops_total"] >= 0.995 * RATE_OPS_S * DURATION_S
    for op, target in r["mix_target"].items():
        actual = r["mix_actual"].get(op, 0.0)
        assert abs(actual - target) * 100 <= MIX_TOL_PP, (op, target, actual)
    assert r["mean_ms"] > 0 and r["p50_ms"] <= r["p95_ms"] <= r["p99_ms"] <= r["max_ms"]
    assert sum(o["count"] for o in r["ops"].values()) == r["ops_total"]


@pytest.mark.integration
def test_mount_port_from_portmapper(ganesha, tmp_path):
    out = tmp_path / "pmap.json"
    proc = ganesha.fstress(
        "run", "--server", ganesha.server, "--export", ganesha.export, "--workload", "web_server",
        "--rate", "200", "--duration", "2", "--warmup", "0", "--lag-bound", LAG_BOUND, "--json", str(out),
    )
    assert out.is_file(), proc.stderr
    r = json.loads(out.read_text())
    assert_ran(proc, r)  # no --mount-port given: the mount port came from the slot's portmapper
    assert r["ops_total"] > 0 and r["errors"] == 0 and r["timeouts"] == 0, r["ops"]


def _one_line_error(proc, *words):
    assert proc.returncode != 0
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    for w in words:
        assert w.lower() in lines[0].lower(), (w, lines[0])


@pytest.mark.integration
@pytest.mark.parametrize(
    "case,args,words",
    [
        ("unknown-workload", ["--workload", "no_such_workload"], ["no_such_workload"]),
        ("rate-zero", ["--rate", "0"], ["rate"]),
        ("rate-negative", ["--rate", "-5"], ["rate"]),
        ("wrong-export", ["--export", "/no/such/export"], ["/no/such/export"]),
        ("unreachable", ["--server", "127.0.0.1:1", "--mount-port", "1"], ["127.0.0.1:1"]),
    ],
)
def test_bad_input_one_line_error_no_json(ganesha, tmp_path, case, args, words):
    out = tmp_path / f"{case}.json"
    base = {"--server": ganesha.server, "--mount-port": str(ganesha.mount_port),
            "--export": ganesha.export, "--workload": "web_server", "--rate": "100"}
    for k, v in zip(args[::2], args[1::2]):
        base[k] = v
    flat = [x for kv in base.items() for x in kv]
    proc = ganesha.fstress("run", *flat, "--duration", "1", "--warmup", "0", "--json", str(out),
                           timeout=60)
    _one_line_error(proc, *words)
    assert not out.exists()
    assert not list(tmp_path.glob("*.json*")), "no partial or temporary JSON may remain"


@pytest.mark.integration
@pytest.mark.parametrize(
    "case,content,words",
    [
        ("negative", "1024:3\n2048:-1\n", ["negative"]),
        ("empty", "# nothing here\n\n", ["no entries"]),
        ("nan", "1024:3\nbig:1\n", ["big"]),
    ],
)
def test_bad_distribution_file(ganesha, tmp_path, case, content, words):
    dist = tmp_path / f"{case}.dist"
    dist.write_text(content)
    wl = tmp_path / f"{case}.wl"
    wl.write_text(
        "name = bad_" + case + "\n"
        "mix = getattr:1\n"
        f"file_size = @{dist}\n"
    )
    out = tmp_path / f"{case}.json"
    proc = ganesha.fstress("run", *ganesha.connect_args(), "--workload", str(wl), "--rate", "100",
                           "--duration", "1", "--warmup", "0", "--json", str(out), timeout=60)
    _one_line_error(proc, dist.name, *words)
    assert not out.exists()


@pytest.mark.integration
def test_two_clients_start_together_and_merge_exactly(ganesha, tmp_path, fstress_bin):
    fs = ganesha.fstress("fileset", *ganesha.connect_args(), "--workload", "web_server",
                         "--rate", "400")
    assert fs.returncode == 0, fs.stderr
    start_at = f"{time.time() + 2:.3f}"
    procs, outs = [], []
    for i in range(2):
        out = tmp_path / f"client{i}.json"
        outs.append(out)
        procs.append(subprocess.Popen(
            ganesha.exec_argv(str(fstress_bin), "run", *ganesha.connect_args(), "--workload",
                              "web_server", "--rate", "200", "--duration", "4", "--warmup", "1",
                              "--start-at", start_at, "--seed", str(i + 1), "--lag-bound", LAG_BOUND,
                              "--json", str(out)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p, out in zip(procs, outs):
        _, err = p.communicate(timeout=60)
        assert out.is_file(), err
        assert_ran(p, json.loads(out.read_text()))
    merged = tmp_path / "merged.json"
    m = subprocess.run([str(fstress_bin), "merge", *map(str, outs), "--json", str(merged)],
                       capture_output=True, text=True)
    a, b, r = (json.loads(p.read_text()) for p in (*outs, merged))
    assert_ran(m, r)     # a client's send lag makes the merge "saturated" too (exit 3), as it should
    assert r["ops_total"] == a["ops_total"] + b["ops_total"]
    assert r["offered_rate"] == pytest.approx(a["offered_rate"] + b["offered_rate"])
    assert r["max_ms"] == max(a["max_ms"], b["max_ms"])
    assert 0 <= a["host_steal_pct"] <= 100 and 0 <= b["host_steal_pct"] <= 100   # read from /proc/stat
    assert r["host_steal_pct"] == max(a["host_steal_pct"], b["host_steal_pct"])   # the worst load host
    for op in set(a["ops"]) | set(b["ops"]):
        ca = a["ops"].get(op, {}).get("count", 0)
        cb = b["ops"].get(op, {}).get("count", 0)
        assert r["ops"][op]["count"] == ca + cb
    # mean merges exactly from the sums: the ops-weighted mean of the two clients
    want = (a["mean_ms"] * a["ops_total"] + b["mean_ms"] * b["ops_total"]) / r["ops_total"]
    assert r["mean_ms"] == pytest.approx(want, rel=1e-9)
    # both clients measured the same wall-clock window (started together)
    assert r["p50_ms"] <= r["p95_ms"] <= r["p99_ms"]
    # the time series (1 s intervals): fstress's merge and the controller's (measure.timeseries) agree
    # exactly, and the measured intervals add up to the run
    here = merge_series([a["series"], b["series"]])
    assert compact(r) == here
    assert here["t_s"] == [-1.0, 0.0, 1.0, 2.0, 3.0]          # one warm-up interval, four measured
    assert sum(here["ops"][1:]) == r["ops_total"]
    assert here["outstanding_at_stop"] == a["series"]["outstanding_at_stop"] + b["series"]["outstanding_at_stop"]


def test_only_send_lag_excuses_a_saturated_exit():
    from types import SimpleNamespace as P
    assert_ran(P(returncode=0, stderr=""), {"generator_saturated": False})
    assert_ran(P(returncode=3, stderr=""), {"generator_saturated": True,
                                            "saturation_reason": "send-lag p99 26.4 ms > bound 10 ms"})
    assert_ran(P(returncode=3, stderr=""), {"generator_saturated": True, "saturation_reason":
                                            "send-lag p99 19.4 ms > bound 10 ms; send-lag p99 18.3 ms > bound 10 ms"})
    for code, r in ((3, {"generator_saturated": True, "saturation_reason": "outstanding cap 4096 hit"}),
                    (3, {"generator_saturated": True, "saturation_reason": "achieved 300 < 99% of 400"}),
                    (3, {"generator_saturated": True,
                         "saturation_reason": "send-lag p99 26.4 ms > bound 10 ms; outstanding-calls cap 4096 hit"}),
                    (1, {"generator_saturated": False}),
                    (0, {"generator_saturated": True, "saturation_reason": "send-lag p99 3 ms"})):
        with pytest.raises(AssertionError):
            assert_ran(P(returncode=code, stderr="x"), r)


@pytest.mark.integration
def test_a_server_stalled_mid_trial_is_judged_not_steady(ganesha, tmp_path):
    """Ganesha SIGSTOPped for 2 s in the middle of a 10 s trial: its per-interval series shows it
    (stats.steady: stall, trend or backlog); the same trial without the stall is steady. Fed to
    the controller with the quick profile's spec, the stalled trial is re-run at its load
    (controller.steadiness) and the calm one counts."""
    import os
    import signal
    import threading

    from workbench.config.profiles import PROFILES
    from workbench.controller.decide import NextTrial, decide
    from workbench.controller.spec import RatingSpec
    from workbench.controller.steadiness import excluding_not_steady
    from workbench.measure.trialjson import result_from_json

    def trial(out):
        return result_from_json(json.loads(out.read_text()), RATE_OPS_S, DURATION_S)

    seen = []
    for attempt in range(CALM_ATTEMPTS):         # the suite's other workers may load this box mid-trial
        (tmp_path / f"calm{attempt}").mkdir()
        _, out = run_json(ganesha, tmp_path / f"calm{attempt}", "web_server")
        calm_trial = trial(out)
        calm = calm_trial.raw["steady"]
        seen.append((calm["verdict"], calm.get("mk_p"), calm_trial.raw.get("timeseries", {}).get("mean_ms")))
        if calm["verdict"] == "steady":
            break
    assert calm["verdict"] == "steady", seen
    tried = []
    for attempt in range(CALM_ATTEMPTS):      # a loaded box may hold fstress's own sends back (saturated)
        (tmp_path / f"stall{attempt}").mkdir()
        stop = threading.Timer(2 + 4, os.kill, (ganesha.pid, signal.SIGSTOP))  # warm-up 2 s, then 4 s in
        cont = threading.Timer(2 + 6, os.kill, (ganesha.pid, signal.SIGCONT))
        stop.start(), cont.start()
        try:
            _, out = run_json(ganesha, tmp_path / f"stall{attempt}", "web_server")
        finally:
            stop.cancel(), cont.cancel()
            os.kill(ganesha.pid, signal.SIGCONT)
        stalled_trial = trial(out)
        tried.append(stalled_trial.reason)
        if not stalled_trial.raw.get("generator_saturated"):
            break
    stalled = stalled_trial.raw["steady"]
    print(f"calm: {calm}\nstalled: {stalled}")
    assert stalled["verdict"] in ("stall", "trend up", "backlog"), stalled
    assert stalled_trial.valid, tried        # a valid trial: only its verdict excludes it
    spec = RatingSpec(**PROFILES["quick"]["spec"])
    assert set(excluding_not_steady(spec, [calm_trial, stalled_trial])[1]) == {1}    # the stalled one only
    d = decide(spec, [calm_trial, stalled_trial])
    print(d)
    assert isinstance(d, NextTrial) and d.load_ops_s == RATE_OPS_S and d.runlength_s >= DURATION_S
    assert d.reason.startswith(f"re-run not steady: {stalled['verdict']}"), d.reason


WB_CGROUP = Path(__file__).resolve().parents[2] / "roles" / "nfs_server" / "files" / "wb-cgroup.sh"


@pytest.fixture
def disk_bound_ganesha(tmp_path, fstress_bin):
    """A Ganesha slot with the quick profile's server, without Ansible: its export an ext4 loop image,
    the server in the nfs_server role's cgroups (wb-cgroup.sh) with 128 MiB of memory and 100 read
    IOPS — a disk queue that an overload on a cold cache fills. Yields (slot, drop_cache)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (loop devices, cgroups, network namespaces)")
    name, img, mnt = f"dq{os.getpid() % 100000}", tmp_path / "disk.img", tmp_path / "export"
    cg = str(WB_CGROUP)

    def sh(*argv: str) -> str:
        return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60).stdout.strip()

    loop = ""
    stop_slot(name)
    try:
        sh("truncate", "-s", "256M", str(img))
        loop = sh("losetup", "-f", "--show", str(img))
        sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", loop)
        mnt.mkdir()
        sh("mount", loop, str(mnt))
        sh(cg, "apply", name, str(128 << 20), "100", "0", "0", "0", loop)
        slot = start_slot(name, "--export-dir", str(mnt), cgroup_procs=tuple(sh(cg, "procs", name).split()))
        yield slot, lambda: sh(cg, "drop", name)
    finally:
        stop_slot(name)
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=60)
        if loop:
            subprocess.run(["losetup", "-d", loop], capture_output=True, timeout=60)
        subprocess.run([cg, "remove", name], capture_output=True, timeout=60)


@pytest.mark.integration
def test_the_next_run_waits_for_a_busy_server_and_records_its_drain(disk_bound_ganesha, tmp_path):
    """The drain before a run, on a disk-bound Ganesha (disk_bound_ganesha), in four light runs:
    1. the first, on the empty export, builds the file set and measures the idle NULL and READ
       round trips (remembered in --drain-state);
    2. an overload (2500 ops/s on a cold cache, ≈ 2.5 × λ*) leaves a backlog behind its last send —
       calls queued in its connections' sockets, Ganesha's threads waiting on the throttled disk;
       the next run starts as the overload's sending stops, with a NULL stage that cannot see it
       (margin 1 s: a NULL need not wait for the disk; loadgen/README.md "Drain before the run"):
       its READ stage waits until the backlog is gone and records how long (drain_s);
    3. a run started while the server does not answer (SIGSTOPped for 0.8 s): its NULL stage's first
       round trip lasts until the server answers again;
    4. the same run on the idle server: a short drain.
    ≈ 17 s (3 runs: drain after the overload 1.84–2.15 s, on the idle server 0.087–0.097 s)."""
    import signal
    import threading

    from workbench.measure.trialjson import result_from_json

    slot, drop_cache = disk_bound_ganesha
    common = [*slot.connect_args(), "--workload", "web_server", "--fileset-rate", str(RATE_OPS_S),
              "--warmup", "0", "--drain-state", str(tmp_path / "drain.json")]

    def light(name: str, *extra: str) -> dict:
        out = tmp_path / f"{name}.json"
        p = slot.fstress("run", *common, "--rate", "100", "--duration", "1", "--lag-bound", LAG_BOUND,
                         "--json", str(out), *extra, timeout=120)
        assert out.is_file(), p.stderr
        r = json.loads(out.read_text())
        assert_ran(p, r)
        assert result_from_json(r, 100, 1).drain_s == r["drain"]["drain_s"]
        return r["drain"]

    idle = light("idle")
    assert idle["probe"] == "read" and idle["idle_from"] == "measured" and idle["drained"], idle
    assert idle["null"]["probe"] == "null" and idle["null"]["idle_from"] == "measured", idle

    drop_cache()
    over, start_at = tmp_path / "over.json", time.time() + 2.0
    o = subprocess.Popen(slot.exec_argv(str(FSTRESS), "run", *common, "--rate", "2500", "--duration", "2",
                                        "--start-at", f"{start_at:.3f}", "--drain-timeout", "0", "--timeout", "3s",
                                        "--retransmits", "0", "--lag-bound", "1s", "--json", str(over)),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(max(0.0, start_at + 2.0 - time.time()))        # the overload's sending stops
        after = light("after", "--drain-margin", "1s")
    finally:
        _, err = o.communicate(timeout=60)
    assert over.is_file(), err
    backlog = json.loads(over.read_text())["series"]["outstanding_at_stop"]

    cont = threading.Timer(0.8, os.kill, (slot.pid, signal.SIGCONT))
    os.kill(slot.pid, signal.SIGSTOP)
    try:
        cont.start()
        stopped = light("stopped")
    finally:
        cont.cancel()
        os.kill(slot.pid, signal.SIGCONT)
    calm = light("calm")
    print(f"idle {idle}\nbacklog {backlog} calls; after the overload {after}\nafter the stop {stopped}\ncalm {calm}")

    assert backlog >= 500, err                                   # the overload left a backlog
    for d in (after, stopped, calm):
        assert d["drained"] and d["idle_from"] == "state" and d["idle_rtt_us"] == idle["idle_rtt_us"], d
        assert d["null"]["idle_rtt_us"] == idle["null"]["idle_rtt_us"], d
    # the READ stage saw the backlog, waited for it, and ended back near idle
    assert after["max_rtt_us"] > after["limit_us"], after
    assert sorted(after["last_rtts_us"])[-2] <= after["limit_us"], after       # the rule: the 2nd largest
    assert after["drain_s"] - after["null"]["drain_s"] >= 0.5, after
    # the NULL stage saw the stopped server and waited at least its slowest probe
    s = stopped["null"]
    assert s["max_rtt_us"] > s["limit_us"] and stopped["drain_s"] >= s["max_rtt_us"] / 1e6 >= 0.3, stopped
    # on the idle server a short drain (each stage: its first window of 5, ≈ 0.05 s)
    assert calm["drain_s"] < 0.5, calm
    assert after["drain_s"] >= 5 * calm["drain_s"], (after, calm)
