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
  rpcq     the receive queue of Ganesha's NFS connections (bytes the kernel holds that Ganesha has not
           read yet, read every QUEUE_GAP_S between lines: RecvQueue) as its integral over time "q_Bs"
           (byte-seconds), the payload bytes they received "rx_b" and the connections "n": the wait
           before Ganesha takes a request is Δq_Bs / Δrx_b by Little's law; and "min_rtt_us", the
           least of the connections' TCP minimum round trips (tcpi_min_rtt: the kernel's, from ACK
           timing, no server or client work in it): the network's own round trip
A counter that cannot be read is left out of the line, never guessed. Standard library only: this
file runs on any server host Ansible manages (python3).
"""
import argparse
import ctypes
import fcntl
import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

CGROOT = "/sys/fs/cgroup"
SYS_PIDFD_GETFD, SIOCINQ = 438, 0x541B                  # x86-64 and arm64
TCPI_BYTES_RECEIVED, TCPI_MIN_RTT = 128, 148            # offsets in linux/tcp.h struct tcp_info
NO_RTT = 0xFFFFFFFF                                     # tcpi_min_rtt before the first RTT sample
try:
    LIBC = ctypes.CDLL(None, use_errno=True)
except OSError:
    LIBC = None
QUEUE_GAP_S = 0.02          # the receive queue's sampling step between two lines
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


class Qdiscs:
    """The qdiscs of the server's network namespace: kind, rate and delay options, backlog, drops.
    A namespace with none but the default is asked again only every RECHECK_S (`tc` is a process,
    about 2.5 ms of CPU; the harness shapes a link before the trial, so the first line sees it)."""

    RECHECK_S = 10.0

    def __init__(self):
        self.idle_until = 0.0

    def read(self, pid):
        if self.idle_until > time.monotonic():
            return []
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
        if not out:
            self.idle_until = time.monotonic() + self.RECHECK_S
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


class NfsOps:
    """Ganesha's statistics of each NFS version (`nfs_ops`). A version without operations is asked
    again only every RECHECK_S: each `dbus-send` costs a process (about 1.7 ms of CPU)."""

    RECHECK_S = 10.0

    def __init__(self):
        self.idle_until = {}         # version -> the time to ask about it again

    def read(self, state):
        address = (read(os.path.join(state, "dbus.address")) or "").strip()
        if not address:
            return None
        out, now = {}, time.monotonic()
        for version, (method, width) in STATS.items():
            if self.idle_until.get(version, 0.0) > now:
                continue
            try:
                text = subprocess.run(["dbus-send", "--bus=" + address, "--print-reply", "--reply-timeout=1000",
                                       "--dest=org.ganesha.nfsd", "/org/ganesha/nfsd/ExportMgr",
                                       "org.ganesha.nfsd.exportstats." + method],
                                      capture_output=True, text=True, timeout=2).stdout
            except (OSError, subprocess.SubprocessError):
                return None
            ops = full_stats(dbus_values(text), width)
            if ops:
                out[version] = ops
            elif ops is not None:
                self.idle_until[version] = now + self.RECHECK_S
        return out or None


class RecvQueue:
    """Ganesha's NFS connections' receive queue over time, cumulative (the "rpcq" figures).

    Each poll takes a copy of each connection's descriptor from Ganesha (pidfd_getfd(2), Linux 5.6;
    closed again at once, so Ganesha's own close still ends the connection), reads its receive queue
    (ioctl SIOCINQ) and once a line its payload bytes received (TCP_INFO tcpi_bytes_received). The
    connections are found once a line in /proc/PID/net/tcp{,6} (established, on the NFS port; their
    inodes) and matched to Ganesha's descriptors by inode, scanning its fds only for a new one."""

    def __init__(self, port, pid=None):
        self.port, self.pid, self.q_bs, self.rx_b = port, pid, 0.0, 0
        self.fds = {}                # inode -> Ganesha's descriptor number
        self._received = {}          # inode -> its tcpi_bytes_received at the last line
        self._last = None            # (time, queued bytes) of the last poll
        self._sockstat, self.lost = None, True    # the namespace's TCP counts; a connection gone since _find
        self.pidfd, self.min_rtt_us = None, None
        if pid is not None:
            try:
                self.pidfd = os.pidfd_open(pid)
            except (OSError, AttributeError):
                pass

    def _copy(self, number, inode):
        """A copy of Ganesha's descriptor `number` when it is still the socket `inode`, else None."""
        fd = LIBC.syscall(SYS_PIDFD_GETFD, self.pidfd, number, 0) if LIBC is not None else -1
        if fd < 0:
            return None
        if os.fstat(fd).st_ino != inode:
            os.close(fd)
            return None
        return fd

    def poll(self, with_bytes=False):
        """Add the queue since the last poll (its value then × the time since: a left Riemann sum)."""
        queued, now, received, rtts = 0, time.time(), {}, []
        for inode, number in list(self.fds.items()):
            fd = self._copy(number, inode)
            if fd is None:
                del self.fds[inode]
                self.lost = True
                continue
            try:
                queued += struct.unpack("i", fcntl.ioctl(fd, SIOCINQ, b"\0" * 4))[0]
                if with_bytes:
                    s = socket.socket(fileno=fd)
                    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
                    s.detach()
                    received[inode] = struct.unpack_from("Q", info, TCPI_BYTES_RECEIVED)[0]
                    rtts.append(struct.unpack_from("I", info, TCPI_MIN_RTT)[0])
            except OSError:
                pass
            finally:
                os.close(fd)
        if self._last is not None:
            self.q_bs += self._last[1] * (now - self._last[0])
        self._last = (now, queued)
        for inode, n in received.items():
            self.rx_b += n - self._received.get(inode, 0) if n >= self._received.get(inode, 0) else n
        if with_bytes:
            self._received = received
            self.min_rtt_us = min((r for r in rtts if r != NO_RTT), default=None)

    def _find(self):
        """Ganesha's established connections on the NFS port (inodes) mapped to its descriptors: read
        again only when its namespace's TCP or TCP6 socket counts changed or one of them went (reading
        /proc/PID/net/tcp6 walks every socket of the host: about 1 ms)."""
        sockstat = [line.split()[:7] for name in ("sockstat", "sockstat6")     # Ganesha's are TCP6 sockets
                    for line in (read("/proc/%d/net/%s" % (self.pid, name)) or "").splitlines()
                    if line.startswith(("TCP:", "TCP6:"))]   # inuse (orphan, tw, alloc): not mem
        if sockstat == self._sockstat and not self.lost:
            return
        self._sockstat, self.lost = sockstat, False
        inodes = set()
        for name in ("tcp", "tcp6"):
            for row in (read("/proc/%d/net/%s" % (self.pid, name)) or "").splitlines()[1:]:
                f = row.split()     # sl local remote st tx_queue:rx_queue tr retrnsmt uid timeout inode (proc(5))
                if len(f) > 9 and f[3] == "01" and int(f[1].rsplit(":", 1)[1], 16) == self.port:
                    inodes.add(int(f[9]))
        new = inodes - set(self.fds)
        if new:
            for name in sorted(os.listdir("/proc/%d/fd" % self.pid), key=int):
                try:
                    link = os.readlink("/proc/%d/fd/%s" % (self.pid, name))
                except OSError:
                    continue
                if link.startswith("socket:[") and int(link[8:-1]) in new:
                    self.fds[int(link[8:-1])] = int(name)
                    new.discard(int(link[8:-1]))
                    if not new:
                        break

    def figures(self, pid):
        if pid != self.pid:          # a new Ganesha: its connections and counts start afresh
            if self.pidfd is not None:
                os.close(self.pidfd)
            self.__init__(self.port, pid)
        if self.pidfd is None or LIBC is None:
            return None
        self._find()
        self.poll(with_bytes=True)
        out = {"q_Bs": self.q_bs, "rx_b": self.rx_b, "n": len(self.fds)}
        if self.min_rtt_us is not None:
            out["min_rtt_us"] = self.min_rtt_us
        return out


