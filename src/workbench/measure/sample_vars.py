"""What the harness's playbooks are told about a sample beyond its factors: an external server (its
endpoint, and sysinfo.json as a client learnt it), a workload file to copy, tenant B's hosts and
load; and the checks of AnsibleHarness's arguments."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.config import tenants
from workbench.config.external import ExternalServer, refuse_server_factors
from workbench.measure.inventory import slot_background_hosts


def check_args(
    slot: Any, workload: Any, warmup_s: Any, fileset_rate: Any, start_margin_s: Any
) -> None:
    """ValueError naming the first bad argument: the slot an inventory group name, the workload a
    non-empty name, the warm-up and start margin numbers ≥ 0, the file set's rate one > 0."""
    if (
        not isinstance(slot, str)
        or not slot
        or not slot.replace("_", "").replace("-", "").isalnum()
    ):
        raise ValueError(f"slot must be an inventory group name like slot1, got {slot!r}")
    if not isinstance(workload, str) or not workload:
        raise ValueError(f"workload must be a non-empty name, got {workload!r}")
    for name, v, lo in (
        ("warmup_s", warmup_s, 0.0),
        ("fileset_rate", fileset_rate, 1e-9),
        ("start_margin_s", start_margin_s, 0.0),
    ):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < lo:
            raise ValueError(f"{name} must be a number >= {lo:g}, got {v!r}")


def sample_extravars(
    extravars: Mapping[str, Any] | None,
    external: Mapping[str, Any] | None,
    factors: Mapping[str, Any],
    workload: str,
) -> tuple[ExternalServer | None, str, dict[str, Any]]:
    """(the external server or None, the workload's name for fstress, the extra-vars of every
    playbook): the given extra-vars with an external server's endpoint and a workload file to
    copy."""
    out = dict(extravars or {})
    server, external_vars = external_server(external, factors)
    out.update(external_vars)
    name, workload_vars = workload_file(workload)
    for k, v in workload_vars.items():
        out.setdefault(k, v)
    return server, name, out


def external_server(
    external: Mapping[str, Any] | None, factors: Mapping[str, Any]
) -> tuple[ExternalServer | None, dict[str, Any]]:
    """(the external server, its extra-vars) of `external` ({} or None: the slot's own SUT, no
    extra-vars); an external server takes no server factors."""
    if not external:
        return None, {}
    server = ExternalServer(**external)
    if factors:
        refuse_server_factors(factors)
    return server, {"fstress_endpoint": server.endpoint(), "wb_external": True}


def workload_file(workload: str) -> tuple[str, dict[str, Any]]:
    """(the workload's name for fstress, extra-vars defaults): a workload file is copied to the
    load hosts by the fstress role and named by its file name."""
    wl_file = Path(workload)
    if wl_file.is_file():
        return wl_file.name, {"fstress_workload_files": [str(wl_file.resolve())]}
    return workload, {}


def background_vars(background: Mapping[str, Any], hosts: list[str]) -> dict[str, Any]:
    """run_trial.yml's and deploy_loadgen.yml's extra-vars of tenant B (config.tenants) on
    `hosts`."""
    return {
        "wb_background_hosts": ",".join(hosts),
        "background_ops_s": float(background["ops_s"]),
        "background_workload": background["workload"],
    }


def background_of(
    background: Mapping[str, Any] | None, inventory: Path, slot: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tenant B, its extra-vars): {} and {} when B is idle or absent; its load hosts from the
    slot's group `background` of the inventory (none without an inventory file)."""
    if not tenants.is_active(background):
        return {}, {}
    bg = dict(background)
    hosts = slot_background_hosts(inventory, slot, bg["load_hosts"]) if inventory.is_file() else []
    return bg, background_vars(bg, hosts)


def external_sysinfo(server: ExternalServer, probe: Mapping[str, Any]) -> dict[str, Any]:
    """sysinfo.json of an external server: what a client learnt (`fstress probe`: portmapper
    programs, FSINFO/FSSTAT/PATHCONF of the export, NULL round trips) and the user's description."""
    endpoint = {
        **server.endpoint(),
        "nfs_port": probe.get("nfs_port", server.nfs_port),
        "mount_port": probe.get("mount_port", server.mount_port),
    }
    return {
        "mode": "external",
        "host": server.address,
        "server": {
            "kind": "external server",
            "description": server.description,
            "endpoint": endpoint,
        },
        "probe": dict(probe),
    }


def probes_sut(server_vars: Mapping[str, Any]) -> bool:
    """Whether provisioning a slot's own server also probes it from a load host (provision_sut.yml
    with probe_dest): over NFSv4.1, for the session limits it grants (max slots, request and
    response sizes), which only a client learns."""
    return str(server_vars.get("nfs_server_nfs_version", "3")) != "3"
