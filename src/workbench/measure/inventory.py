"""What an Ansible YAML inventory says about slots, read without Ansible: its groups, each with its
hosts (through child groups), in the file's order — enough to check a rating's slot and its load
hosts before any host is touched."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class InventoryError(ValueError):
    """The inventory cannot be read, or it lacks what the rating needs (the message says what)."""


def inventory_groups(path: Path) -> dict[str, list[str]]:
    """group → its hosts (own and of child groups), in the order the file lists them."""
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise InventoryError(f"cannot read inventory {path}: {e}") from None
    groups: dict[str, list[str]] = {}

    def walk(name: str, node: Any) -> list[str]:
        node = node if isinstance(node, dict) else {}
        hosts = list((node.get("hosts") or {}).keys())
        for child, sub in (node.get("children") or {}).items():
            hosts += [h for h in walk(child, sub) if h not in hosts]
        groups[name] = list(dict.fromkeys(groups.get(name, []) + hosts))
        return groups[name]

    for name, node in data.items():
        walk(name, node)
    return groups


def slot_load_hosts(path: Path, slot: str, wanted: int = 0, server: bool = False) -> list[str]:
    """The load hosts of `slot` (members of both `slot` and `loadgen`), the first `wanted` of them
    (0 = all); InventoryError when the slot is unknown or has fewer, or when `server` and the slot
    has no SUT (a member of `sut`) to provision."""
    groups = inventory_groups(path)
    loadgen = set(groups.get("loadgen", []))
    if slot not in groups:
        slots = sorted(g for g, hosts in groups.items()
                       if g not in ("all", "loadgen", "ungrouped") and loadgen & set(hosts))
        raise InventoryError(f"slot {slot!r} is not a group of {path} (slots: {', '.join(slots)})")
    hosts = [h for h in groups[slot] if h in loadgen]
    if not hosts:
        raise InventoryError(f"slot {slot} of {path} has no load host (a member of group loadgen)")
    if server and not set(groups[slot]) & set(groups.get("sut", [])):
        raise InventoryError(f"slot {slot} of {path} has no SUT host (a member of group sut) to provision; "
                             f"to rate a server Workbench does not provision, give server_address")
    if wanted > len(hosts):
        raise InventoryError(f"the rating needs {wanted} load hosts; slot {slot} of {path} has {len(hosts)} "
                             f"({', '.join(hosts)})")
    return hosts[:wanted] if wanted else hosts
