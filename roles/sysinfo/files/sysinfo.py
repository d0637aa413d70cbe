#!/usr/bin/env python3
"""Describe this host as JSON on stdout: OS, kernel, CPU, memory, block devices, package versions.

Only values that do not drift while the host is idle (no uptime, free memory or mount table), so
that re-running the role reports no change. Usage: sysinfo.py [LOOP_DEVICE ...]
"""
import json
import os
import platform
import subprocess
import sys

PACKAGES = ["nfs-ganesha", "nfs-ganesha-vfs", "nfs-kernel-server", "rpcbind", "e2fsprogs",
            "xfsprogs", "btrfs-progs", "iproute2", "util-linux"]


def run(*argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def os_release():
    info = {}
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                if key in ("ID", "VERSION_ID", "PRETTY_NAME"):
                    info[key.lower()] = value.strip('"')
    except OSError:
        pass
    return info


def cpu():
    model, count = "", 0
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("processor"):
                count += 1
            elif line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
    return {"model": model, "count": count, "online": os.cpu_count()}


def mem_total_kb():
    with open("/proc/meminfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    return None


def disks(loops):
    out = run("lsblk", "-J", "-d", "-b", "-o", "NAME,TYPE,SIZE,ROTA,MODEL")
    try:
        devs = [d for d in json.loads(out)["blockdevices"] if d.get("type") == "disk"]
    except (ValueError, KeyError):
        devs = []
    if loops:
        out = run("lsblk", "-J", "-d", "-b", "-o", "NAME,TYPE,SIZE,FSTYPE,MAJ:MIN", *loops)
        try:
            devs += json.loads(out)["blockdevices"]
        except (ValueError, KeyError):
            pass
    return devs


def packages():
    versions = {}
    for name in PACKAGES:
        v = run("dpkg-query", "-W", "-f", "${Version}", name).strip()
        if v:
            versions[name] = v
    return versions


def main():
    uname = platform.uname()
    print(json.dumps({
        "hostname": uname.node,
        "os": os_release(),
        "kernel": {"release": uname.release, "version": uname.version, "machine": uname.machine},
        "cpu": cpu(),
        "memory_kb": mem_total_kb(),
        "disks": disks(sys.argv[1:]),
        "packages": packages(),
        "python": platform.python_version(),
    }, sort_keys=True))


if __name__ == "__main__":
    main()
