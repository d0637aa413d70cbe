"""Factor packs (config/factor_pack.py): loading and refusing a pack in one line naming its file and
field; the pack's levels among the Params, in a sweep's plan and on the command line; the harness
applying them (fake runner) and resetting after a failed apply. The real path, an external Ganesha's
two knobs swept by map_surface: tests/dags/test_factor_pack_sweep.py."""
from __future__ import annotations

from pathlib import Path

import pytest
from helpers import FakeRunner

from workbench.cli_args import UsageError, pack_levels
from workbench.config.factor_pack import FactorPack, PackError, level_vars, load_pack
from workbench.measure.ansible import AnsibleHarness, HarnessError
from workbench.measure.playbook import PlaybookRun
from workbench.params.pack import confined_pack
from workbench.params.plan import ParamError, RatingPlan, plan_from_params
from workbench.pipeline.sweep_plan import plan_sweep, space_of

PACK = """\
factors:
  - {name: nb_worker, type: int, levels: [16, 64], sweep: numeric, help: "Ganesha NB_Worker"}
  - {name: cache_mode, type: str, levels: [a, b], sweep: categorical}
  - {name: dedup, type: bool, levels: [true, false]}
apply: apply.yml
reset: reset.yml
"""
FILER = {"server_address": "10.251.11.1", "server_export": "/export"}


def write_pack(tmp_path: Path, text: str = PACK, tasks=("apply.yml", "reset.yml")) -> Path:
    for name in tasks:
        (tmp_path / name).write_text("- ansible.builtin.debug: {msg: levels}\n")
    path = tmp_path / "filer.yml"
    path.write_text(text)
    return path


def test_a_pack_loads_with_its_tasks_beside_it_and_round_trips(tmp_path):
    pack = load_pack(write_pack(tmp_path))
    assert pack.names() == ("nb_worker", "cache_mode", "dedup")
    assert pack.names("numeric") == ("nb_worker",) and pack.names("categorical") == ("cache_mode", "dedup")
    assert pack.apply == str(tmp_path / "apply.yml") and pack.reset == str(tmp_path / "reset.yml")
    assert pack.hosts == "" and pack.by_name["nb_worker"].help == "Ganesha NB_Worker"
    assert FactorPack.from_dict(pack.to_dict()) == pack
    # an int takes any whole number in its levels' range, a str one of its levels; CLI text converts
    assert pack.check_levels({"nb_worker": "32", "cache_mode": "b", "dedup": "true", "x": None}) == \
        {"nb_worker": 32, "cache_mode": "b", "dedup": True}
    assert level_vars({"nb_worker": 32}) == {"wb_factor_levels": {"nb_worker": 32}, "nb_worker": 32}


@pytest.mark.parametrize("change,field", [
    (lambda t: t.replace("  - {name: dedup, type: bool, levels: [true, false]}\n", "  - {type: int, levels: [1, 2]}\n"),
     r"factors\[2\]\.name: missing"),
    (lambda t: t.replace("type: str", "type: float"), r"factors\[1\] \(cache_mode\)\.type: 'float' is not one of int, str, bool"),
    (lambda t: t.replace("levels: [16, 64]", "levels: [16, many]"), r"factors\[0\] \(nb_worker\)\.levels\[1\]: 'many' is not of type int"),
    (lambda t: t.replace("levels: [a, b]", "levels: [a]"), r"cache_mode\)\.levels: want a list of 2"),
    (lambda t: t.replace("name: nb_worker", "name: threads"), r"factors\[0\]\.name: 'threads' is a built-in factor"),
    (lambda t: t.replace("name: nb_worker", "name: zipf_alpha"), r"'zipf_alpha' is a built-in factor"),
    (lambda t: t.replace("name: nb_worker", "name: wb_x"), r"'wb_x' would shadow a playbook variable"),
    (lambda t: t.replace("name: cache_mode", "name: nb_worker"), r"factors: nb_worker declared twice"),
    (lambda t: t.replace("sweep: categorical", "sweep: numeric"), r"cache_mode\)\.sweep: 'numeric' is not allowed"),
    (lambda t: t.replace("apply: apply.yml", "apply: nosuch.yml"), r"apply: tasks file .*nosuch.yml not found"),
    (lambda t: t.replace("apply: apply.yml\n", ""), r"apply: give either apply \(a tasks file\) or role"),
    (lambda t: t + "role: ns.coll.filer\n", r"apply: give either apply"),
    (lambda t: t + "colour: red\n", r"unknown key\(s\) colour"),
    (lambda t: t + "hosts: '{{ evil }}'\n", r"hosts: .* is not an inventory host pattern"),
    (lambda t: t.replace("levels: [a, b]", "levels: [a, '{{ b }}']"), r"levels\[1\]: .* plain text"),
    (lambda t: "- just a list\n", r"holds a list; want a mapping"),
])
def test_a_bad_pack_is_refused_in_one_line_naming_the_file_and_the_field(tmp_path, change, field):
    path = write_pack(tmp_path, change(PACK))
    with pytest.raises(PackError, match=field) as e:
        load_pack(path)
    assert str(e.value).startswith(f"factor pack {path}: ") and "\n" not in str(e.value)


