#!/usr/bin/env python3
"""Counters of one workbench NFS server, one JSON line a second, for the trial beside it.

    wb-telemetry.py --state DIR [--interval-s 1] [--max-s 3600]

Started by the controller (workbench.measure.telemetry) over the host's connection for the length
of one trial; it stops when its standard input ends or after --max-s, whichever comes first. Each
line holds *cumulative* counters read at wall time "t" (the controller takes the differences), all
from the server's own process and cgroups, so several servers on one host stay apart:
  cpu      Ganesha's CPU seconds (/proc/PID/stat utime+stime), the CPUs it may run on
           (Cpus_allowed_list) and its cpu cgroup's quota and throttled time (v1 cpu.cfs_quota_us and
           cpu.stat, v2 cpu.max and cpu.stat)
  mem      its memory cgroup's usage, limit, page cache and major faults (v1 memory.*, v2 memory.*)
  blk      per device its cgroup dispatched (v1 blkio.throttle.io_serviced, v2 io.stat), the
           cgroup's IOPS / bandwidth limits, and the device's own busy and queue time
           (/sys/dev/block/MAJ:MIN/stat: io_ticks, time_in_queue)
  net      the interfaces of Ganesha's network namespace (/proc/PID/net/dev) and their qdiscs'
           backlog, drops and overlimits (`tc -s -j qdisc` in that namespace)
  nfs_ops  Ganesha's own per-operation counts and mean latencies since it started ("v3": GetFULLV3Stats,
           "v4": GetFULLV4Stats, op -> [count, mean_ms]), over the server's own D-Bus (dbus.address,
           written by ganeshactl), from request start in a worker thread to its reply
A counter that cannot be read is left out of the line, never guessed. Standard library only: this
file runs on any server host Ansible manages (python3).
"""
import argparse
import json
import os
import select
import subprocess
import sys
import time

