"""The factor table: every server factor a rating, a sweep or the command line can set, once.

A factor is a property of the server under test (seed 000 §2: resources R and configuration C).
Each row says the word users type, the ``nfs_server`` role variable it sets, its type, the role's
default, its bounds or choices, and whether a response-surface sweep treats it as numeric or
categorical. One factor, nfs_version, is the protocol the load hosts speak to the server rather than
a setting of it (the role's server exports both versions); it alone applies to an external server
too (``external``). The Params schema of the DAGs (``params_schema``), the CLI flags
(``add_cli_flags``), the harness's extra-vars (``factor_vars``) and the sweep's factor kinds
(``sweep_kind``) all derive from ``FACTORS``; ``tests/config/test_factors.py`` checks it against
``roles/nfs_server/meta/ argument_specs.yml`` and the role's defaults. Adding a factor: one row
here, plus the role variable.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workbench.config.settings import cli_help

MEMORY_FLOOR_MB = 96  # Ganesha was OOM-killed at 64 MiB building a file set
DISK_THROTTLES = ("read_iops", "write_iops", "read_bps", "write_bps")
DISK_FLOOR_MB = 300  # the smallest disk xfs and btrfs are made on (the role's check)
DISK_MAX_MB = 65536  # one disk image (sparse, but mkfs writes its metadata in full)
DISKS_TOTAL_MAX_MB = 262144  # all disk images of a server together
TMPFS_DEFAULT_MB = 1024  # size of a tmpfs export without a memory limit (nfs_server disks.yml)
# what fstress speaks (--nfs-version); 4.1: sessions, no MOUNT (RFC 8881)
NFS_VERSIONS = ("3", "4.1")
FS_COMPRESS = ("none", "zstd", "lzo", "zlib")  # btrfs's compress= algorithms
MAX_CPU = 4095  # highest CPU number a taskset list may name
CPU_LIST = re.compile(r"^(\d+(-\d+)?)(,\d+(-\d+)?)*$")


def parse_cpu_list(name: str, text: Any) -> list[int]:
    """The CPUs of a taskset CPU list ("" = none: no pinning), or ValueError naming `name`."""
    if not isinstance(text, str):
        raise ValueError(f'{name}: expected a taskset CPU list like "1" or "0-1,3", got {text!r}')
    if text == "":
        return []
    if not CPU_LIST.match(text):
        raise ValueError(
            f'{name}: {text!r} is not a taskset CPU list; allowed: "" or numbers and '
            f'ranges like "1" or "0-1,3"'
        )
    cpus: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if a > b or b > MAX_CPU:
            raise ValueError(
                f"{name}: range {part!r} of {text!r} is not allowed; "
                f"want a-b with a ≤ b ≤ {MAX_CPU}"
            )
        cpus.extend(range(a, b + 1))
    return sorted(set(cpus))


@dataclass(frozen=True)
class Factor:
    name: str  # the word of Params, CLI (--name-with-dashes) and sweeps
    role_var: str  # nfs_server role variable it sets
    kind: type  # int | bool | str
    default: Any  # the role's default (roles/nfs_server/defaults/main.yml)
    help: str
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] | None = None
    sweep: str | None = None  # "numeric" | "categorical" | None (not a sweep factor)
    form: bool = True  # shown in the DAGs' Params form
    off_flag: str | None = None  # bool factors: the CLI flag that sets False
    external: bool = False  # also applies to an external server (how the load hosts speak to it)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


FACTORS: tuple[Factor, ...] = (
    Factor(
        "backend",
        "nfs_server_backend",
        str,
        "ganesha",
        "NFS server: ganesha (runs here) or knfsd",
        choices=("ganesha", "knfsd"),
        form=False,
    ),
    Factor(
        "nfs_version",
        "nfs_server_nfs_version",
        str,
        "3",
        "NFS version the load hosts speak: 3, or 4.1 (sessions; the export's pseudo path, port "
        "2049, no portmapper or MOUNT); the server exports both",
        choices=NFS_VERSIONS,
        sweep="categorical",
        external=True,
    ),
    Factor(
        "threads",
        "nfs_server_threads",
        int,
        16,
        "server threads (Ganesha RPC_Ioq_ThrdMax)",
        minimum=1,
        maximum=512,
        sweep="numeric",
    ),
    Factor(
        "fs",
        "nfs_server_fs_type",
        str,
        "ext4",
        "file system of the export",
        choices=("ext4", "xfs", "btrfs", "tmpfs"),
        sweep="categorical",
    ),
    Factor(
        "fs_compress",
        "nfs_server_fs_compress",
        str,
        "none",
        "transparent compression of the export's file system (btrfs mount -o compress=…; "
        "none on the others)",
        choices=FS_COMPRESS,
        sweep="categorical",
    ),
    Factor(
        "disks",
        "nfs_server_disks",
        int,
        1,
        "throttled loop-device disks (btrfs raid0 when > 1)",
        minimum=1,
        maximum=8,
        sweep="numeric",
    ),
    Factor(
        "disk_size_mb",
        "nfs_server_disk_size_mb",
        int,
        1024,
        f"size of each disk image (MiB; ≥ {DISK_FLOOR_MB} but on tmpfs; disks × size ≤ "
        f"{DISKS_TOTAL_MAX_MB})",
        minimum=64,
        maximum=DISK_MAX_MB,
        form=False,
    ),
    Factor(
        "memory_mb",
        "nfs_server_memory_mb",
        int,
        0,
        f"server memory limit (MiB, bounds its page cache); 0 = unlimited, "
        f"else ≥ {MEMORY_FLOOR_MB}",
        minimum=0,
        maximum=16384,
        sweep="numeric",
    ),
    Factor(
        "read_iops",
        "nfs_server_disk_read_iops",
        int,
        0,
        "read IOPS of each disk; 0 = unthrottled",
        minimum=0,
        maximum=100000,
        sweep="numeric",
    ),
    Factor(
        "write_iops",
        "nfs_server_disk_write_iops",
        int,
        0,
        "write IOPS of each disk; 0 = unthrottled",
        minimum=0,
        maximum=100000,
        form=False,
    ),
    Factor(
        "read_bps",
        "nfs_server_disk_read_bps",
        int,
        0,
        "read bytes/s of each disk; 0 = unthrottled",
        minimum=0,
        maximum=1 << 40,
        form=False,
    ),
    Factor(
        "write_bps",
        "nfs_server_disk_write_bps",
        int,
        0,
        "write bytes/s of each disk; 0 = unthrottled",
        minimum=0,
        maximum=1 << 40,
        form=False,
    ),
    Factor(
        "sync",
        "nfs_server_export_sync",
        bool,
        True,
        "sync exports (stable writes)",
        sweep="categorical",
        off_flag="--async",
    ),
    Factor(
        "cache_policy",
        "nfs_server_cache_policy",
        str,
        "keep",
        "server cache between trials",
        choices=("keep", "drop", "restart"),
        sweep="categorical",
    ),
    Factor(
        "server_cpus",
        "nfs_server_cpus",
        str,
        "",
        'taskset CPU list of the server ("" = no pinning)',
        form=False,
    ),
)
BY_NAME: dict[str, Factor] = {f.name: f for f in FACTORS}


def sweep_factors(kind: str) -> tuple[str, ...]:
    """Names of the factors a sweep treats as `kind` ("numeric" or "categorical")."""
    return tuple(f.name for f in FACTORS if f.sweep == kind)


def _coerce(f: Factor, value: Any) -> Any:
    """The value in the factor's type, or ValueError naming the factor and what it takes."""
    if f.kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"factor {f.name} must be true/false, got {value!r}")
        return value
    if f.kind is int:
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"factor {f.name} must be a whole number, got {value!r}")
        if f.minimum is not None and value < f.minimum:
            raise ValueError(f"factor {f.name} must be >= {f.minimum}, got {value}")
        if f.maximum is not None and value > f.maximum:
            raise ValueError(f"factor {f.name} must be <= {f.maximum}, got {value}")
        return value
    value = str(value)
    if f.choices and value not in f.choices:
        raise ValueError(f"factor {f.name} must be one of {', '.join(f.choices)}, got {value!r}")
    return value


