"""The factor table (workbench.config.factors) against the nfs_server role, and its helpers."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
import yaml

from workbench.config.factors import (
    BY_NAME,
    DISK_THROTTLES,
    FACTORS,
    MEMORY_FLOOR_MB,
    add_cli_flags,
    check_factor,
    factor_vars,
    params_schema,
    sweep_factors,
    with_rules,
)

ROLE = Path(__file__).resolve().parents[2] / "roles" / "nfs_server"
ENTRY_POINTS = ("main", "validate", "cache", "teardown", "start")
SPEC_TYPE = {int: "int", bool: "bool", str: "str"}
JSON_TYPE = {int: "integer", bool: "boolean", str: "string"}
IDS = [f.name for f in FACTORS]


@pytest.fixture(scope="module")
def specs() -> dict:
    return yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]


@pytest.fixture(scope="module")
def role_defaults() -> dict:
    return yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())


def same(a, b) -> bool:
    """Equal and of the same type (True == 1 and "0" != 0 must not slip through)."""
    return type(a) is type(b) and a == b


# --- the table against the role ---------------------------------------------------------------

def test_names_and_role_vars_are_unique():
    assert len(BY_NAME) == len(FACTORS)
    assert len({f.role_var for f in FACTORS}) == len(FACTORS)


@pytest.mark.parametrize("f", FACTORS, ids=IDS)
def test_factor_matches_main_argument_spec(f, specs):
    options = specs["main"]["options"]
    assert f.role_var in options, f"{f.name}: {f.role_var} is not an option of nfs_server main"
    opt = options[f.role_var]
    assert opt.get("type") == SPEC_TYPE[f.kind], f"{f.name}: spec type {opt.get('type')}, table {f.kind.__name__}"
    if f.choices or opt.get("choices"):
        assert tuple(opt.get("choices") or ()) == tuple(f.choices or ()), \
            f"{f.name}: spec choices {opt.get('choices')}, table {f.choices}"
    assert "default" in opt and same(opt["default"], f.default), \
        f"{f.name}: spec default {opt.get('default')!r}, table {f.default!r}"


@pytest.mark.parametrize("f", FACTORS, ids=IDS)
def test_factor_matches_role_defaults(f, role_defaults):
    assert f.role_var in role_defaults, f"{f.name}: {f.role_var} missing from defaults/main.yml"
    assert same(role_defaults[f.role_var], f.default), \
        f"{f.name}: defaults/main.yml {role_defaults[f.role_var]!r}, table {f.default!r}"


def test_every_entry_point_takes_every_factor(specs):
    missing = {ep: sorted({f.role_var for f in FACTORS} - set((specs.get(ep) or {}).get("options") or {}))
               for ep in ENTRY_POINTS}
    assert not {ep: m for ep, m in missing.items() if m}, missing


@pytest.mark.parametrize("f", FACTORS, ids=IDS)
def test_default_passes_its_own_checks(f):
    assert same(check_factor(f.name, f.default), f.default)


# --- factor_vars / check_factor ---------------------------------------------------------------

def test_factor_vars_maps_and_coerces():
    assert factor_vars({"threads": "32", "fs": "btrfs", "disks": 2, "sync": False,
                        "cache_policy": "drop", "server_cpus": "", "memory_mb": MEMORY_FLOOR_MB}) == {
        "nfs_server_threads": 32, "nfs_server_fs_type": "btrfs", "nfs_server_disks": 2,
        "nfs_server_export_sync": False, "nfs_server_cache_policy": "drop", "nfs_server_cpus": "",
        "nfs_server_memory_mb": MEMORY_FLOOR_MB}
    assert factor_vars({}) == {}


BAD_FACTORS = [
    ({"bogus": 1}, "bogus"),                       # unknown name
    ({"threads": "many"}, "threads"),              # not a whole number
    ({"threads": 2.5}, "threads"),
    ({"disks": True}, "disks"),                    # a bool is not a count
    ({"sync": "yes"}, "sync"),                     # not a bool
    ({"fs": "zfs"}, "fs"),                         # not a choice
    ({"threads": 0}, "threads"),                   # below minimum
    ({"threads": 513}, "threads"),                 # above maximum
    ({"read_iops": -1}, "read_iops"),
    ({"memory_mb": 50}, "memory_mb"),              # 0 or >= floor
    ({"disks": 2, "fs": "xfs"}, "disks"),          # a rule between factors
    ({"nfs_version": "4.0"}, "nfs_version"),       # a version fstress does not speak
    ({"nfs_version": 2}, "nfs_version"),
    ({"nfs_version": "4"}, "nfs_version"),
]


@pytest.mark.parametrize("factors, named", BAD_FACTORS,
                         ids=[",".join(f"{k}={v!r}" for k, v in fs.items()) for fs, _ in BAD_FACTORS])
def test_factor_vars_refuses_bad_input_naming_the_factor(factors, named):
    with pytest.raises(ValueError, match=rf"\b{re.escape(named)}\b"):
        factor_vars(factors)


def test_nfs_version_is_a_string_choice_numbers_coerced():
    """3 and 4.1 (as a sweep file's YAML numbers) are the strings "3" and "4.1"; nothing else."""
    assert factor_vars({"nfs_version": 4.1}) == {"nfs_server_nfs_version": "4.1"}
    assert factor_vars({"nfs_version": 3}) == {"nfs_server_nfs_version": "3"}
    assert BY_NAME["nfs_version"].sweep == "categorical" and BY_NAME["nfs_version"].choices == ("3", "4.1")
    assert [f.name for f in FACTORS if f.external] == ["nfs_version"]     # the one an external server takes
    with pytest.raises(ValueError, match=r"nfs_version must be one of 3, 4.1, got '4.0'"):
        check_factor("nfs_version", 4.0)


def test_memory_floor():
    with pytest.raises(ValueError, match="memory_mb"):
        check_factor("memory_mb", 50)
    with pytest.raises(ValueError, match="memory_mb"):
        check_factor("memory_mb", MEMORY_FLOOR_MB - 1)
    assert check_factor("memory_mb", 0) == 0
    assert check_factor("memory_mb", MEMORY_FLOOR_MB) == MEMORY_FLOOR_MB


@pytest.mark.parametrize("fs", [None, "ext4", "xfs", "tmpfs"])
def test_several_disks_need_btrfs(fs):
    factors = {"disks": 2} if fs is None else {"disks": 2, "fs": fs}
    with pytest.raises(ValueError, match="disks"):
        factor_vars(factors)


def test_several_disks_on_btrfs_pass():
    assert factor_vars({"disks": 4, "fs": "btrfs"}) == {"nfs_server_disks": 4, "nfs_server_fs_type": "btrfs"}
    assert factor_vars({"disks": 1, "fs": "xfs"})["nfs_server_disks"] == 1


# --- with_rules --------------------------------------------------------------------------------

def test_with_rules_chosen_overrides_base_and_none_does_not():
    assert with_rules({"fs": "ext4", "read_iops": 100}, {"fs": None, "read_iops": 200, "threads": None}) == \
        {"fs": "ext4", "read_iops": 200}


def test_with_rules_drops_profile_throttles_on_tmpfs():
    base = {"fs": "ext4", "memory_mb": 128, **{k: 100 for k in DISK_THROTTLES}}
    out = with_rules(base, {"fs": "tmpfs", "read_iops": None})
    assert out == {"fs": "tmpfs", "memory_mb": 128}
    assert with_rules({"fs": "tmpfs", "read_iops": 100}, {}) == {"fs": "tmpfs"}     # tmpfs from the profile


def test_with_rules_keeps_user_throttle_on_tmpfs():
    out = with_rules({"fs": "ext4", "read_iops": 100, "write_bps": 7}, {"fs": "tmpfs", "write_iops": 50})
    assert out == {"fs": "tmpfs", "write_iops": 50}
    assert with_rules({"read_iops": 100}, {"fs": "xfs"}) == {"fs": "xfs", "read_iops": 100}   # not tmpfs: kept


# --- params_schema -----------------------------------------------------------------------------

def test_params_schema_one_entry_per_factor():
    schema = params_schema()
    assert list(schema) == IDS
    for f in FACTORS:
        p = schema[f.name]
        assert p["type"] == ["null", JSON_TYPE[f.kind]], f.name
        assert p["default"] is None, f.name
        assert p.get("enum") == ([None, *f.choices] if f.choices else None), f.name
        assert p.get("minimum") == f.minimum and p.get("maximum") == f.maximum, f.name
        assert ("section" in p) == (not f.form), f.name


# --- add_cli_flags -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="t", exit_on_error=False)
    add_cli_flags(p)
    return p


def test_cli_flags_exist(parser):
    flags = set(parser._option_string_actions)
    assert {"--memory-mb", "--read-iops", "--disk-size-mb", "--cache-policy", "--server-cpus",
            "--sync", "--async", "--nfs-version"} <= flags
    assert {f.flag for f in FACTORS} <= flags


def test_cli_flags_parse_to_the_factor_types(parser):
    ns = parser.parse_args(["--memory-mb", "128", "--read-iops", "200", "--async", "--fs", "xfs",
                            "--server-cpus", "0-1", "--threads", "8"])
    assert same(ns.memory_mb, 128) and same(ns.read_iops, 200) and same(ns.threads, 8)
    assert ns.sync is False and ns.fs == "xfs" and ns.server_cpus == "0-1"
    assert parser.parse_args(["--nfs-version", "4.1"]).nfs_version == "4.1"
    assert parser.parse_args(["--sync"]).sync is True
    assert all(v is None for v in vars(parser.parse_args([])).values())      # None = the profile's value


@pytest.mark.parametrize("argv", [["--memory-mb", "lots"], ["--threads", "1.5"]])
def test_cli_flags_refuse_bad_values(parser, argv):
    with pytest.raises((argparse.ArgumentError, SystemExit)):
        parser.parse_args(argv)


def test_cli_choices_are_checked_by_the_table_in_one_line(parser):
    """No argparse choices (its usage dump is many lines): the table refuses, naming the choices."""
    assert parser.parse_args(["--fs", "zfs"]).fs == "zfs"
    with pytest.raises(ValueError, match="fs must be one of ext4, xfs, btrfs, tmpfs"):
        check_factor("fs", "zfs")


# --- sweep_factors -----------------------------------------------------------------------------

def test_sweep_factors():
    numeric, categorical = sweep_factors("numeric"), sweep_factors("categorical")
    assert numeric == tuple(f.name for f in FACTORS if f.sweep == "numeric")
    assert categorical == tuple(f.name for f in FACTORS if f.sweep == "categorical")
    assert numeric and categorical and not set(numeric) & set(categorical)
    assert sweep_factors("other") == ()
    for name in numeric:       # a response surface needs a bounded number
        f = BY_NAME[name]
        assert f.kind is int and f.minimum is not None and f.maximum is not None, name
    for name in categorical:   # ... or a finite set of levels
        f = BY_NAME[name]
        assert f.kind is bool or f.choices, name
