"""The contracts of the measurers: what the controller calls and what the pipeline calls.

`Measurer` is the controller's only view of a server (``find_peak(spec, m.measure)``): the
Ansible harness and the simulated server both implement it. `Harness` adds the life cycle of a
real testbed that the pipeline's steps drive (provision → deploy → warm-up → trials → teardown).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from workbench.controller.trial import TrialResult


@runtime_checkable
class Measurer(Protocol):
    def measure(self, load_ops_s: float, runlength_s: float) -> TrialResult:
        """One trial at `load_ops_s` for `runlength_s`; invalid trials say why, never raise."""
        ...


class Harness(Measurer, Protocol):
    results_dir: Path

    def measure(
        self,
        load_ops_s: float,
        runlength_s: float,
        *,
        trial_id: int | str | None = None,
        check_server: bool | None = None,
    ) -> TrialResult:
        """Measurer.measure; a pipeline step (one Airflow task per trial) also names the trial
        (trial_id) and says whether to make sure the server runs first (check_server)."""
        ...

    def provision(self) -> Any: ...

    def deploy(self) -> Any: ...

    def warm_up(self, load_ops_s: float, duration_s: float) -> TrialResult: ...

    def teardown(self) -> Any: ...


HarnessFactory = Callable[..., Harness]  # AnsibleHarness(slot=..., inventory=..., factors=..., ...)
