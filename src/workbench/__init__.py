"""Workbench: the peak rate λ* of NFS server configurations, and response surfaces of it.

The public API, importable from here (loaded on first use, so that ``import workbench`` stays
cheap for the DAG files):

    from workbench import RatingSpec, SimulatedServer, find_peak
    res = find_peak(RatingSpec(r_sat_ms=40), SimulatedServer(capacity_ops_s=1200, seed=1).measure)

Layers, imports pointing one way (tests/test_layering.py): config → stats → controller →
measure, planning → analysis, params, store → lease, output → pipeline → cli, dagrun.
"""

from __future__ import annotations

import importlib
from typing import Any

_API = {
    "RatingSpec": "workbench.controller.spec",
    "TrialResult": "workbench.controller.trial",
    "PeakResult": "workbench.controller.result",
    "NextTrial": "workbench.controller.decide",
    "Done": "workbench.controller.decide",
    "decide": "workbench.controller.decide",
    "find_peak": "workbench.controller.decide",
    "SimulatedServer": "workbench.measure.simulated",
    "Measurer": "workbench.measure.protocol",
}
__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
