#!/usr/bin/env python3
"""Generator capacity and pacing accuracy of fstress (seed 003 §6.5, Fig. 6), side by side.

    .venv/bin/python bench/loadgen.py [--duration S] [--json bench/out/loadgen.json]

One run measures, with the generator pinned to one core (taskset -c 1, GOMAXPROCS=1) and the
server on the other:
  1. fstress vs `fstress nullserver` (NULL mix) on a ladder of offered rates up to the first one
     where fstress flags itself saturated: capacity ops/s, CPU s per 100k ops;
  2. fstress vs real Ganesha (NULL and GETATTR mixes) at a fixed rate: the same figures;
  3. achieved/offered and send-lag p99 at 10/50/90% of the null-server capacity.
Goals (issue 2): >= 150k ops/s on one core vs the null server; send-lag p99 <= 200 us at 50%.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FSTRESS = REPO / "bin" / "fstress"
sys.path.insert(0, str(REPO / "tests"))
from conftest import start_slot, stop_slot  # noqa: E402  (the same Ganesha slot the tests use)

GEN_CORE, SERVER_CORE = "1", "0"
OFFERED_LADDER_OPS_S = (100_000, 200_000, 400_000, 600_000, 800_000, 1_000_000, 1_200_000, 1_600_000)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def workload_file(tmp: Path, proc: str) -> Path:
    wl = tmp / f"{proc}_only.wl"
    wl.write_text(f"name = {proc}_only\ndescription = {proc.upper()} only (generator capacity)\n"
                  f"mix = {proc}:1\nfileset_min_files = 16\nfileset_files_per_ops = 0.001\n")
    return wl


def run_fstress(prefix: list[str], args: list[str], out: Path, timeout_s: float, binary: Path = FSTRESS) -> dict:
    """Run one fstress trial pinned to GEN_CORE; return its JSON plus CPU seconds from rusage."""
    env = dict(os.environ, GOMAXPROCS="1")
    argv = ["taskset", "-c", GEN_CORE, *prefix, str(binary), "run", *args, "--json", str(out)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"fstress did not finish in {timeout_s} s: {' '.join(argv)}")
        time.sleep(0.05)
    rc = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    if rc not in (0, 3) or not out.exists():  # 3 = generator saturated (expected at max rate)
        raise RuntimeError(f"fstress exit {rc}: {err.strip()[-500:]}")
    r = json.loads(out.read_text())
    r["cpu_s"] = usage.ru_utime + usage.ru_stime
    return r


def row(label: str, r: dict) -> dict:
    ops = r["ops_total"]
    return {
        "case": label,
        "offered_ops_s": r["offered_rate"],
        "achieved_ops_s": r["achieved_rate"],
        "achieved_over_offered": r["achieved_rate"] / r["offered_rate"],
        "cpu_s_per_100k_ops": r["cpu_s"] / ops * 1e5 if ops else float("nan"),
        "send_lag_p99_us": r["send_lag_ms"]["p99"] * 1e3,
        "mean_ms": r["mean_ms"],
        "p99_ms": r["p99_ms"],
        "saturated": r["generator_saturated"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per measured run")
    ap.add_argument("--ganesha-rate", type=float, default=20_000, help="fixed ops/s against Ganesha")
    ap.add_argument("--json", type=Path, default=REPO / "bench" / "out" / "loadgen.json")
    a = ap.parse_args()
    if not FSTRESS.is_file():
        sys.exit(f"{FSTRESS} missing: run `make fstress`")
    dur = str(a.duration)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        null_wl, getattr_wl = workload_file(tmp, "null"), workload_file(tmp, "getattr")
        port = free_port()
        server = subprocess.Popen(["taskset", "-c", SERVER_CORE, str(FSTRESS), "nullserver",
                                   "--listen", f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            conn = ["--server", f"127.0.0.1:{port}", "--mount-port", str(port), "--export", "/null"]

            def null_run(label, rate):
                out = tmp / f"{label}.json"
                r = run_fstress([], [*conn, "--workload", str(null_wl), "--rate", str(rate),
                                     "--duration", dur, "--warmup", "1"], out, a.duration * 4 + 30)
                rows.append(row(label, r))
                print(f"  {label}: {r['achieved_rate']:.0f} ops/s", file=sys.stderr)
                return r

            # Capacity: climb a ladder of offered rates until fstress flags itself saturated
            # (achieved < 99% of offered or send-lag p99 > 2 ms); capacity = the highest clean rate.
            print("fstress vs nullserver: climbing to the generator's maximum rate ...", file=sys.stderr)
            cap = 0.0
            for offered in OFFERED_LADDER_OPS_S:
                r = null_run(f"nullserver NULL offered {offered // 1000}k", offered)
                if r["generator_saturated"]:
                    break
                cap = r["achieved_rate"]
            if cap == 0:
                raise RuntimeError("fstress saturated even at the lowest ladder rate")
            rows.append({**next(x for x in rows if x["achieved_ops_s"] == cap), "case": "nullserver NULL capacity"})
            for pct in (10, 50, 90):
                null_run(f"nullserver NULL {pct}% of capacity", round(cap * pct / 100))
        finally:
            server.terminate()
            server.wait(timeout=10)

        slot = start_slot("bench")
        try:
            for label, wl in (("Ganesha NULL", null_wl), ("Ganesha GETATTR", getattr_wl)):
                prefix = slot.exec_argv()
                fs = subprocess.run([*prefix, str(FSTRESS), "fileset", *slot.connect_args(),
                                     "--workload", str(wl), "--rate", str(a.ganesha_rate)],
                                    capture_output=True, text=True, timeout=120)
                if fs.returncode:
                    raise RuntimeError(fs.stderr)
                out = tmp / f"{label}.json"
                r = run_fstress(prefix, [*slot.connect_args(), "--workload", str(wl), "--rate",
                                         str(a.ganesha_rate), "--duration", dur, "--warmup", "1"],
                                out, a.duration * 4 + 60)
                rows.append(row(f"{label} fixed {a.ganesha_rate:.0f}/s", r))
                print(f"  {label}: {r['achieved_rate']:.0f} ops/s", file=sys.stderr)
        finally:
            stop_slot("bench")

    base = next(r for r in rows if r["case"] == "nullserver NULL capacity")["cpu_s_per_100k_ops"]
    hdr = f"{'case':40} {'offered/s':>10} {'achieved/s':>11} {'ach/off':>8} {'CPU s/100k':>10} {'x cap':>7} {'lag p99 us':>10} {'p99 ms':>8} sat"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['case']:40} {r['offered_ops_s']:10.0f} {r['achieved_ops_s']:11.0f} "
              f"{r['achieved_over_offered']:8.4f} {r['cpu_s_per_100k_ops']:10.3f} "
              f"{r['cpu_s_per_100k_ops'] / base:7.2f} {r['send_lag_p99_us']:10.1f} {r['p99_ms']:8.3f} "
              f"{'yes' if r['saturated'] else 'no'}")
    cap = next(r for r in rows if r["case"] == "nullserver NULL capacity")["achieved_ops_s"]
    half = next(r for r in rows if "50%" in r["case"])
    print(f"\ngoal: >= 150000 ops/s on one core vs nullserver: {cap:.0f} -> {'MET' if cap >= 150_000 else 'NOT MET'}")
    print(f"goal: send-lag p99 <= 200 us at 50% of capacity: {half['send_lag_p99_us']:.1f} us -> "
          f"{'MET' if half['send_lag_p99_us'] <= 200 else 'NOT MET'}")
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
