#!/usr/bin/env python3
"""Does the bottleneck verdict name the limit we built? (issue 50)

    .venv/bin/python bench/bottleneck.py [--only NAME[,NAME...]] [--profile quick] [--slot slot1] [--out DIR]

Rates each construction once (`workbench rate` in this process, everything else default) and prints
the verdict beside the limit that was built, then whether each was named. Constructions:

  read_iops   the default: one loop disk throttled to 400 read IOPS          → disk read IOPS
  cpu         ample IOPS (unthrottled), no memory limit, Ganesha in a cpu
              cgroup capped at CPU_CAP of a core (cfs quota)                 → server CPU
  network     ample IOPS, a token bucket (tc tbf, LINK_RATE) on the server's
              side of the slot's link                                        → network
  memory      ample IOPS (reads and writes unthrottled), Ganesha's memory
              cgroup at 128 MiB, db_tp's few large files (537 MB)            → memory
  generator   the fstress agent without real-time priority, in a cpu cgroup
              capped at GEN_CAP of a core                                    → generator
  external    an operator's Ganesha (scripts/ganesha-slot.sh) rated as an
              external filer: no server metrics                             → unknown

The caps are applied before every trial (the warm-up included) and kept applied by a watcher thread
(every ENFORCE_S: a server or agent restarted mid-trial is capped at once), and removed after the
rating. Exit 0 when
every construction run was named as built. Root (slots, cgroups, tc).
"""
from __future__ import annotations

import os
import sys

# This file's name is also pandas' optional `bottleneck` package: bench/ off the import path first.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != os.path.dirname(os.path.abspath(__file__))]

import argparse
import json
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from workbench import cli
from workbench.measure.ansible import AnsibleHarness

REPO = Path(__file__).resolve().parent.parent
STATE = Path("/tmp/workbench/hosts")
CPU_ROOT = Path("/sys/fs/cgroup/cpu")
CPU_CAP = 0.1             # of one core: Ganesha's quota in the cpu construction
GEN_CAP = 0.05            # of one core: the generator's quota in the generator construction
ENFORCE_S = 0.2           # the watcher re-applies a construction this often
LINK_RATE = "40mbit"      # tbf on the server's side of the link (replies: READ data)
FILER = ["--inventory", str(REPO / "inventory" / "external" / "hosts.yml"), "--slot", "filer1",
         "--server-address", "10.251.11.1", "--server-export", "/export",
         "--server-description", "operator's Ganesha (scripts/ganesha-slot.sh), bench/bottleneck.py"]


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _cap(group: str, cores: float, pid: int | None) -> None:
    """`pid` (its whole thread group) into cpu cgroup wb-bench/<group> with a quota of `cores`."""
    if pid is None or not Path(f"/proc/{pid}").is_dir():
        return
    d = CPU_ROOT / "wb-bench" / group
    d.mkdir(parents=True, exist_ok=True)
    (d / "cpu.cfs_period_us").write_text("100000")
    (d / "cpu.cfs_quota_us").write_text(str(int(cores * 100000)))
    if str(pid) not in (d / "cgroup.procs").read_text().split():
        (d / "cgroup.procs").write_text(str(pid))


def _uncap(group: str) -> None:
    d = CPU_ROOT / "wb-bench" / group
    if d.is_dir():
        for pid in (d / "cgroup.procs").read_text().split():
            try:
                (CPU_ROOT / "cgroup.procs").write_text(pid)
            except OSError:
                pass                          # gone already
        d.rmdir()


def _link(ns: str) -> str:
    """The server's side of the slot link: the namespace's one interface other than lo."""
    out = subprocess.run(["ip", "-n", ns, "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    names = [ln.split(":")[1].strip().split("@")[0] for ln in out.splitlines()]
    return next(n for n in names if n != "lo")


def _shape(ns: str) -> None:
    dev = _link(ns)
    shown = subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "show", "dev", dev], capture_output=True,
                           text=True, check=True).stdout
    if "tbf" in shown:
        return
    subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
                    "rate", LINK_RATE, "burst", "64kb", "latency", "50ms"], check=True)


@dataclass
class Construction:
    expect: str
    flags: list[str] = field(default_factory=list)
    before_trial: Callable[[AnsibleHarness], None] | None = None
    extravars: dict[str, Any] = field(default_factory=dict)
    cleanup: Callable[[], None] | None = None


def _slot_no(h: AnsibleHarness) -> str:
    return h.slot.removeprefix("slot")


def _cpu(h: AnsibleHarness) -> None:
    _cap("server", CPU_CAP, _pid(STATE / f"sut{_slot_no(h)}" / "ganesha.pid"))


def _network(h: AnsibleHarness) -> None:
    _shape(f"wb-sut{_slot_no(h)}")


def _generator(h: AnsibleHarness) -> None:
    for spec in sorted(h.agent_spec_dir.glob("*.json")):
        _cap("generator", GEN_CAP, _pid(Path(json.loads(spec.read_text())["pid_file"])))


