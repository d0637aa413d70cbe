"""A step killed with SIGTERM inside `killable`: its children stop, a detached teardown starts (and
survives the step), RatingKilled unwinds the step past `except Exception`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]

STEP = textwrap.dedent("""
    import json, subprocess, sys, time
    from workbench.params.plan import plan_from_params
    from workbench.pipeline import stop
    plan = plan_from_params({"profile": "smoke", "slot": "slot1"}, "killed-step")
    plan = plan.__class__.from_dict({**plan.to_dict(), "workdir": sys.argv[1]})
    try:
        with stop.killable(plan):
            child = subprocess.Popen(["sleep", "60"], start_new_session=True)   # as Ansible's workers
            print(json.dumps({"child": child.pid}), flush=True)
            try:
                time.sleep(60)
            except Exception:
                print("swallowed", flush=True)
    except stop.RatingKilled as e:
        print(json.dumps({"killed": str(e)}), flush=True)
        sys.exit(143)
""")


def test_sigterm_stops_the_children_starts_a_detached_teardown_and_unwinds(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}", "WB_WORKDIR": str(tmp_path / "state")}
    p = subprocess.Popen([sys.executable, "-c", STEP, str(tmp_path / "work")], stdout=subprocess.PIPE, text=True,
                         env=env)
    child = json.loads(p.stdout.readline())["child"]
    p.send_signal(signal.SIGTERM)
    out = p.stdout.read()
    assert p.wait(timeout=30) == 143, out
    assert "swallowed" not in out and "killed-step killed on slot1" in out
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    log = tmp_path / "work" / "teardown-after-kill.log"
    deadline = time.monotonic() + 60
    while "nothing to tear down" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no teardown log"
        time.sleep(0.2)
