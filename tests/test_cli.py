"""`workbench rate` from the command line: the rate_peak steps over a LocalStore, resumable.

The test kills a real rating (SIGKILL to its whole process group, as a crashed shell or a lost
terminal would) once two trials are stored, runs the same command again with the same
``--results``, and checks that the finished rating holds every trial exactly once: the trials
stored before the kill are not run again, and the log has no gap and no duplicate.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_harness import INTEGRATION_SLOT, rating_files

REPO = Path(__file__).resolve().parent.parent
WORKBENCH = str(Path(sys.executable).parent / "workbench")


def _rate(results: Path) -> list[str]:
    return [WORKBENCH, "rate", "--workload", "web_server", "--profile", "smoke", "--slot", INTEGRATION_SLOT,
            "--results", str(results)]


def _wait_for(path: Path, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the rating ended (rc {proc.returncode}) before {path.name} was stored:\n"
                                 f"{proc.stdout.read()[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} not stored within {timeout_s:.0f} s")
        time.sleep(0.2)


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_rate_killed_after_two_trials_resumes_with_every_trial_once(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, loop devices, cgroups)")
    results = tmp_path / "rating"
    trials_dir = results / "ratings" / results.name / "trials"
    first = subprocess.Popen(_rate(results), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, start_new_session=True)
    try:
        _wait_for(trials_dir / "00001.json", first, timeout_s=300)
    finally:
        os.killpg(first.pid, signal.SIGKILL)        # the CLI, ansible-playbook and what they started
        first.wait(timeout=30)
    before = {f.name: f.read_bytes() for f in trials_dir.glob("*.json")}
    assert {"00000.json", "00001.json"} <= set(before), sorted(before)
    assert not (results / "ratings" / results.name / "result.json").exists()
    time.sleep(5)                                    # an orphaned fstress ends with its trial (2 s)

    again = subprocess.run(_rate(results), cwd=REPO, capture_output=True, text=True, timeout=480)
    assert again.returncode in (0, 1), again.stderr[-3000:]          # 1: finished, not converged
    res, trials, rating = rating_files(results)
    assert [t["n"] for t in trials] == list(range(len(trials))), [t["n"] for t in trials]
    assert res["n_trials"] == len(trials) > len(before)
    for name, data in before.items():                # stored before the kill: kept, never re-run
        assert (trials_dir / name).read_bytes() == data, name
    assert f"resuming after {len(before)} stored trial(s)" in again.stderr, again.stderr[-3000:]
    rerun = [ln for ln in again.stderr.splitlines() if ln.lstrip().startswith("trial ")]
    first_rerun = int(rerun[0].split()[1].rstrip(":"))
    assert first_rerun == len(before), rerun[:3]     # the re-run starts after the stored trials
    assert (rating / "report.html").is_file() and json.loads((rating / "spec.json").read_text())
    assert "peak rate λ*" in again.stdout