CONSTRUCTIONS = {
    "read_iops": Construction("disk read IOPS"),
    # memory unlimited: capped at 0.1 core and overloaded, Ganesha's queued requests filled its 128 MiB
    # cgroup and the kernel killed it (the OOM killer, 2026-11-28); here the CPU alone is the limit
    "cpu": Construction("server CPU", ["--read-iops", "0", "--memory-mb", "0"], _cpu, cleanup=lambda: _uncap("server")),
    "network": Construction("network", ["--read-iops", "0"], _network),
    # Ganesha's own memory and the kernel's inodes grow with the number of files, in its cgroup: with
    # web_server's small files a file set three times the default's OOM-killed it at 96 and 128 MiB
    # (2026-11-28). db_tp's few large files: 537 MB of data, four times the 128 MiB limit.
    "memory": Construction("memory", ["--read-iops", "0", "--write-iops", "0", "--memory-mb", "128",
                                      "--workload", "db_tp", "--fileset-rate", "2000"]),
    "generator": Construction("generator", [], _generator, {"fstress_rt_priority": 0},
                              cleanup=lambda: _uncap("generator")),
    "external": Construction("unknown", FILER),
}


def enforce(c: Construction, ctx: dict[str, Any], stop: threading.Event) -> None:
    """Keep the construction applied while the rating runs (every ENFORCE_S): a server or agent restarted
    within a trial (after an invalid one, the playbook path starts the server again) is capped at once."""
    while not stop.wait(ENFORCE_S):
        h = ctx.get("harness")
        if c.before_trial is None or h is None or h.external is not None:
            continue
        try:
            c.before_trial(h)
        except (OSError, ValueError, StopIteration, subprocess.CalledProcessError):
            pass                 # between a process's death and its restart, or a namespace torn down


def harness_for(c: Construction, ctx: dict[str, Any]) -> type[AnsibleHarness]:
    class Constructed(AnsibleHarness):
        def __init__(self, *a: Any, **kw: Any) -> None:
            kw["extravars"] = {**(kw.get("extravars") or {}), **c.extravars}
            super().__init__(*a, **kw)
            ctx["harness"] = self

        def measure(self, *a: Any, **kw: Any):
            if c.before_trial is not None and self.external is None:
                c.before_trial(self)
            return super().measure(*a, **kw)
    return Constructed


def rate(name: str, c: Construction, profile: str, slot: str, out: Path) -> dict[str, Any]:
    results = out / name
    argv = ["rate", "--profile", profile, "--results", str(results), "--quiet", *c.flags]
    if "--slot" not in c.flags:
        argv += ["--slot", slot]
    if name == "external":
        subprocess.run([str(REPO / "scripts" / "ganesha-slot.sh"), "up", "filer"], check=True, capture_output=True)
    t0 = time.monotonic()
    ctx: dict[str, Any] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=enforce, args=(c, ctx, stop), daemon=True)
    watcher.start()
    try:
        rc = cli.cmd_rate(cli._parser().parse_args(argv), harness_factory=harness_for(c, ctx))
    finally:
        stop.set()
        watcher.join(timeout=10)
        if c.cleanup is not None:
            c.cleanup()
        if name == "external":
            subprocess.run([str(REPO / "scripts" / "ganesha-slot.sh"), "down", "filer", "--purge"], check=False)
    res = json.loads(next(results.glob("ratings/*/result.json")).read_text())
    return {"name": name, "rc": rc, "wall_s": time.monotonic() - t0, "expect": c.expect, **res}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(CONSTRUCTIONS), help="constructions, comma-separated")
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--slot", default="slot1")
    ap.add_argument("--out", type=Path, default=Path(f"/tmp/wb-bottleneck-{time.strftime('%Y%m%dT%H%M%S')}"))
    a = ap.parse_args()
    names = [n.strip() for n in a.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONSTRUCTIONS]
    if unknown:
        print(f"bottleneck.py: --only: no construction {', '.join(unknown)} (have {', '.join(CONSTRUCTIONS)})",
              file=sys.stderr)
        return 2
    rows = []
    for name in names:
        try:
            r = rate(name, CONSTRUCTIONS[name], a.profile, a.slot, a.out)
        except Exception as e:          # one construction's failure is its row, the others still run
            r = {"expect": CONSTRUCTIONS[name].expect, "wall_s": 0.0,
                 "bottleneck": {"resource": "(no rating)", "line": f"{type(e).__name__}: {e}"[:300]}}
        v = r.get("bottleneck") or {}
        rows.append((name, r["expect"], v.get("resource"), r.get("peak_rate"), r["wall_s"], v.get("line", "")))
        print(f"{name:<10} built {r['expect']:<15} named {v.get('resource')!s:<15} λ* {r.get('peak_rate') or 0:8.1f} "
              f"ops/s  {r['wall_s']:4.0f} s\n           {v.get('line', '')}", flush=True)
    hits = sum(built == named for _, built, named, *_ in rows)
    print(f"\n{hits} of {len(rows)} constructions named as built (results: {a.out})")
    return 0 if hits == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
