"""Tenant B's Params (config.tenants): the plan, the checks, the CLI flags, the sweep factor."""
from __future__ import annotations

import pytest

from workbench import cli
from workbench.config.tenants import TENANT_FACTOR_NAMES, describe
from workbench.params.plan import ParamError, plan_from_params
from workbench.pipeline.sweep_plan import NUMERIC_FACTORS, factor_space


def test_tenant_b_in_the_plan_and_its_words():
    assert plan_from_params({"profile": "smoke"}, "r").background == {}
    p = plan_from_params({"profile": "smoke", "workload": "mail", "background_ops_s": 40}, "r")
    assert p.background == {"ops_s": 40.0, "workload": "mail", "load_hosts": 1}
    assert p.server_text().endswith("; tenant B: mail at 40 ops/s from 1 load host")
    two = plan_from_params({"profile": "smoke", "background_ops_s": 40, "background_workload": "db_tp",
                            "background_load_hosts": 2}, "r").background
    assert describe(two) == "tenant B: db_tp at 40 ops/s from 2 load hosts"
    assert describe(plan_from_params({"profile": "smoke", "background_ops_s": 0}, "r").background) == \
        "tenant B idle (web_server)"


@pytest.mark.parametrize("params, match", [
    ({"background_ops_s": -1}, r"background_ops_s: -1 is out of range \(≥ 0"),
    ({"background_workload": "mail"}, "background_workload: only with background_ops_s"),
    ({"background_ops_s": 10, "background_workload": "nfs"}, "background_workload: 'nfs' is not one of"),
    ({"background_ops_s": 10, "background_load_hosts": 0}, "background_load_hosts: 0 is out of range"),
    ({"background_ops_s": 10, "workload_text": "base = mail\n"}, "background_workload: tenant B needs a canned"),
])
def test_bad_tenant_b_params_name_the_field(params, match):
    with pytest.raises(ParamError, match=match):
        plan_from_params({"profile": "smoke", **params}, "r")


def test_cli_flags_and_the_sweep_factor():
    args = cli._parser().parse_args(["rate", "--background-ops-s", "75.5", "--background-workload", "mail"])
    assert cli.build_plan(args, "r").background == {"ops_s": 75.5, "workload": "mail", "load_hosts": 1}
    assert set(TENANT_FACTOR_NAMES) <= set(NUMERIC_FACTORS)
    (f,) = factor_space({"background_ops_s": [0, 50.5, 200]}).factors
    assert f.name == "background_ops_s" and not f.integer and f.levels == (0, 50.5, 200)