def check_factor(name: str, value: Any) -> Any:
    """One factor's value, checked and coerced (the table's bounds and the per-factor rules)."""
    if name not in BY_NAME:
        raise ValueError(f"unknown factor {name!r}; known: {', '.join(sorted(BY_NAME))}")
    value = _coerce(BY_NAME[name], value)
    if name == "memory_mb" and 0 < value < MEMORY_FLOOR_MB:
        raise ValueError(
            f"factor memory_mb must be 0 (unlimited) or >= {MEMORY_FLOOR_MB}, got {value}"
        )
    if name == "server_cpus":
        parse_cpu_list(name, value)
    return value


def factor_vars(factors: Mapping[str, Any]) -> dict[str, Any]:
    """Factors → nfs_server extra-vars, checked so that bad input fails before any host changes."""
    out = {}
    for name, value in factors.items():
        value = check_factor(name, value)  # unknown names fail here, naming the known ones
        out[BY_NAME[name].role_var] = value
    disks, fs = out.get("nfs_server_disks", 1), out.get("nfs_server_fs_type", "ext4")
    if disks > 1 and fs != "btrfs":
        raise ValueError(f"disks={disks} needs fs=btrfs (raid0 over the disks); got fs={fs}")
    compress = out.get("nfs_server_fs_compress", "none")
    if compress != "none" and fs != "btrfs":
        raise ValueError(
            f"fs_compress={compress} needs fs=btrfs (transparent compression); got fs={fs}"
        )
    size = out.get("nfs_server_disk_size_mb", BY_NAME["disk_size_mb"].default)
    if fs != "tmpfs" and size < DISK_FLOOR_MB:
        raise ValueError(
            f"disk_size_mb: {size} is too small for fs={fs}; at least {DISK_FLOOR_MB} "
            f"(xfs and btrfs minimum), or fs=tmpfs"
        )
    if fs != "tmpfs" and disks * size > DISKS_TOTAL_MAX_MB:
        raise ValueError(
            f"disk_size_mb: disks × disk_size_mb = {disks} × {size} MiB is too large; "
            f"at most {DISKS_TOTAL_MAX_MB} MiB in all"
        )
    return out


