"""Every benchmark under bench/ still imports and prints its help: the modules it reads move (a
split moved `holding` and `surface_grid`, and bench/bottleneck.py shadowed pandas' optional
`bottleneck` for scripts in its folder) and nothing else in the suite runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# modules the scripts import from each other, not scripts themselves
NOT_SCRIPTS = {"__init__.py"}
HELP_TIMEOUT_S = 120


def test_every_bench_script_prints_its_help():
    scripts = sorted(p for p in (REPO / "bench").glob("*.py") if p.name not in NOT_SCRIPTS)
    assert len(scripts) >= 20
    procs = {
        p.name: subprocess.Popen(
            [sys.executable, str(p), "--help"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for p in scripts
    }
    failed = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=HELP_TIMEOUT_S)
        if proc.returncode != 0 or "usage" not in out.lower():
            failed[name] = (proc.returncode, err.strip().splitlines()[-1:] or out[:200])
    assert not failed, failed
