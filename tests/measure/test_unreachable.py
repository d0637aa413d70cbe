"""A load host that cannot be reached is the harness's failure, not the server's invalid trial.

Real ansible-runner and OpenSSH: for one trial the slot's hosts are reached over SSH on a port
where nothing listens (extra-vars override the inventory's local connection), so Ansible reports
the load host unreachable before fstress runs. No namespace, server or lease of the slot is touched:
the first play only includes tasks whose condition is false, and asserts run on the controller.
"""
from __future__ import annotations

import socket
import time

from workbench.config.paths import DEFAULT_INVENTORY
from workbench.measure.ansible import AnsibleHarness


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]        # closed again when the block ends: nothing listens


def test_an_unreachable_load_host_is_a_harness_failure_not_an_invalid_trial(tmp_path):
    unreachable = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": _closed_port(),
                   "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes "
                                              "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"}
    h = AnsibleHarness(slot="slot1", inventory=DEFAULT_INVENTORY, results_dir=tmp_path, extravars=unreachable)
    t0 = time.monotonic()
    t = h.measure(100.0, 1.0, trial_id=0, check_server=False)
    print(f"unreachable trial judged in {time.monotonic() - t0:.1f} s: {t.reason}")
    assert t.harness_failure and not t.valid and t.outcome == "harness", t
    assert "load1" in t.reason and "unreachable" in t.reason.lower(), t.reason
    assert h.last_run is not None and h.last_run.stats.get("dark", {}).get("load1"), h.last_run.stats