def with_rules(base: Mapping[str, Any], chosen: Mapping[str, Any]) -> dict[str, Any]:
    """A profile's factors `base` overridden by the user's `chosen` (None = not chosen), with the
    rules between factors: on tmpfs a profile's disk throttle means nothing and is dropped (a
    throttle the user chose is kept, and refused by the role)."""
    out = dict(base)
    out.update({k: v for k, v in chosen.items() if v is not None})
    if out.get("fs") == "tmpfs":
        for k in DISK_THROTTLES:
            if chosen.get(k) is None:
                out.pop(k, None)
    return out


def params_schema() -> dict[str, dict[str, Any]]:
    """JSON-schema Params (Airflow's form) of every factor; None = the profile's value. Factors with
    form=False go to the form's "More server factors" section."""
    out = {}
    for f in FACTORS:
        typ = {int: "integer", bool: "boolean", str: "string"}[f.kind]
        p: dict[str, Any] = dict(type=["null", typ], default=None, description=f.help)
        if f.choices:
            p["enum"] = [None, *f.choices]
        if f.minimum is not None:
            p["minimum"] = f.minimum
        if f.maximum is not None:
            p["maximum"] = f.maximum
        if not f.form:
            p["section"] = "More server factors"
        out[f.name] = p
    return out


def add_cli_flags(parser: argparse.ArgumentParser) -> None:
    """One --flag per factor (default None = the profile's value); bool factors also get their
    off_flag (--sync / --async)."""
    for f in FACTORS:
        if f.kind is bool:
            parser.add_argument(
                f.flag, dest=f.name, action="store_true", default=None, help=cli_help(f.help)
            )
            parser.add_argument(
                f.off_flag or f"--no-{f.name}",
                dest=f.name,
                action="store_false",
                default=None,
                help=cli_help(f"not: {f.help}"),
            )
        else:
            # no argparse choices: check_factor refuses a bad value in one line, naming the choices
            parser.add_argument(
                f.flag, dest=f.name, type=f.kind, default=None, help=cli_help(f.help)
            )