def test_a_pack_factor_may_not_take_a_params_name(tmp_path):
    path = write_pack(tmp_path, PACK.replace("name: cache_mode", "name: profile"))
    with pytest.raises(ParamError, match=r"factors\[1\]\.name: 'profile' is a built-in factor or parameter"):
        plan_from_params({"factor_pack": str(path)}, "x")


def test_the_packs_levels_travel_in_the_plan_of_an_external_filer(tmp_path):
    path = write_pack(tmp_path)
    plan = plan_from_params({**FILER, "factor_pack": str(path), "nb_worker": 64,
                             "pack_factors": {"cache_mode": "b"}}, "r1")
    assert plan.pack_factors == {"cache_mode": "b", "nb_worker": 64} and plan.factors == {}
    assert plan.factor_pack == load_pack(path).to_dict()
    again = RatingPlan.from_dict(plan.to_dict())             # as stored: spec.json, XCom
    assert again == plan and again.request().server.pack_levels == {"cache_mode": "b", "nb_worker": 64}
    assert "cache_mode b, nb_worker 64" in plan.server_text()
    old = {k: v for k, v in plan.to_dict().items() if k not in ("factor_pack", "pack_factors")}
    assert RatingPlan.from_dict(old).pack_factors == {}      # a plan stored before packs still loads


@pytest.mark.parametrize("params,match", [
    ({"nb_worker": 128}, r"nb_worker: 128 is not allowed; a whole number in \[16, 64\]"),
    ({"pack_factors": {"cache_mode": "c"}}, r"cache_mode: 'c' is not one of the pack's levels a, b"),
    ({"pack_factors": {"colour": 1}}, r"pack_factors: 'colour' is not a factor of the pack"),
    ({"nb_worker": 32, "pack_factors": {"nb_worker": 32}}, r"nb_worker: given twice"),
    ({"factor_pack": "/nonexistent/pack.yml"}, r"factor pack /nonexistent/pack.yml: not a regular file"),
])
def test_bad_levels_fail_before_any_host_changes(tmp_path, params, match):
    base = {"factor_pack": str(write_pack(tmp_path))}
    with pytest.raises(ParamError, match=match):
        plan_from_params({**base, **params}, "x")


def test_levels_without_a_pack_are_refused():
    with pytest.raises(ParamError, match="pack_factors: nb_worker: only with factor_pack"):
        plan_from_params({"pack_factors": {"nb_worker": 16}}, "x")
    with pytest.raises(ParamError, match="unknown parameter"):
        plan_from_params({"nb_worker": 16}, "x")


def test_a_sweep_varies_pack_factors_like_built_in_ones(tmp_path):
    path = write_pack(tmp_path)
    sw = plan_sweep({"profile": "smoke", "factor_pack": str(path), "factors": {"nb_worker": [16, 32, 64],
                     "cache_mode": ["a", "b"]}, "fixed": {**FILER, "dedup": False}}, "sw")
    assert len(sw["samples"]) == 6 and sw["factor_pack"]["path"] == str(path)
    for it in sw["samples"]:
        plan = RatingPlan.from_dict(it["plan"])
        assert plan.pack_factors == {**it["sample"], "dedup": False} and plan.external["address"] == "10.251.11.1"
    space = space_of(sw)                  # from the stored plan: the pack as declared, not the file
    assert space["nb_worker"].integer and [f.name for f in space.categorical] == ["cache_mode"]
    with pytest.raises(ParamError, match=r"factors\.nb_worker: 8 is not allowed"):
        plan_sweep({"factor_pack": str(path), "factors": {"nb_worker": [8, 16]}}, "sw")
    with pytest.raises(ParamError, match=r"unknown factor 'nb_worker'.*factor_pack"):
        plan_sweep({"factors": {"nb_worker": [16, 32]}}, "sw")


def test_a_pack_named_in_the_ui_lies_in_the_operators_directories(tmp_path, monkeypatch):
    """The DAGs run a pack's tasks as root: the Params may name only a pack whose file and tasks lie in
    WB_FACTOR_PACK_DIRS (the command line's user runs them as themself: not confined)."""
    ok, other = tmp_path / "ok", tmp_path / "other"
    ok.mkdir(), other.mkdir()
    pack = write_pack(ok)
    monkeypatch.delenv("WB_FACTOR_PACK_DIRS", raising=False)
    with pytest.raises(ParamError, match=r"factor_pack: factor_pack .* is outside .*\(none set; .*WB_FACTOR_PACK_DIRS"):
        confined_pack(str(pack))
    monkeypatch.setenv("WB_FACTOR_PACK_DIRS", str(ok))
    confined_pack(str(pack)), confined_pack(None), confined_pack("")
    (ok / "apply.yml").unlink()
    (ok / "apply.yml").symlink_to(write_pack(other) and other / "apply.yml")   # its tasks elsewhere
    with pytest.raises(ParamError, match=r"factor_pack: apply .*other/apply.yml is outside"):
        confined_pack(str(pack))
    with pytest.raises(ParamError, match="fixed: factor_pack is the sweep's own parameter"):
        plan_sweep({"factors": {"threads": [2, 4]}, "fixed": {"factor_pack": str(pack)}}, "sw")


