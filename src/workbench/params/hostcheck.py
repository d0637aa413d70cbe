"""What a plan meets beyond its own slot, checked before any host changes (part of
``validation.validate_plan``): the inventory's slots do not overlap, an external server is not
another slot's SUT, and a SUT that is this machine (``ansible_connection: local``) can hold what the
plan asks of it — the backend it runs, its disk images on free disk, its tmpfs in free memory, read
from the host itself (``shutil.disk_usage``, ``/proc/meminfo``).

Every failure is a ParamError of one line naming the field the user set.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from workbench.config.factors import BY_NAME, TMPFS_DEFAULT_MB
from workbench.measure.inventory import (
    InventoryError,
    host_vars,
    inventory_groups,
    inventory_slots,
    slot_sut_hosts,
)
from workbench.params.plan import ParamError, RatingPlan

MiB = 1 << 20
MEMINFO = Path("/proc/meminfo")
SUT_STATE_ROOT = "/tmp/workbench"  # the nfs_server role's nfs_server_state_root (defaults/main.yml)
HOST_SHARE = 0.5  # of free disk / available memory the servers of all the inventory's slots on
# this machine may take together (each its part: sparse images of two slots each allowed half
# would reach the whole); the generators and Ansible run on the same box
ADDRESS_VARS = ("wb_addr", "wb_sut_addr", "wb_peer_addr")  # IP addresses the netns role configures
NETNS_VARS = ("wb_netns", "wb_ssh_netns")  # a host's own network namespace


def mem_available_bytes() -> int:
    """MemAvailable of /proc/meminfo (the kernel's estimate of memory free for new work)."""
    for line in MEMINFO.read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise OSError(f"{MEMINFO} has no MemAvailable line")


def free_disk_bytes(path: str | Path) -> int:
    """Free bytes (for this user) of the file system that holds `path` (its nearest existing
    parent)."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    return shutil.disk_usage(p).free


def _plain(v: Any) -> bool:
    """A non-empty value Ansible will not template (inventory templates are the operator's)."""
    return v not in (None, "") and not (isinstance(v, str) and "{{" in v)


def check_slot_overlaps(inv: Path) -> None:
    """No host in two slots, no network namespace, address or machine (ansible_host and port) of two
    hosts, every address an IP."""
    groups, slots = inventory_groups(inv), inventory_slots(inv)
    slot_of: dict[str, str] = {}
    for slot in slots:
        for host in groups[slot]:
            if host in slot_of:
                role = (
                    "load host"
                    if host in groups.get("loadgen", [])
                    else "SUT"
                    if host in groups.get("sut", [])
                    else "host"
                )
                raise ParamError(
                    f"inventory: {role} {host} is in slots {slot_of[host]} and {slot} of {inv}; a "
                    "host serves one slot (two ratings would load it at once)"
                )
            slot_of[host] = slot
    owner: dict[tuple[str, str], tuple[str, str]] = {}  # (kind, value) → (host, its variable)
    for host in slot_of:
        hv = host_vars(inv, host)
        for name in ADDRESS_VARS:
            if _plain(hv.get(name)):
                try:
                    ipaddress.ip_address(str(hv[name]).strip())
                except ValueError:
                    raise ParamError(
                        f"inventory: host {host} of {inv}: {name} {hv[name]!r} is not an IP "
                        "address (e.g. 10.251.1.1)"
                    ) from None
        if hv.get("ansible_connection", "ssh") != "local" and _plain(hv.get("ansible_host")):
            port = hv.get("ansible_port", 22)  # one sshd under two names: one machine
            hv = {**hv, "ansible_host": f"{str(hv['ansible_host']).strip()}:{port}"}
        for kind, names in (
            ("network namespace", NETNS_VARS),
            ("address", ("wb_addr",)),
            ("machine", ("ansible_host",)),
        ):
            for name in names:
                if _plain(hv.get(name)):
                    key = (kind, str(hv[name]).strip())
                    if key in owner and owner[key][0] != host:
                        other, other_name = owner[key]
                        raise ParamError(
                            f"inventory: {name} {key[1]} of host {host} (slot {slot_of[host]}) is "
                            f"also {other_name} of host {other} (slot {slot_of[other]}) in {inv}: "
                            f"two hosts share one {kind}; each host its own"
                        )
                    owner[key] = (host, name)


def check_external_target(plan: RatingPlan, inv: Path, slots: Iterable[str]) -> None:
    """An external server's address is not the SUT of another slot (that slot's rating owns it)."""
    if not plan.external:
        return
    address, own = str(plan.external.get("address", "")), set(slots)
    for slot in inventory_slots(inv):
        if slot in own and len(own) == 1:
            continue
        for host in slot_sut_hosts(inv, slot):
            hv = host_vars(inv, host)
            if address in {str(hv.get(k, "")) for k in ("wb_addr", "ansible_host")} | {host}:
                raise ParamError(
                    f"server_address: {address} is the SUT {host} of slot {slot} in {inv}; an "
                    "external server is one no slot provisions (that slot's ratings would share it)"
                )


def local_suts(inv: Path, slots: Iterable[str]) -> list[tuple[str, str, dict[str, Any]]]:
    """(slot, host, vars) of the SUT hosts of `slots` that are this machine (ansible_connection
    local)."""
    out = []
    for slot in slots:
        for host in slot_sut_hosts(inv, slot):
            hv = host_vars(inv, host)
            if hv.get("ansible_connection") == "local":
                out.append((slot, host, hv))
    return out


def check_local_server(plan: RatingPlan, suts: list[tuple[str, str, dict[str, Any]]]) -> None:
    """The server asked of a SUT that is this machine: its backend runs here, its disk images fit
    the free disk and its tmpfs the available memory (HOST_SHARE of either)."""
    if plan.external or not suts:
        return
    f: Mapping[str, Any] = {
        n: plan.factors.get(n, BY_NAME[n].default)
        for n in ("backend", "fs", "disks", "disk_size_mb", "memory_mb")
    }
    slot, host, hv = suts[0]
    where = f"the SUT {host} of slot {slot} is this machine (ansible_connection local)"
    share = HOST_SHARE / max(
        1, len(local_suts(Path(plan.inventory), inventory_slots(Path(plan.inventory))))
    )
    share_text = f"its {share:.0%} ({HOST_SHARE:.0%} over the inventory's slots on this machine)"
    if f["backend"] == "knfsd":
        raise ParamError(f"backend: knfsd runs on real hosts only; {where}, which runs ganesha")
    if f["fs"] == "tmpfs":
        size_mb = f["memory_mb"] or TMPFS_DEFAULT_MB
        room = share * mem_available_bytes()
        if size_mb * MiB > room:
            raise ParamError(
                f"memory_mb: a tmpfs export of {size_mb} MiB does not fit this machine: {where} "
                f"and has {room / share / MiB:.0f} MiB available (MemAvailable), a slot may take "
                f"{share_text}; lower memory_mb or use a disk file system"
            )
        return
    root = hv.get("nfs_server_state_root", SUT_STATE_ROOT)
    root = root if isinstance(root, str) and "{{" not in root else SUT_STATE_ROOT
    need, free = f["disks"] * f["disk_size_mb"] * MiB, free_disk_bytes(root)
    if need > share * free:
        raise ParamError(
            f"disk_size_mb: {f['disks']} disk image(s) of {f['disk_size_mb']} MiB "
            f"({need / 2**30:.0f} GiB) do not fit this machine: {where} and {root} has "
            f"{free / 2**30:.0f} GiB free, a slot may take {share_text}; lower disks or "
            f"disk_size_mb"
        )


def check_pack_hosts(plan: RatingPlan, inv: Path) -> None:
    """A factor pack's `hosts` name hosts or groups of the inventory (each plain word of the
    pattern; wildcards are Ansible's to match): a pattern the inventory lacks would apply its levels
    to no host."""
    hosts = str((plan.factor_pack or {}).get("hosts") or "")
    if not hosts:
        return
    groups = inventory_groups(inv)
    known = set(groups) | {h for members in groups.values() for h in members} | {"localhost"}
    words = [w.strip("&!") for w in re.split(r"[:,]", hosts)]
    missing = [w for w in words if w and "*" not in w and w not in known]
    if missing:
        raise ParamError(
            f"factor_pack: hosts {hosts!r} of {plan.factor_pack['path']} names "
            f"{', '.join(missing)}, not in the inventory {inv}: nothing would apply its levels"
        )


def check_hosts(plan: RatingPlan, slots: Iterable[str]) -> None:
    """The whole check for the slots a plan may take (InventoryError → ParamError)."""
    inv, slots = Path(plan.inventory), tuple(slots)
    try:
        check_slot_overlaps(inv)
        check_external_target(plan, inv, slots)
        check_pack_hosts(plan, inv)
        check_local_server(plan, local_suts(inv, slots))
    except InventoryError as e:
        raise ParamError(str(e)) from None
    except OSError as e:
        raise ParamError(
            f"inventory: cannot read this machine's free disk or memory: {e}"
        ) from None
