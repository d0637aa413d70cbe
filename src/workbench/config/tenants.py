"""Shared tenants (seed 004: services sharing a data centre compete for the file server's cache and
disks): the background tenant B that runs beside the rated workload A, defined once.

During every trial of a rating (warm-up included), B's load hosts run B's workload at a fixed
offered rate against the same server, from the same common start, for the same runlength; B is
measured on its own (its own merge, never mixed into A's figures). Between trials both are idle, so
the drain probe before a trial sees the server as the last trial left it. B's load hosts are the
slot's load hosts in the inventory group ``background`` (inventory/tenants/hosts.yml); a rating
without a background tenant never uses them. ``background_ops_s`` is also a numeric sweep factor:
``map_surface`` over it draws λ*_A against B's load (the interference curve); 0 = B idle.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, TypeGuard

from workbench.config.settings import cli_help
from workbench.config.vocabulary import CANNED_WORKLOADS

SECTION = "Shared tenant"
BACKGROUND_GROUP = "background"  # inventory group of the load hosts that run tenant B
MAX_BACKGROUND_OPS_S = 1e7  # fstress's own bound on a rate
TENANT_FACTOR_NAMES = ("background_ops_s",)  # numeric sweep factors


def params_schema() -> dict[str, dict[str, Any]]:
    """JSON-schema Params of the background tenant (the form's "Shared tenant" section)."""
    return {
        "background_ops_s": dict(
            type=["null", "number"],
            minimum=0,
            maximum=MAX_BACKGROUND_OPS_S,
            default=None,
            section=SECTION,
            description="tenant B: offered load (ops/s, all its load hosts) run beside every "
            "trial against the same server; empty = no tenant B, 0 = B idle",
        ),
        "background_workload": dict(
            type=["null", "string"],
            enum=[None, *CANNED_WORKLOADS],
            default=None,
            section=SECTION,
            description="tenant B's workload (empty = the rated workload's canned name; "
            "another workload has its own file set, sized like A's)",
        ),
        "background_load_hosts": dict(
            type=["null", "integer"],
            minimum=1,
            maximum=64,
            default=None,
            section=SECTION,
            description="tenant B's load hosts: the slot's first N of group "
            "'background' (empty = 1)",
        ),
    }


def background_from_params(p: Mapping[str, Any], workload: str) -> dict[str, Any]:
    """The plan's background tenant from checked Params: {} (none), or ops_s, workload, load_hosts.
    `workload`: the rated workload's canned name, B's default; ValueError when B has no canned
        one."""
    if p.get("background_ops_s") is None:
        given = [
            n for n in ("background_workload", "background_load_hosts") if p.get(n) is not None
        ]
        if given:
            raise ValueError(f"{', '.join(given)}: only with background_ops_s (tenant B's load)")
        return {}
    wl = p.get("background_workload") or workload
    if wl not in CANNED_WORKLOADS:
        raise ValueError(
            "background_workload: tenant B needs a canned workload "
            f"({', '.join(CANNED_WORKLOADS)}); the rated workload {workload!r} is not one"
        )
    return {
        "ops_s": float(p["background_ops_s"]),
        "workload": wl,
        "load_hosts": int(p.get("background_load_hosts") or 1),
    }


def is_active(background: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    """Whether tenant B sends load (a background of 0 ops/s is B idle: nothing runs)."""
    if not background:
        return False
    return float(background.get("ops_s", 0.0)) > 0


def describe(background: Mapping[str, Any] | None) -> str:
    """Tenant B for a log line or a report ("" when there is none)."""
    if not background:
        return ""
    if not is_active(background):
        return f"tenant B idle ({background['workload']})"
    n = background["load_hosts"]
    return (
        f"tenant B: {background['workload']} at {background['ops_s']:g} ops/s from {n} load "
        f"host{'s' * (n > 1)}"
    )


def add_cli_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group(SECTION.lower())
    g.add_argument(
        "--background-ops-s",
        type=float,
        default=None,
        help=cli_help(params_schema()["background_ops_s"]["description"]),
    )
    g.add_argument(
        "--background-workload",
        default=None,
        choices=CANNED_WORKLOADS,
        help=cli_help(params_schema()["background_workload"]["description"]),
    )
    g.add_argument(
        "--background-load-hosts",
        type=int,
        default=None,
        help=cli_help(params_schema()["background_load_hosts"]["description"]),
    )
