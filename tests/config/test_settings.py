"""Declared settings (config.settings): the Params form, the command line and the checks all derive
from one declaration of each rating setting, and agree with each other and with the harness's own
tables (server factors, workload factors, tenant B, external server)."""
from __future__ import annotations

import argparse
import ast
import dataclasses
import math
from pathlib import Path

import pytest

from workbench import cli
from workbench.config import external, factor_pack, factors, settings, tenants, workloads
from workbench.config.settings import Bounds, bounds_of, check_settings, param_schema, setting
from workbench.controller.parts import Budget, Goals, Search
from workbench.controller.policy import POLICY_CLASSES
from workbench.controller.spec import RatingSpec
from workbench.params import plan as planmod

SRC = Path(__file__).resolve().parents[2] / "src" / "workbench"
SPEC_SETTINGS = bounds_of(RatingSpec)
# Params that are the plan's own words, not declared settings of the request's parts
PLAN_WORDS = {"workload", "profile", "slot", "load_hosts", "seed_source", "policy"}
# spec settings the command line reaches through --r-sat-ms "R[/L],R[/L],..." (cli.r_sat_goals)
VIA_R_SAT_MS = {"r_sat_ms", "goals_ms", "l_sat_ms", "goals_l_sat_ms"}


def _rate_parser() -> argparse.ArgumentParser:
    sub = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["rate"]


def test_every_spec_setting_is_declared_in_exactly_one_part():
    parts = [set(bounds_of(p)) for p in (Goals, Budget, Search)]
    assert sum(len(p) for p in parts) == len(set().union(*parts)) == len(SPEC_SETTINGS)
    assert set(SPEC_SETTINGS) == set().union(*parts)
    assert not set(SPEC_SETTINGS) & {f.name for c in POLICY_CLASSES.values() for f in dataclasses.fields(c)}


def test_the_params_form_is_made_from_the_declarations():
    on_form = {n for n, b in SPEC_SETTINGS.items() if b.form is not None}
    assert on_form <= set(planmod.PARAMS)
    for name in on_form:
        assert planmod.PARAMS[name] == param_schema(SPEC_SETTINGS[name]), name
    assert planmod.PARAMS["policy"]["enum"] == [None, *POLICY_CLASSES]


def test_every_param_is_declared_by_exactly_one_table():
    tables = {"spec": {n for n, b in SPEC_SETTINGS.items() if b.form is not None},
              "server factors": set(factors.params_schema()), "workload factors": set(workloads.params_schema()),
              "tenant B": set(tenants.params_schema()), "external server": set(external.EXTERNAL_PARAMS),
              "factor pack": set(factor_pack.params_schema()), "plan": PLAN_WORDS}
    owners = {}
    for table, names in tables.items():
        for n in names:
            assert n not in owners, f"{n} is declared by {owners[n]} and {table}"
            owners[n] = table
    assert set(owners) == set(planmod.PARAMS)


@pytest.mark.parametrize("name", [n for n, b in SPEC_SETTINGS.items() if b.form is not None])
def test_the_forms_range_lies_inside_the_settings_range(name):
    b, form = SPEC_SETTINGS[name], SPEC_SETTINGS[name].form
    if b.kind in ("numbers", "list"):
        return
    lo = form.get("minimum", form.get("exclusiveMinimum"))
    edges = [v for v in (lo, form.get("maximum")) if v is not None]
    for v in edges:
        if v == form.get("exclusiveMinimum"):
            v = math.nextafter(v, math.inf)
        assert b.accepts(v), (name, v)       # a value the form allows is a value the spec takes


def test_the_command_line_reaches_every_param():
    dests = {a.dest for a in _rate_parser()._actions}
    missing = set(planmod.PARAMS) - dests - VIA_R_SAT_MS - {"workload_text", "seed_source"}
    assert not missing, f"Params the command line cannot set: {sorted(missing)}"
    flagged = {n for n, b in SPEC_SETTINGS.items() if b.flag}
    assert flagged <= dests and {"width", "max_trials", "confidence", "runlength_s"} <= flagged


