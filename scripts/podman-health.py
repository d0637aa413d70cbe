#!/usr/bin/env python3
"""Run the healthchecks of a Compose project's Podman containers (scripts/test-compose.sh).

Podman schedules healthchecks with systemd timers; without systemd (this machine) they never run,
so every container stays "starting" and `depends_on: service_healthy` waits forever. This loop
plays the timer: each running container with a healthcheck gets `podman healthcheck run` every
`Interval` (first after 3 s), until the deadline or until the stop file appears. Prints status
changes only. Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def podman(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--project", required=True)
    ap.add_argument("--max-s", type=float, required=True, help="stop after this many seconds")
    ap.add_argument("--stop-file", required=True)
    a = ap.parse_args()
    end = time.monotonic() + a.max_s
    checks: dict[str, tuple[str, float, float]] = {}   # id -> (name, interval s, timeout s)
    due: dict[str, float] = {}
    status: dict[str, str] = {}
    while time.monotonic() < end and not os.path.exists(a.stop_file):
        try:
            ps = podman("ps", "--filter", f"label=com.docker.compose.project={a.project}", "--format", "json")
            running = json.loads(ps.stdout or "[]") if ps.returncode == 0 else []
        except (subprocess.TimeoutExpired, json.JSONDecodeError):
            running = []
        now = time.monotonic()
        for c in running:
            cid = c["Id"]
            if cid not in checks:
                try:
                    info = json.loads(podman("inspect", cid).stdout)[0]
                except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
                    continue
                hc = (info.get("Config") or {}).get("Healthcheck") or {}
                if not hc.get("Test") or hc["Test"][0] == "NONE":
                    checks[cid] = (c["Names"][0], 0, 0)
                    continue
                checks[cid] = (c["Names"][0], (hc.get("Interval") or 30e9) / 1e9, (hc.get("Timeout") or 30e9) / 1e9)
                due[cid] = now + 3
            name, interval, tmo = checks[cid]
            if not interval or now < due.get(cid, 0):
                continue
            due[cid] = now + interval
            try:
                podman("healthcheck", "run", cid, timeout=tmo + 15)
                st = json.loads(podman("inspect", "--format", "{{json .State.Health.Status}}", cid).stdout)
            except (subprocess.TimeoutExpired, json.JSONDecodeError):
                st = "check-timed-out"
            if status.get(cid) != st:
                status[cid] = st
                print(f"[{time.strftime('%H:%M:%S', time.gmtime())}] health: {name} {st}", flush=True)
        time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