CGROOT = "/sys/fs/cgroup"
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def kv(path):
    """A 'key value' file (cpu.stat, memory.stat) as a dict of ints."""
    out = {}
    for line in (read(path) or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def cgroups(pid):
    """{controller: directory} of the process (v1 per controller; v2 under the key "")."""
    out = {}
    for line in (read("/proc/%d/cgroup" % pid) or "").splitlines():
        _, ctrls, path = line.split(":", 2)
        for c in ctrls.split(",") if ctrls else [""]:
            out[c] = os.path.join(CGROOT, c, path.lstrip("/")) if c else os.path.join(CGROOT, path.lstrip("/"))
    return out


def cpu_list_count(text):
    """Number of CPUs in a list like 0-1,3."""
    n = 0
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


def cpu(pid, cg):
    out = {}
    stat = read("/proc/%d/stat" % pid)
    if stat:
        fields = stat.rsplit(")", 1)[1].split()
        out["cpu_s"] = (int(fields[11]) + int(fields[12])) * TICK_S
    for line in (read("/proc/%d/status" % pid) or "").splitlines():
        if line.startswith("Cpus_allowed_list:"):
            out["cpus"] = cpu_list_count(line.split(":", 1)[1])
    v1 = cg.get("cpu")
    if v1 and os.path.isdir(v1):
        quota, period = read(v1 + "/cpu.cfs_quota_us"), read(v1 + "/cpu.cfs_period_us")
        if quota and period and int(quota) > 0:
            out["quota_cores"] = int(quota) / int(period)
        st = kv(v1 + "/cpu.stat")
        if "throttled_time" in st:
            out["throttled_s"], out["nr_throttled"] = st["throttled_time"] / 1e9, st.get("nr_throttled", 0)
    elif "" in cg and os.path.isfile(cg[""] + "/cpu.max"):
        quota, period = (read(cg[""] + "/cpu.max") or "max 100000").split()
        if quota != "max":
            out["quota_cores"] = int(quota) / int(period)
        st = kv(cg[""] + "/cpu.stat")
        if "throttled_usec" in st:
            out["throttled_s"], out["nr_throttled"] = st["throttled_usec"] / 1e6, st.get("nr_throttled", 0)
    return out


def mem(cg):
    d = cg.get("memory")
    if d and os.path.isfile(d + "/memory.usage_in_bytes"):
        st, limit = kv(d + "/memory.stat"), int(read(d + "/memory.limit_in_bytes") or 0)
        return {"usage": int(read(d + "/memory.usage_in_bytes") or 0), "limit": limit if limit < 2 ** 60 else None,
                "cache": st.get("total_cache", st.get("cache")), "majfault": st.get("total_pgmajfault", st.get("pgmajfault")),
                "failcnt": int(read(d + "/memory.failcnt") or 0)}
    d = cg.get("")
    if d and os.path.isfile(d + "/memory.current"):
        st, limit = kv(d + "/memory.stat"), (read(d + "/memory.max") or "max").strip()
        return {"usage": int(read(d + "/memory.current") or 0), "limit": None if limit == "max" else int(limit),
                "cache": st.get("file"), "majfault": st.get("pgmajfault"),
                "failcnt": kv(d + "/memory.events").get("max", 0)}
    return {}


def _per_dev(path, value_at=1):
    """{MAJ:MIN: value} of a v1 throttle limit file ("MAJ:MIN value" lines)."""
    out = {}
    for line in (read(path) or "").splitlines():
        p = line.split()
        if len(p) == 2 and ":" in p[0]:
            out[p[0]] = int(p[value_at])
    return out


def blk_v1(d):
    devs = {}
    for line in (read(d + "/blkio.throttle.io_serviced") or "").splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in ("Read", "Write"):
            devs.setdefault(p[0], {})["r" if p[1] == "Read" else "w"] = int(p[2])
    for line in (read(d + "/blkio.throttle.io_service_bytes") or "").splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in ("Read", "Write") and p[0] in devs:
            devs[p[0]]["rb" if p[1] == "Read" else "wb"] = int(p[2])
    for key, name in (("r_iops_limit", "read_iops_device"), ("w_iops_limit", "write_iops_device"),
                      ("r_bps_limit", "read_bps_device"), ("w_bps_limit", "write_bps_device")):
        for mm, v in _per_dev(d + "/blkio.throttle." + name).items():
            devs.setdefault(mm, {})[key] = v
    return devs


def blk_v2(d):
    devs = {}
    names = {"rios": "r", "wios": "w", "rbytes": "rb", "wbytes": "wb"}
    for line in (read(d + "/io.stat") or "").splitlines():
        p = line.split()
        devs[p[0]] = {names[k]: int(v) for k, _, v in (x.partition("=") for x in p[1:]) if k in names}
    limits = {"riops": "r_iops_limit", "wiops": "w_iops_limit", "rbps": "r_bps_limit", "wbps": "w_bps_limit"}
    for line in (read(d + "/io.max") or "").splitlines():
        p = line.split()
        for k, _, v in (x.partition("=") for x in p[1:]):
            if k in limits and v != "max":
                devs.setdefault(p[0], {})[limits[k]] = int(v)
    return devs


def blk(cg):
    if cg.get("blkio") and os.path.isdir(cg["blkio"]):
        devs = blk_v1(cg["blkio"])
    elif cg.get("") and os.path.isfile(cg[""] + "/io.stat"):
        devs = blk_v2(cg[""])
    else:
        return {}
    for mm, d in devs.items():       # the device's own counters (Documentation/block/stat.rst)
        f = (read("/sys/dev/block/%s/stat" % mm) or "").split()
        if len(f) >= 11:
            d.update(inflight=int(f[8]), busy_ms=int(f[9]), queue_ms=int(f[10]))
    return devs


def net(pid):
    out = {}
    for line in (read("/proc/%d/net/dev" % pid) or "").splitlines()[2:]:
        name, _, rest = line.partition(":")
        v = rest.split()
        if name.strip() != "lo" and len(v) >= 16:
            out[name.strip()] = {"rxb": int(v[0]), "rxp": int(v[1]), "rxdrop": int(v[3]),
                                 "txb": int(v[8]), "txp": int(v[9]), "txdrop": int(v[11])}
    return out


def qdiscs(pid):
    """The qdiscs of the server's network namespace: kind, rate and delay options, backlog, drops."""
    try:
        text = subprocess.run(["nsenter", "--net=/proc/%d/ns/net" % pid, "tc", "-s", "-j", "qdisc", "show"],
                              capture_output=True, text=True, timeout=2).stdout
        rows = json.loads(text or "[]")
    except (OSError, ValueError, subprocess.SubprocessError):
        return []
    out = []
    for q in rows:
        if q.get("dev") == "lo" or q.get("kind") in ("noqueue", None):
            continue
        opts = q.get("options") or {}
        delay = opts.get("delay")
        out.append({"dev": q.get("dev"), "kind": q["kind"], "rate_Bps": opts.get("rate"),
                    "delay_s": delay.get("delay") if isinstance(delay, dict) else None,
                    "backlog_b": q.get("backlog", 0), "drops": q.get("drops", 0),
                    "overlimits": q.get("overlimits", 0)})
    return out


STATS = {"v3": ("GetFULLV3Stats", 7), "v4": ("GetFULLV4Stats", 6)}   # method, fields per operation


def dbus_values(text):
    """The typed values of a `dbus-send --print-reply` reply, in order (containers flattened)."""
    out = []
    for line in text.splitlines()[1:]:
        kind, _, value = line.strip().partition(" ")
        if kind in ("uint64", "uint32", "int64", "int32"):
            out.append(int(value))
        elif kind == "double":
            out.append(float(value))
        elif kind == "string":
            out.append(value.strip('"'))
        elif kind == "boolean":
            out.append(value == "true")
    return out


def full_stats(values, width):
    """{op: [count, mean_ms]} of a GetFULLV3Stats / GetFULLV4Stats reply: status, message, timestamp
    (2 values), one struct per operation (name, count, errors, [dups,] mean, min, max ms), message."""
    if len(values) < 5 or values[0] is not True:
        return None
    body = values[4:-1]
    ops = {}
    for i in range(0, len(body) - width + 1, width):
        name, count, mean_ms = body[i], body[i + 1], body[i + width - 3]
        if isinstance(name, str) and name != "None" and isinstance(count, int) and count > 0:
            ops[name] = [count, mean_ms]
    return ops


def nfs_ops(state):
    address = (read(os.path.join(state, "dbus.address")) or "").strip()
    if not address:
        return None
    out = {}
    for version, (method, width) in STATS.items():
        try:
            text = subprocess.run(["dbus-send", "--bus=" + address, "--print-reply", "--reply-timeout=1000",
                                   "--dest=org.ganesha.nfsd", "/org/ganesha/nfsd/ExportMgr",
                                   "org.ganesha.nfsd.exportstats." + method],
                                  capture_output=True, text=True, timeout=2).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        ops = full_stats(dbus_values(text), width)
        if ops is not None:
            out[version] = ops
    return out or None


def sample(state):
    line = {"t": time.time()}
    try:
        pid = int((read(os.path.join(state, "ganesha.pid")) or "").strip())
    except ValueError:
        return line
    if not os.path.isdir("/proc/%d" % pid):
        return line
    cg = cgroups(pid)
    line.update(pid=pid, cpu=cpu(pid, cg), mem=mem(cg), blk=blk(cg), net=net(pid), qdisc=qdiscs(pid))
    ops = nfs_ops(state)
    if ops:
        line["nfs_ops"] = ops
    return line


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--state", required=True, help="the server's state directory (ganesha.pid)")
    ap.add_argument("--interval-s", type=float, default=1.0)
    ap.add_argument("--max-s", type=float, default=3600.0)
    a = ap.parse_args()
    if not (0.05 <= a.interval_s <= 60 and 0 < a.max_s <= 86400):
        print("wb-telemetry: --interval-s must be in [0.05, 60] and --max-s in (0, 86400]", file=sys.stderr)
        return 2
    end = time.monotonic() + a.max_s
    while time.monotonic() < end:
        sys.stdout.write(json.dumps(sample(a.state), separators=(",", ":")) + "\n")
        sys.stdout.flush()
        # the next whole interval of wall time; standard input's end (the controller is done) stops it
        wait = a.interval_s - (time.time() % a.interval_s)
        ready, _, _ = select.select([sys.stdin], [], [], min(wait, max(0.0, end - time.monotonic())))
        if ready and not sys.stdin.buffer.read1(4096):
            return 0
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
