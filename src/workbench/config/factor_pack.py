"""Factor packs: a filer's knobs as factors, declared in a user's YAML file outside the repository.

A pack names its factors (the word users type, type, levels, numeric or categorical sweep, help)
and the Ansible tasks that apply a level to the server before a sample — a tasks file (`apply`,
relative to the pack) or a role (`role`, e.g. from a vendor collection) — and optionally the tasks
that undo a failed apply (`reset`) and the inventory hosts they run on (`hosts`; default the
slot's SUT, or the controller, ``localhost``, for an external server):

    factors:
      - {name: nb_worker, type: int, levels: [16, 64], sweep: numeric, help: "Ganesha NB_Worker"}
      - {name: cache_mode, type: str, levels: [a, b], sweep: categorical}
    apply: apply.yml
    reset: reset.yml
    hosts: filer_admin

A pack's factors are set like the built-in ones (`--set nb_worker=64`, Params `pack_factors` or the
pack's words themselves, a sweep's `factors` and `fixed`); an int takes any whole number between its
lowest and highest level, a str one of its levels. `load_pack` refuses a bad pack in one line
naming the file and the field, before any host changes; the loaded pack travels as plain data
(`FactorPack.to_dict`) in a rating's plan, so a stored rating reloads without the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from workbench.config.factors import BY_NAME
from workbench.config.tenants import TENANT_FACTOR_NAMES
from workbench.config.untrusted import TEMPLATE_MARKERS, load_yaml, unknown_keys
from workbench.config.workloads import WORKLOAD_FACTOR_NAMES

MAX_PACK_BYTES = 1 << 16
MAX_PACK_FACTORS = 32
MAX_PACK_LEVELS = 64
PACK_KEYS = ("factors", "apply", "role", "reset", "hosts")
FACTOR_KEYS = ("name", "type", "levels", "sweep", "help")
TYPES: dict[str, type] = {"int": int, "str": str, "bool": bool}
SWEEPS = ("numeric", "categorical")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_ROLE = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+){0,2}$")
_HOSTS = re.compile(r"^[A-Za-z0-9_.:&!,*-]{1,200}$")  # an Ansible host pattern, no templates
# the playbooks' own variables: a pack factor's plain variable must not shadow one
RESERVED_PREFIXES = ("wb_", "nfs_server_", "fstress_", "ansible_", "background_")
RESERVED_NAMES = frozenset(
    {"slot", "workload", "fileset_rate", "hosts", "name", "vars", "item", "environment"}
)


class PackError(ValueError):
    """A bad factor pack: the message names the file and the field."""


@dataclass(frozen=True)
class PackFactor:
    name: str
    kind: str  # "int" | "str" | "bool"
    levels: tuple[Any, ...]
    sweep: str  # "numeric" | "categorical"
    help: str = ""

    def check(self, value: Any, where: str = "") -> Any:
        """`value` in the factor's type and range (an int between the lowest and highest level, a
        str one of the levels); text from the command line is converted. ValueError naming the
        factor."""
        name = f"{where}{self.name}"
        if self.kind == "bool":
            if isinstance(value, str) and value.lower() in ("true", "false"):
                value = value.lower() == "true"
            if not isinstance(value, bool):
                raise ValueError(f"{name}: expected true or false, got {value!r}")
            return value
        if self.kind == "int":
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                value = int(value)
            lo, hi = min(self.levels), max(self.levels)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ValueError(
                    f"{name}: {value!r} is not allowed; a whole number in [{lo}, {hi}] "
                    f"(the pack's levels)"
                )
            return value
        if value not in self.levels:
            raise ValueError(
                f"{name}: {value!r} is not one of the pack's levels "
                f"{', '.join(map(str, self.levels))}"
            )
        return value

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.kind,
            "levels": list(self.levels),
            "sweep": self.sweep,
            "help": self.help,
        }


@dataclass(frozen=True)
class FactorPack:
    path: str  # the pack file, absolute
    factors: tuple[PackFactor, ...]
    apply: str = ""  # tasks file, absolute ("" with a role)
    role: str = ""  # role name ("" with a tasks file)
    reset: str = ""  # tasks file run when apply fails, absolute ("" = none)
    hosts: str = ""  # inventory host pattern ("" = the slot's SUT, or localhost when external)

    @property
    def by_name(self) -> dict[str, PackFactor]:
        return {f.name: f for f in self.factors}

    def names(self, sweep: str | None = None) -> tuple[str, ...]:
        return tuple(f.name for f in self.factors if sweep in (None, f.sweep))

    def check_levels(self, chosen: Mapping[str, Any]) -> dict[str, Any]:
        """The chosen levels (None = not chosen: dropped), checked; ValueError naming the pack's
        file and the factor."""
        out = {}
        for name, value in chosen.items():
            if value is None:
                continue
            if name not in self.by_name:
                raise ValueError(
                    f"pack_factors: {name!r} is not a factor of the pack {self.path}; its "
                    f"factors: {', '.join(self.names())}"
                )
            out[name] = self.by_name[name].check(value)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "factors": [f.to_dict() for f in self.factors],
            "apply": self.apply,
            "role": self.role,
            "reset": self.reset,
            "hosts": self.hosts,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FactorPack:
        """A pack stored with a plan (to_dict), trusted as stored."""
        return cls(
            path=str(d["path"]),
            factors=tuple(
                PackFactor(f["name"], f["type"], tuple(f["levels"]), f["sweep"], f.get("help", ""))
                for f in d["factors"]
            ),
            apply=str(d.get("apply") or ""),
            role=str(d.get("role") or ""),
            reset=str(d.get("reset") or ""),
            hosts=str(d.get("hosts") or ""),
        )


def _read(path: Path) -> dict[str, Any]:
    """The pack's YAML mapping, or PackError naming the file."""
    try:
        if not path.is_file():
            raise PackError(f"factor pack {path}: not a regular file")
        data = load_yaml(path.read_bytes(), MAX_PACK_BYTES)
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as e:
        raise PackError(f"factor pack {path}: cannot read it: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict):
        raise PackError(f"factor pack {path}: holds a {type(data).__name__}; want a mapping")
    if unknown := unknown_keys(data, PACK_KEYS):
        raise PackError(f"factor pack {path}: {unknown}")
    return data


def _check_name(where: str, name: Any, reserved: Sequence[str]) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise PackError(
            f"{where}.name: {name!r} is not a name; 1-40 of a-z, 0-9, _ (a letter first)"
        )
    builtin = set(BY_NAME) | set(WORKLOAD_FACTOR_NAMES) | set(TENANT_FACTOR_NAMES)
    if name in builtin or name in reserved:
        raise PackError(f"{where}.name: {name!r} is a built-in factor or parameter; choose another")
    if name in RESERVED_NAMES or name.startswith(RESERVED_PREFIXES):
        raise PackError(
            f"{where}.name: {name!r} would shadow a playbook variable (reserved: "
            f"{', '.join(sorted(RESERVED_NAMES))} and the prefixes {', '.join(RESERVED_PREFIXES)})"
        )
    return name


def _level(where: str, kind: str, v: Any) -> Any:
    typ = TYPES[kind]
    ok = isinstance(v, typ) and (typ is bool or not isinstance(v, bool))
    if not ok:
        raise PackError(f"{where}: {v!r} is not of type {kind}")
    if isinstance(v, str) and (not v or any(m in v for m in TEMPLATE_MARKERS) or len(v) > 200):
        raise PackError(f"{where}: {v!r} is not allowed; plain text of 1-200 characters")
    return v


def _factor(where: str, f: Any, reserved: Sequence[str]) -> PackFactor:
    """One factor of the pack, checked."""
    if not isinstance(f, dict):
        raise PackError(f"{where}: want a mapping with {', '.join(FACTOR_KEYS)}, got {f!r}")
    if unknown := unknown_keys(f, FACTOR_KEYS):
        raise PackError(f"{where}: {unknown}")
    for key in ("name", "type", "levels"):
        if key not in f:
            raise PackError(f"{where}.{key}: missing")
    name = _check_name(where, f["name"], reserved)
    where = f"{where} ({name})"
    kind = f["type"]
    if kind not in TYPES:
        raise PackError(f"{where}.type: {kind!r} is not one of {', '.join(TYPES)}")
    sweep = f.get("sweep", "numeric" if kind == "int" else "categorical")
    if sweep not in SWEEPS or (sweep == "numeric" and kind != "int"):
        raise PackError(
            f"{where}.sweep: {sweep!r} is not allowed; numeric (type int only) or categorical"
        )
    lv = f["levels"]
    if not isinstance(lv, list) or not 2 <= len(lv) <= MAX_PACK_LEVELS:
        raise PackError(f"{where}.levels: want a list of 2 to {MAX_PACK_LEVELS} levels, got {lv!r}")
    levels = tuple(_level(f"{where}.levels[{i}]", kind, v) for i, v in enumerate(lv))
    if len(set(levels)) != len(levels):
        raise PackError(f"{where}.levels: {lv!r} names a level twice; levels must differ")
    text = f.get("help", "")
    if not isinstance(text, str) or any(m in text for m in TEMPLATE_MARKERS) or len(text) > 500:
        raise PackError(f"{where}.help: want plain text of at most 500 characters")
    return PackFactor(name, kind, levels, sweep, " ".join(text.split()))


def _tasks_file(path: Path, key: str, value: Any) -> str:
    """A tasks file the pack names, relative to the pack: it must exist."""
    if not isinstance(value, str) or not value or any(m in value for m in TEMPLATE_MARKERS):
        raise PackError(f"factor pack {path}: {key}: want a tasks file's path, got {value!r}")
    f = (path.parent / value).resolve()
    if not f.is_file():
        raise PackError(f"factor pack {path}: {key}: tasks file {f} not found")
    return str(f)


def load_pack(path: str | Path, reserved: Sequence[str] = ()) -> FactorPack:
    """The factor pack at `path`, checked (`reserved`: more names a factor must not take, e.g. the
    Params'); PackError naming the file and the field."""
    p = Path(path).expanduser().resolve()
    data = _read(p)
    fs = data.get("factors")
    if not isinstance(fs, list) or not 1 <= len(fs) <= MAX_PACK_FACTORS:
        raise PackError(f"factor pack {p}: factors: want a list of 1 to {MAX_PACK_FACTORS} factors")
    factors = tuple(
        _factor(f"factor pack {p}: factors[{i}]", f, reserved) for i, f in enumerate(fs)
    )
    names = [f.name for f in factors]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PackError(f"factor pack {p}: factors: {', '.join(twice)} declared twice")
    if ("apply" in data) == ("role" in data):
        raise PackError(f"factor pack {p}: apply: give either apply (a tasks file) or role")
    role = data.get("role", "")
    if "role" in data and (not isinstance(role, str) or not _ROLE.match(role)):
        raise PackError(f"factor pack {p}: role: {role!r} is not a role name like ns.coll.role")
    hosts = data.get("hosts", "")
    if not isinstance(hosts, str) or (hosts and not _HOSTS.match(hosts)):
        raise PackError(f"factor pack {p}: hosts: {hosts!r} is not an inventory host pattern")
    return FactorPack(
        path=str(p),
        factors=factors,
        apply=_tasks_file(p, "apply", data["apply"]) if "apply" in data else "",
        role=role,
        reset=_tasks_file(p, "reset", data["reset"]) if "reset" in data else "",
        hosts=hosts,
    )


def params_schema() -> dict[str, dict[str, Any]]:
    """The Params of a factor pack (JSON schema, the DAGs' form): the file, and its levels."""
    return {
        "factor_pack": dict(
            type=["null", "string"],
            default=None,
            description="factor pack: a YAML file declaring a filer's knobs as factors and the "
            "Ansible tasks that apply them (docs/guide-factor-packs.md); empty = none",
            section="Factor pack",
        ),
        "pack_factors": dict(
            type=["null", "object"],
            default=None,
            description='the factor pack\'s levels, e.g. {"nb_worker": 64}; empty = the server '
            "as it is",
            section="Factor pack",
        ),
    }


def level_vars(levels: Mapping[str, Any]) -> dict[str, Any]:
    """The playbook variables of a pack's chosen levels: `wb_factor_levels` and each one plain."""
    return {"wb_factor_levels": dict(levels), **levels}
