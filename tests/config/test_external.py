"""External server mode: the endpoint's checks, the refusal of server factors, the plan, the
harness's playbooks and the report — without a host (the real filer runs in tests/pipeline)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.report import rating_report_html
from helpers import FAKE_PROBE_V41, FakeRunner
from workbench import cli
from workbench.config.external import external_factors, external_server, refuse_server_factors
from workbench.measure.ansible import AnsibleHarness
from workbench.params.plan import ParamError, plan_from_params

FILER = {"server_address": "10.251.11.1", "server_export": "/export", "server_description": "lab filer"}
PROBE = {"nfs_port": 2049, "mount_port": 20048, "nfs_port_from": "portmapper", "mount_port_from": "portmapper",
         "rpc_programs": [{"program": 100003, "name": "nfs", "version": 3, "protocol": "tcp", "port": 2049}],
         "fsinfo": {"rtmax": 1048576, "wtmax": 1048576}, "fsstat": {"tbytes": 10 << 30},
         "pathconf": {"name_max": 255}, "rtt_us": {"n": 20, "min": 40, "median": 55, "p90": 80, "max": 120}}


def test_no_address_means_the_slots_own_server():
    assert external_server({}) is None
    with pytest.raises(ValueError, match="server_export: only with server_address"):
        external_server({"server_export": "/export"})


@pytest.mark.parametrize("params, match", [
    ({"server_address": "10.0.0.1"}, "server_export must be an absolute path"),
    ({"server_address": "10.0.0.1", "server_export": "export"}, "server_export must be an absolute path"),
    ({"server_address": "bad host!", "server_export": "/x"}, "server_address must be an IP address or a host name"),
    ({**FILER, "server_nfs_port": 0}, "server_nfs_port must be a port number"),
    ({**FILER, "server_mount_port": 70000}, "server_mount_port must be a port number"),
    ({**FILER, "server_description": "two\nlines"}, "server_description must be one line"),
])
def test_bad_endpoints_are_refused_naming_the_word(params, match):
    with pytest.raises(ValueError, match=match):
        external_server(params)


def test_ports_absent_are_asked_of_the_portmapper():
    e = external_server({**FILER, "server_address": "filer.example.org", "server_mount_port": 635})
    assert e.endpoint() == {"address": "filer.example.org", "nfs_port": 0, "mount_port": 635, "export": "/export"}


def test_server_factors_are_refused_by_name():
    refuse_server_factors({"fs": None, "threads": None})
    with pytest.raises(ValueError, match=r"server factor\(s\) fs=xfs, threads=8 cannot apply to an external"):
        refuse_server_factors({"fs": "xfs", "threads": 8})


def test_an_external_plan_records_no_server_factors():
    plan = plan_from_params({**FILER, "profile": "smoke"}, "r1")
    assert plan.factors == {}                      # the profile's ext4/128 MiB/100 IOPS do not apply
    assert plan.external == {"address": "10.251.11.1", "export": "/export", "nfs_port": 0, "mount_port": 0,
                             "description": "lab filer"}
    assert plan.server_text() == "external server 10.251.11.1:/export (lab filer)"
    with pytest.raises(ParamError, match="fs=xfs cannot apply to an external server"):
        plan_from_params({**FILER, "fs": "xfs"}, "r2")


def test_nfs_version_is_the_one_factor_an_external_server_takes():
    """The protocol the load hosts speak: over 4.1 no portmapper (port 0 = 2049) and no MOUNT."""
    plan = plan_from_params({**FILER, "profile": "smoke", "nfs_version": "4.1"}, "r1")
    assert plan.factors == {"nfs_version": "4.1"} and plan.external["nfs_port"] == 0
    refuse_server_factors({"nfs_version": "4.1"})
    with pytest.raises(ParamError, match=r"server factor\(s\) threads=8 cannot apply"):
        plan_from_params({**FILER, "nfs_version": "4.1", "threads": 8}, "r2")
    with pytest.raises(ParamError, match=r"server_mount_port: NFSv4.1 has no MOUNT protocol"):
        plan_from_params({**FILER, "nfs_version": "4.1", "server_mount_port": 20048}, "r3")
    assert external_factors(external_server({**FILER, "server_mount_port": 635}), {"nfs_version": "3"}) == \
        {"nfs_version": "3"}
    with pytest.raises(ParamError, match=r"nfs_version: '4\.0' is not one of 3, 4\.1"):
        plan_from_params({**FILER, "nfs_version": "4.0"}, "r4")


def test_cli_refuses_a_server_factor_on_an_external_server(capsys):
    argv = ["rate", "--server-address", "10.251.11.1", "--server-export", "/export", "--check"]
    assert cli.main(argv + ["--fs", "xfs"]) == 2
    assert "fs=xfs cannot apply to an external server" in capsys.readouterr().err
    assert cli.main(argv) == 0
    assert "external server 10.251.11.1:/export" in capsys.readouterr().out


def _probe_runner():
    runner = FakeRunner()

    def run(playbook, extravars, **kw):
        if Path(playbook).name == "probe_server.yml":
            Path(extravars["probe_dest"]).write_text(json.dumps(PROBE))
        return FakeRunner.__call__(runner, playbook, extravars, **kw)
    return runner, run


def test_harness_probes_instead_of_provisioning_and_never_touches_a_server(tmp_path):
    runner, run = _probe_runner()
    plan = plan_from_params({**FILER, "profile": "smoke"}, "r1")
    h = AnsibleHarness(slot="slot1", results_dir=tmp_path, runner=run, external=plan.external)
    h.provision()
    h.deploy()
    h.measure(500, 2, trial_id=0, check_server=True)
    h.teardown()
    assert [c[0] for c in runner.calls] == ["probe_server.yml", "deploy_loadgen.yml", "run_trial.yml", "teardown.yml"]
    endpoint = {k: plan.external[k] for k in ("address", "nfs_port", "mount_port", "export")}
    for _, v in runner.calls:
        assert v["fstress_endpoint"] == endpoint and v["wb_external"] is True
        assert not any(k.startswith("nfs_server_") for k in v)
    assert runner.calls[2][1]["ensure_server"] is False
    info = json.loads((tmp_path / "sysinfo.json").read_text())
    assert info["mode"] == "external" and info["server"]["description"] == "lab filer"
    assert info["server"]["endpoint"]["mount_port"] == 20048 and info["probe"]["fsinfo"]["rtmax"] == 1048576


def test_harness_probes_an_external_server_over_nfs41(tmp_path):
    """The factor reaches the probe (fstress_nfs_version defaults to it) and every later playbook;
    sysinfo keeps the session the server granted, and the report shows it."""
    runner = FakeRunner()

    def run(playbook, extravars, **kw):
        if Path(playbook).name == "probe_server.yml":
            Path(extravars["probe_dest"]).write_text(json.dumps(FAKE_PROBE_V41))
        return FakeRunner.__call__(runner, playbook, extravars, **kw)
    plan = plan_from_params({**FILER, "profile": "smoke", "nfs_version": "4.1"}, "r1")
    h = AnsibleHarness(slot="slot1", results_dir=tmp_path, runner=run, external=plan.external, factors=plan.factors)
    h.provision()
    h.deploy()
    assert [c[0] for c in runner.calls] == ["probe_server.yml", "deploy_loadgen.yml"]
    assert all(v["nfs_server_nfs_version"] == "4.1" for _, v in runner.calls)
    info = json.loads((tmp_path / "sysinfo.json").read_text())
    assert info["server"]["endpoint"]["nfs_port"] == 2049 and info["server"]["endpoint"]["mount_port"] == 0
    html = rating_report_html(plan.to_dict(), {"peak_rate": 900.0, "converged": True, "reason": "ok"}, [],
                              sysinfo=info)
    assert "NFSv4.1 session the server granted" in html and "max_slots" in html and "67108864" in html


def test_report_says_external_server_and_shows_what_the_client_learnt():
    plan = plan_from_params({**FILER, "profile": "smoke"}, "r1")
    info = {"mode": "external", "host": "10.251.11.1", "probe": PROBE,
            "server": {"kind": "external server", "description": "lab filer",
                       "endpoint": {"address": "10.251.11.1", "export": "/export", "nfs_port": 2049,
                                    "mount_port": 20048}}}
    result = {"peak_rate": 900.0, "converged": True, "bracket": [850, 900], "reason": "ok"}
    html = rating_report_html(plan.to_dict(), result, [], sysinfo=info)
    assert "external server 10.251.11.1:/export (lab filer)" in html
    for text in ("2049 (portmapper)", "RPC programs (portmapper)", "FSINFO of the export", "1048576",
                 "PATHCONF of the export", "median 55 µs"):
        assert text in html, text


def test_history_seeds_an_external_rating_only_from_the_same_filer(tmp_path):
    from workbench.store.local import LocalStore
    from workbench.params.seeds import history_seed
    store = LocalStore(tmp_path)
    ext = plan_from_params({**FILER, "profile": "smoke"}, "ext")
    own = plan_from_params({"profile": "smoke"}, "own")
    other = plan_from_params({**FILER, "server_address": "10.9.9.9", "profile": "smoke"}, "other")
    for plan, peak in ((ext, 700.0), (own, 900.0), (other, 5000.0)):
        store.put_json(store.rating_key(plan.rating_id, "spec.json"), plan.to_dict())
        store.put_json(store.rating_key(plan.rating_id, "result.json"), {"peak_rate": peak, "converged": True})
    again = plan_from_params({**FILER, "profile": "smoke"}, "again")
    assert history_seed(store, again) == 700.0
    v41 = plan_from_params({**FILER, "profile": "smoke", "nfs_version": "4.1"}, "v41")
    assert history_seed(store, v41) is None                   # rated over v3 only so far
    store.put_json(store.rating_key("v41", "spec.json"), v41.to_dict())
    store.put_json(store.rating_key("v41", "result.json"), {"peak_rate": 650.0, "converged": True})
    assert history_seed(store, plan_from_params({**FILER, "profile": "smoke", "nfs_version": "4.1"}, "x")) == 650.0
    assert history_seed(store, plan_from_params({**FILER, "profile": "smoke"}, "y")) == 700.0   # unset = "3"
    assert history_seed(store, plan_from_params({**FILER, "profile": "smoke", "nfs_version": "3"}, "z")) == 700.0
    assert history_seed(store, plan_from_params({"profile": "smoke"}, "own2")) == 900.0


def test_sweeps_and_nightly_baselines_take_the_external_words(tmp_path):
    from workbench.pipeline.nightly_config import load_nightly_config
    from workbench.pipeline.sweep import plan_sweep
    # map_surface: the endpoint goes in `fixed`; a server factor swept on it is refused by name
    with pytest.raises(ParamError, match=r"read_iops=100 cannot apply to an external server"):
        plan_sweep({"factors": {"read_iops": [100, 200]}, "fixed": FILER}, "sw")
    cfg = tmp_path / "nightly.yml"
    cfg.write_text("baselines:\n  - name: filer\n    params: " + json.dumps({**FILER, "workload": "db_tp"}) + "\n")
    assert load_nightly_config(cfg)["baselines"][0]["params"]["server_address"] == "10.251.11.1"
    cfg.write_text("baselines:\n  - name: filer41\n    params: " + json.dumps({**FILER, "nfs_version": "4.1"}) + "\n")
    assert load_nightly_config(cfg)["baselines"][0]["params"]["nfs_version"] == "4.1"
    cfg.write_text("baselines:\n  - name: filer41\n    params: " + json.dumps({**FILER, "nfs_version": "4.0"}) + "\n")
    with pytest.raises(ParamError, match="nfs_version: '4.0' is not one of 3, 4.1"):
        load_nightly_config(cfg)
    cfg.write_text("baselines:\n  - name: filer\n    params: " + json.dumps({**FILER, "threads": 8}) + "\n")
    with pytest.raises(ParamError, match="threads=8 cannot apply"):
        load_nightly_config(cfg)