def test_set_flags_parse_to_levels():
    assert pack_levels(["nb_worker=64", "cache_mode = b"]) == {"nb_worker": "64", "cache_mode": "b"}
    with pytest.raises(UsageError, match="--set: 'nb_worker' is not NAME=VALUE"):
        pack_levels(["nb_worker"])
    with pytest.raises(UsageError, match="--set: nb_worker is given twice"):
        pack_levels(["nb_worker=1", "nb_worker=2"])


class ApplyFails(FakeRunner):
    """apply_factors.yml fails on its pack's apply tasks (not on its reset); the rest as FakeRunner."""

    def __call__(self, playbook, extravars, **kw):
        run = super().__call__(playbook, extravars, **kw)
        if Path(playbook).name == "apply_factors.yml" and extravars["wb_pack_tasks"].endswith("apply.yml"):
            return PlaybookRun(rc=2, status="failed",
                               failures=["localhost: Set NB_Worker failed: non-zero return code (rc 3): no such knob"])
        return run


def _harness(tmp_path, runner, levels, **kw):
    pack = load_pack(write_pack(tmp_path))
    return AnsibleHarness(slot="slot1", results_dir=tmp_path / "r", runner=runner, factor_pack=pack.to_dict(),
                          pack_levels=levels, **kw)


def test_provision_applies_the_levels_on_the_sut_or_for_an_external_filer_on_localhost(tmp_path):
    r = FakeRunner()
    _harness(tmp_path, r, {"nb_worker": 32}).provision()
    assert [c[0] for c in r.calls] == ["provision_sut.yml", "apply_factors.yml"]
    ev = r.calls[1][1]
    assert (ev["wb_pack_hosts"], ev["wb_pack_tasks"], ev["wb_pack_role"]) == ("sut:&slot1", str(tmp_path / "apply.yml"), "")
    assert ev["wb_factor_levels"] == {"nb_worker": 32} and ev["nb_worker"] == 32
    r = FakeRunner()
    external = {"address": "10.251.11.1", "export": "/export"}
    h = _harness(tmp_path, r, {"cache_mode": "a"}, external=external)
    h.apply_pack()
    assert r.calls[0][1]["wb_pack_hosts"] == "localhost" and r.calls[0][1]["cache_mode"] == "a"
    r = FakeRunner()
    _harness(tmp_path, r, {}).provision()                   # no level chosen: the server as it is
    assert [c[0] for c in r.calls] == ["provision_sut.yml"]
    with pytest.raises(ValueError, match="nb_worker: 1 is not allowed"):
        _harness(tmp_path, FakeRunner(), {"nb_worker": 1})


def test_a_level_that_fails_to_apply_is_a_harness_failure_after_the_packs_reset(tmp_path):
    r = ApplyFails()
    h = _harness(tmp_path, r, {"nb_worker": 64, "cache_mode": "b"})
    with pytest.raises(HarnessError) as e:
        h.provision()
    msg = str(e.value)
    assert msg.startswith(f"factor pack {tmp_path / 'filer.yml'}: nb_worker=64, cache_mode=b failed to apply: "
                          "localhost: Set NB_Worker failed: non-zero return code (rc 3): no such knob; "
                          "the pack's reset ran"), msg
    assert [(c[0], c[1].get("wb_pack_tasks")) for c in r.calls[1:]] == [
        ("apply_factors.yml", str(tmp_path / "apply.yml")), ("apply_factors.yml", str(tmp_path / "reset.yml"))]


def test_a_nightly_baseline_rates_a_packs_levels(tmp_path):
    """The nightly's baselines are rate_peak Params: one per level of a pack factor, checked at load."""
    import json

    from workbench.pipeline.nightly_config import load_nightly_config
    pack = write_pack(tmp_path)
    cfg = tmp_path / "nightly.yml"
    base = {**FILER, "factor_pack": str(pack)}
    cfg.write_text("baselines:\n" + "".join(
        f"  - name: filer-w{n}\n    params: {json.dumps({**base, 'nb_worker': n})}\n" for n in (16, 64)))
    assert [b["name"] for b in load_nightly_config(cfg)["baselines"]] == ["filer-w16", "filer-w64"]
    cfg.write_text(f"baselines:\n  - name: bad\n    params: {json.dumps({**base, 'nb_worker': 65})}\n")
    with pytest.raises(ParamError, match=r"nb_worker: 65 is not allowed.*\(baseline bad\)"):
        load_nightly_config(cfg)