def sample(state, readers):
    line = {"t": time.time()}
    try:
        pid = int((read(os.path.join(state, "ganesha.pid")) or "").strip())
    except ValueError:
        return line
    if not os.path.isdir("/proc/%d" % pid):
        return line
    cg = cgroups(pid)
    queue, stats, qdiscs = readers
    line.update(pid=pid, cpu=cpu(pid, cg), mem=mem(cg), blk=blk(cg), net=net(pid), qdisc=qdiscs.read(pid))
    ops = stats.read(state)
    if ops:
        line["nfs_ops"] = ops
    rpcq = queue.figures(pid)
    if rpcq:
        line["rpcq"] = rpcq
    return line


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--state", required=True, help="the server's state directory (ganesha.pid)")
    ap.add_argument("--interval-s", type=float, default=1.0)
    ap.add_argument("--max-s", type=float, default=3600.0)
    ap.add_argument("--nfs-port", type=int, default=2049, help="the NFS service's port (its receive queue)")
    a = ap.parse_args()
    if not (0.05 <= a.interval_s <= 60 and 0 < a.max_s <= 86400):
        print("wb-telemetry: --interval-s must be in [0.05, 60] and --max-s in (0, 86400]", file=sys.stderr)
        return 2
    end, readers = time.monotonic() + a.max_s, (RecvQueue(a.nfs_port), NfsOps(), Qdiscs())
    while time.monotonic() < end:
        line = sample(a.state, readers)
        sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
        sys.stdout.flush()
        if not wait_interval(a.interval_s, end, line.get("pid") if "rpcq" in line else None, readers[0]):
            return 0
    return 0


def wait_interval(interval_s, end, pid, queue):
    """Wait for the next whole interval of wall time, polling the receive queue every QUEUE_GAP_S;
    False when standard input ended (the controller is done)."""
    due = (time.time() // interval_s + 1) * interval_s
    while time.time() < due and time.monotonic() < end:
        step = min(QUEUE_GAP_S if pid else due - time.time(), due - time.time(), max(0.0, end - time.monotonic()))
        ready, _, _ = select.select([sys.stdin], [], [], max(0.0, step))
        if ready and not sys.stdin.buffer.read1(4096):
            return False
        if pid:
            queue.poll()
    return True


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