@pytest.mark.parametrize("flag,value,field", [
    ("--width", "0.2", "width"), ("--confidence", "0.9", "confidence"), ("--accuracy", "0.7", "accuracy"),
    ("--runlength-s", "7", "runlength_s"), ("--budget-s", "900", "budget_s"), ("--max-trials", "12", "max_trials"),
    ("--first-load", "300", "first_load"), ("--seed-load", "2500", "seed_load")])
def test_a_flag_reaches_the_spec_of_the_plan(flag, value, field):
    args = cli._parser().parse_args(["rate", "--profile", "smoke", flag, value])
    spec = cli.build_plan(args, "r1").rating_spec()
    assert getattr(spec, field) == pytest.approx(float(value))


def test_a_bad_flag_value_is_refused_naming_the_setting():
    args = cli._parser().parse_args(["rate", "--width", "1.5"])
    with pytest.raises(cli.UsageError, match="width"):
        cli.build_plan(args, "r1")


def test_server_factors_reach_params_flags_and_role_vars_alike():
    dests = {a.dest for a in _rate_parser()._actions}
    for f in factors.FACTORS:
        assert f.name in planmod.PARAMS and f.name in dests
        assert factors.factor_vars({f.name: f.default}) == {f.role_var: f.default}


def test_no_spec_setting_is_spelled_as_a_schema_or_flag_elsewhere():
    """A setting's name, bounds and help live in its declaration: no other module writes a Params
    entry ("name": dict(type=...)) or a --flag for it."""
    flags = {"--" + n.replace("_", "-") for n in SPEC_SETTINGS} - {
        "--r-sat-ms"}   # the command line's goal list R[/L],R[/L],… (cli_args.r_sat_goals), not one setting
    bad = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values):
                    if isinstance(k, ast.Constant) and k.value in SPEC_SETTINGS and isinstance(v, ast.Call) \
                            and any(kw.arg == "type" for kw in v.keywords):
                        bad.append(f"{path.relative_to(SRC)}:{node.lineno}: {k.value}")
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" and \
                    not (path.name == "cli_args.py" and _in_function(path, node.lineno, "compare_parser")):
                bad += [f"{path.relative_to(SRC)}:{node.lineno}: {a.value}" for a in node.args
                        if isinstance(a, ast.Constant) and a.value in flags]
    assert not bad, bad


def _in_function(path: Path, lineno: int, name: str) -> bool:
    """`workbench compare --confidence` is the comparison's own level, not the spec's."""
    fn = next(n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef) and n.name == name)
    return fn.lineno <= lineno <= fn.end_lineno


def test_bounds_accept_and_describe():
    b = Bounds("number", lo=0, hi=1, lo_open=True)
    assert b.accepts(0.5) and b.accepts(1) and not b.accepts(0) and not b.accepts(math.nan)
    assert not b.accepts(True) and not b.accepts("0.5") and not b.accepts(math.inf)
    assert b.describe() == "a number > 0 and <= 1"
    assert Bounds("integer", lo=2, hi=5).describe() == "an integer in [2, 5]"
    assert not Bounds("integer", lo=2, hi=5).accepts(2.0)
    assert Bounds("number", lo=0, inf_ok=True).accepts(math.inf)
    assert Bounds("numbers", lo=0, lo_open=True).accepts([1, 2]) and not Bounds("numbers").accepts([])


def test_check_settings_names_the_class_and_field():
    @dataclasses.dataclass(frozen=True)
    class Knobs:
        share: float = setting(0.5, "a share", lo=0, hi=1)

    check_settings(Knobs())
    with pytest.raises(ValueError, match=r"Knobs.share must be a number >= 0 and <= 1, got 2"):
        check_settings(Knobs(share=2))


def test_help_with_a_percent_sign_prints():
    p = argparse.ArgumentParser()
    p.add_argument("--x", help=settings.cli_help("share (%) of x"))
    assert "share (%) of x" in p.format_help()
