"""What an Ansible YAML inventory says about slots, read without Ansible: its groups, each with its
hosts (through child groups), in the file's order; its slots; a host's variables — enough to check a
rating's slot, its load hosts and their settings before any host is touched.

A slot is a group that lists its hosts directly, has no child groups, holds at least one member of
`loadgen`, and is not `loadgen`, `sut` or `background` (tenant B's load hosts, config.tenants)
itself (`all` and `ungrouped` never are)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from workbench.config.tenants import BACKGROUND_GROUP
from workbench.config.untrusted import load_yaml

MAX_INVENTORY_BYTES = 1 << 20
NOT_SLOTS = ("all", "ungrouped", "loadgen", "sut", BACKGROUND_GROUP)  # background: tenant B's hosts


class InventoryError(ValueError):
    """The inventory cannot be read, or it lacks what the rating needs (the message says what)."""


@dataclass
class Group:
    # listed directly, with their vars
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)
    depth: int = 0  # all = 0, its children 1, ...


def read_inventory(path: Path) -> dict[str, Any]:
    """The inventory's YAML: a regular file of at most 1 MiB (never a device or a FIFO) holding a
    mapping of groups."""
    p = Path(path)
    try:
        st = p.stat()
        if not stat.S_ISREG(st.st_mode):
            raise InventoryError(
                f"inventory: {path} is not a regular file; want a YAML inventory file"
            )
        if st.st_size > MAX_INVENTORY_BYTES:
            raise InventoryError(
                f"inventory: {path} is {st.st_size} bytes; at most {MAX_INVENTORY_BYTES}"
            )
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            text = fh.read(MAX_INVENTORY_BYTES + 1)
        data = load_yaml(text, MAX_INVENTORY_BYTES) or {}
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as e:
        raise InventoryError(f"inventory: cannot read {path}: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict):
        raise InventoryError(
            f"inventory: {path} holds a {type(data).__name__}; want a YAML mapping of groups"
        )
    return data


def _mapping(path: Path, where: str, node: Any) -> dict[str, Any]:
    if node is None:
        return {}
    if not isinstance(node, dict):
        raise InventoryError(
            f"inventory: {path}: {where} is a {type(node).__name__}; want a mapping"
        )
    return node


def inventory_structure(path: Path) -> dict[str, Group]:
    """group → Group, in the order the file lists them (a group listed twice is merged)."""
    data = read_inventory(path)
    groups: dict[str, Group] = {}

    def walk(name: str, node: Any, depth: int, stack: tuple[str, ...]) -> None:
        if name in stack or depth > 64:
            raise InventoryError(
                f"inventory: {path}: group {name} is its own descendant; want a tree of groups"
            )
        node = _mapping(path, f"group {name}", node)
        g = groups.setdefault(str(name), Group(depth=depth))
        g.depth = max(g.depth, depth)
        for host, hv in _mapping(path, f"group {name}: hosts", node.get("hosts")).items():
            g.hosts.setdefault(str(host), {}).update(_mapping(path, f"host {host}", hv))
        g.vars.update(_mapping(path, f"group {name}: vars", node.get("vars")))
        for child, sub in _mapping(path, f"group {name}: children", node.get("children")).items():
            if str(child) not in g.children:
                g.children.append(str(child))
            walk(str(child), sub, depth + 1, stack + (name,))

    for name, node in data.items():
        walk(str(name), node, 0 if name == "all" else 1, ())
    return groups


def _members(groups: dict[str, Group], name: str) -> list[str]:
    g = groups[name]
    hosts = list(g.hosts)
    for child in g.children:
        hosts += [h for h in _members(groups, child) if h not in hosts]
    return hosts


def inventory_groups(path: Path) -> dict[str, list[str]]:
    """group → its hosts (own and of child groups), in the order the file lists them."""
    groups = inventory_structure(path)
    return {name: _members(groups, name) for name in groups}


def inventory_slots(path: Path) -> list[str]:
    """The slots of the inventory, in file order (see the module's doc)."""
    groups = inventory_structure(path)
    loadgen = set(_members(groups, "loadgen")) if "loadgen" in groups else set()
    return [
        name
        for name, g in groups.items()
        if name not in NOT_SLOTS and g.hosts and not g.children and loadgen & set(g.hosts)
    ]


def host_vars(path: Path, host: str) -> dict[str, Any]:
    """The inventory's variables of `host` as Ansible sees them: `all`'s, then those of every group
    holding it (shallow before deep, then by name), then the host's own."""
    groups = inventory_structure(path)
    holding = [(g.depth, name) for name, g in groups.items() if host in _members(groups, name)]
    out: dict[str, Any] = {}
    for _, name in sorted(holding):
        out.update(groups[name].vars)
    for g in groups.values():
        out.update(g.hosts.get(host, {}))
    return out


def slot_load_hosts(path: Path, slot: str, wanted: int = 0, server: bool = False) -> list[str]:
    """The load hosts of `slot` (members of both `slot` and `loadgen`), the first `wanted` of them
    (0 = all); InventoryError when `slot` is not a slot of the inventory or has fewer, or when
    `server` and the slot has no SUT (a member of `sut`) to provision."""
    groups = inventory_groups(path)
    slots = inventory_slots(path)
    if slot not in slots:
        raise InventoryError(
            f"slot: {slot!r} is not a slot of {path}; slots: {', '.join(slots) or 'none'} "
            f"(a group that lists its hosts, one of them in loadgen)"
        )
    loadgen = set(groups.get("loadgen", [])) - set(groups.get(BACKGROUND_GROUP, []))
    hosts = [h for h in groups[slot] if h in loadgen]
    if server and not set(groups[slot]) & set(groups.get("sut", [])):
        raise InventoryError(
            f"slot: slot {slot} of {path} has no SUT host (a member of group sut) to provision; "
            f"to rate a server Workbench does not provision, give server_address"
        )
    if wanted > len(hosts):
        raise InventoryError(
            f"load_hosts: the rating needs {wanted} load hosts; slot {slot} of {path} has "
            f"{len(hosts)} ({', '.join(hosts)})"
        )
    return hosts[:wanted] if wanted else hosts


def slot_background_hosts(path: Path, slot: str, wanted: int) -> list[str]:
    """The first `wanted` load hosts of `slot` in group `background` (config.tenants: tenant B's);
    InventoryError when the slot has fewer."""
    groups = inventory_groups(path)
    if slot not in groups:
        raise InventoryError(f"slot: {slot!r} is not a slot of {path}")
    loadgen = set(groups.get("loadgen", []))
    hosts = [h for h in groups[slot] if h in loadgen and h in set(groups.get(BACKGROUND_GROUP, []))]
    if wanted > len(hosts):
        raise InventoryError(
            f"background_load_hosts: tenant B needs {wanted} load host{'s' * (wanted > 1)} of "
            f"group '{BACKGROUND_GROUP}' in slot {slot} of {path}; it has {len(hosts)}"
            f"{' (' + ', '.join(hosts) + ')' if hosts else ''} (inventory/tenants/hosts.yml has "
            "them)"
        )
    return hosts[:wanted]


def slot_sut_hosts(path: Path, slot: str) -> list[str]:
    """The SUT hosts of `slot` (members of both `slot` and `sut`)."""
    groups = inventory_groups(path)
    sut = set(groups.get("sut", []))
    return [h for h in groups.get(slot, []) if h in sut]
