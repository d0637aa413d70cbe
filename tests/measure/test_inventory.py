"""Slots and load hosts read from the inventories we ship: the check that runs before any host changes."""
from __future__ import annotations

import pytest
import json
from pathlib import Path

from helpers import REPO, FakeRunner, fstress_json

from workbench import cli
from workbench.measure.ansible import AnsibleHarness
from workbench.measure.inventory import (InventoryError, host_vars, inventory_groups, inventory_slots,
                                        slot_background_hosts, slot_load_hosts)

LOCAL = REPO / "inventory" / "local" / "hosts.yml"


def test_groups_collect_hosts_through_children():
    groups = inventory_groups(LOCAL)
    assert groups["slot1"] == ["sut1", "load1"] and groups["loadgen"] == ["load1", "load2"]
    assert set(groups["all"]) == {"sut1", "sut2", "load1", "load2"}


def test_slots_are_groups_of_hosts_with_a_load_host():
    assert inventory_slots(LOCAL) == ["slot1", "slot2"]
    assert inventory_slots(REPO / "inventory" / "external" / "hosts.yml") == ["filer1"]
    assert inventory_slots(REPO / "inventory" / "ssh" / "hosts.yml") == ["sshslot1"]
    # tenant B's group lists load hosts too, but is no slot (it spans the slots)
    assert inventory_slots(REPO / "inventory" / "tenants" / "hosts.yml") == ["slot1", "slot2"]
    # a host's variables as Ansible sees them: all, then its groups, then its own
    hv = host_vars(LOCAL, "load1")
    assert hv["fstress_cpus"] == "1" and hv["ansible_connection"] == "local" and hv["wb_netns"] == "wb-load1"
    assert host_vars(LOCAL, "sut2")["nfs_server_cpus"] == "0"


def test_a_slots_load_hosts_and_too_few_of_them(tmp_path):
    assert slot_load_hosts(LOCAL, "slot2") == ["load2"]
    assert slot_load_hosts(REPO / "inventory" / "external" / "hosts.yml", "filer1") == ["xload1"]
    with pytest.raises(InventoryError, match=r"needs 2 load hosts; slot slot1 of .* has 1 \(load1\)"):
        slot_load_hosts(LOCAL, "slot1", 2)
    with pytest.raises(InventoryError, match=r"slot: 'all2' is not a slot of .*; slots: slot1, slot2"):
        slot_load_hosts(LOCAL, "all2")
    for group in ("all", "sut", "loadgen"):          # groups, but not slots
        with pytest.raises(InventoryError, match=rf"slot: '{group}' is not a slot"):
            slot_load_hosts(LOCAL, group)
    with pytest.raises(InventoryError, match="slot filer1 of .* has no SUT host"):
        slot_load_hosts(REPO / "inventory" / "external" / "hosts.yml", "filer1", server=True)
    bad = tmp_path / "bad.yml"
    bad.write_text("all: [unclosed")
    with pytest.raises(InventoryError, match="inventory: cannot read"):
        slot_load_hosts(bad, "slot1")


def test_too_few_load_hosts_fail_before_any_playbook(tmp_path, capsys):
    runner = FakeRunner()
    with pytest.raises(InventoryError, match="needs 3 load hosts"):
        AnsibleHarness(slot="slot1", results_dir=tmp_path, runner=runner, load_hosts=3)
    assert runner.calls == []
    assert cli.main(["rate", "--load-hosts", "2", "--check"]) == 2
    assert "needs 2 load hosts; slot slot1" in capsys.readouterr().err


def test_a_relative_inventory_is_made_absolute(tmp_path, monkeypatch):
    # ansible-runner runs in its private data directory: a relative path there matches no host
    monkeypatch.chdir(REPO)
    h = AnsibleHarness(slot="slot1", inventory="inventory/local/hosts.yml", results_dir=tmp_path, runner=FakeRunner())
    assert h.inventory == LOCAL and h.inventory.is_absolute()


def test_the_playbooks_run_on_the_chosen_load_hosts(tmp_path):
    runner = FakeRunner()
    h = AnsibleHarness(slot="slot2", results_dir=tmp_path, runner=runner)
    h.deploy()
    h.measure(100, 1)
    assert {c[1]["wb_load_hosts"] for c in runner.calls} == {"load2"}


TENANTS = REPO / "inventory" / "tenants" / "hosts.yml"


def test_tenant_b_hosts_are_apart_from_the_rated_workloads():
    """Group `background` (config.tenants): never a load host of A; tenant B's, asked by number."""
    assert slot_load_hosts(TENANTS, "slot1") == ["tload1"]
    assert slot_background_hosts(TENANTS, "slot2", 1) == ["tload2b"]
    with pytest.raises(InventoryError, match="background_load_hosts: tenant B needs 2 load hosts .* it has 1"):
        slot_background_hosts(TENANTS, "slot1", 2)
    with pytest.raises(InventoryError, match="it has 0"):
        slot_background_hosts(LOCAL, "slot1", 1)


def test_tenant_b_runs_beside_every_trial_and_its_result_is_read_apart(tmp_path):
    """The harness names B's hosts, load and workload to the playbooks and reads B's merge (its own
    file, beside the trial's) into raw["background"]; B idle (0 ops/s) passes nothing."""
    def result(extravars):
        b = fstress_json(offered_rate=150.0, achieved_rate=150.0, mean_ms=7.0)
        Path(extravars["background_out"]).write_text(json.dumps(b))
        return fstress_json()
    runner = FakeRunner(result=result)
    h = AnsibleHarness(slot="slot1", inventory=TENANTS, results_dir=tmp_path, runner=runner,
                       background={"ops_s": 150.0, "workload": "mail", "load_hosts": 1})
    t = h.measure(500, 5, trial_id=3)
    v = runner.calls[-1][1]
    assert (v["wb_load_hosts"], v["wb_background_hosts"], v["background_ops_s"], v["background_workload"]) == \
        ("tload1", "tload1b", 150.0, "mail")
    assert v["background_out"] == str(tmp_path / "trials" / "3.background.json")
    assert t.valid and t.mean_ms == 3.5 and t.raw["background"]["mean_ms"] == 7.0
    idle = FakeRunner()
    AnsibleHarness(slot="slot1", inventory=TENANTS, results_dir=tmp_path, runner=idle,
                   background={"ops_s": 0.0, "workload": "mail", "load_hosts": 1}).measure(500, 5)
    assert not any("wb_background_hosts" in c[1] or "background_out" in c[1] for c in idle.calls)
