"""The one vocabulary against what it names: the canned workloads are fstress's own."""
from __future__ import annotations

import subprocess

from workbench.config.paths import FSTRESS
from workbench.config.profiles import FAMILY_OF_WORKLOAD
from workbench.config.vocabulary import CANNED_WORKLOADS


def test_canned_workloads_are_fstress_workloads(fstress_bin):
    out = subprocess.run([str(FSTRESS), "workloads"], capture_output=True, text=True, check=True, timeout=30)
    names = [line.split()[0] for line in out.stdout.splitlines() if line.strip()]
    assert sorted(names) == sorted(CANNED_WORKLOADS)
    assert "genomics" in names


def test_every_canned_workload_has_a_simulated_family():
    assert set(FAMILY_OF_WORKLOAD) == set(CANNED_WORKLOADS)
