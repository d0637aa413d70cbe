"""A rating step killed while it touches its slot: stop what it started, tear the slot down anyway.

Airflow kills a task with SIGTERM (then SIGKILL 5 s later); `kill PID` does the same to
`workbench rate`. Ansible's workers `setsid()`, so the generator outlives the step unless someone
stops it. While a step runs inside `killable(plan)`, SIGTERM

1. stops this process's descendants (ansible-runner, ansible-playbook, its workers and, on local
   hosts, ``fstress``) — remote generators are stopped by the teardown through their pid files;
2. starts a detached process (`main`) that tears the slot down and
   releases the lease (it outlives the SIGKILL; teardowns of one slot take turns, a second finds
   the lease released and does nothing);
3. raises RatingKilled in the step, so nothing it measured is recorded.

An operator's ``on_kill`` (the execution_timeout path, where Airflow retries the task and the lease
is kept) only does step 1: `stop_children`.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator

import psutil

from workbench.config.child_env import child_env
from workbench.params.plan import RatingPlan
from workbench.pipeline.slot import teardown

GRACE_S = 1.0
_handling: list[RatingPlan] = []  # the plan whose killable block holds the SIGTERM handler
_detached: set[int] = set()  # teardowns started by spawn_teardown: never stopped here


class RatingKilled(BaseException):
    """The step was killed (SIGTERM); its slot is being torn down by a detached process. A
    BaseException, like KeyboardInterrupt: no `except Exception` on the way may swallow it."""


def stop_children(grace_s: float = GRACE_S) -> list[int]:
    """SIGTERM every descendant of this process, SIGKILL those left after `grace_s`; their pids."""
    spared = set(_detached)
    for pid in _detached:
        with contextlib.suppress(psutil.Error):
            spared |= {p.pid for p in psutil.Process(pid).children(recursive=True)}
    kids = [p for p in psutil.Process().children(recursive=True) if p.pid not in spared]
    for p in kids:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(kids, timeout=grace_s)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    return [p.pid for p in kids]


def spawn_teardown(plan: RatingPlan) -> int:
    """A detached teardown of the plan's slot (its own session: it survives the step's SIGKILL)."""
    log_dir = plan.local_dir()
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "teardown-after-kill.log", "ab") as log:
        p = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from workbench.pipeline.stop import main; "
                "sys.exit(main(sys.argv[1:]))",
                json.dumps(plan.to_dict()),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=child_env(
                keep=("WB_LEASE_STORE",)
            ),  # it releases the lease: its store, no other secret
        )
    _detached.add(p.pid)
    return p.pid


@contextlib.contextmanager
def killable(plan: RatingPlan) -> Iterator[None]:
    """Run the block with the SIGTERM handling of the module docstring (main thread only; a nested
    block keeps the outer one's handler)."""
    if threading.current_thread() is not threading.main_thread() or _handling:
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once
        stopped = stop_children()
        pid = spawn_teardown(plan)
        print(
            f"killed: stopped {len(stopped)} child process(es); teardown of {plan.slot} in process "
            f"{pid}",
            file=sys.stderr,
            flush=True,
        )
        if callable(previous):  # Airflow's handler: the operator's on_kill
            previous(signum, frame)
        raise RatingKilled(
            f"rating {plan.rating_id} killed on {plan.slot}; teardown in process {pid}"
        )

    signal.signal(signal.SIGTERM, on_term)
    _handling.append(plan)
    try:
        yield
    finally:
        _handling.pop()
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str]) -> int:
    plan = RatingPlan.from_dict(json.loads(argv[0]))
    print(f"teardown after a kill: {plan.rating_id} on {plan.slot}", flush=True)
    print(teardown(plan), flush=True)
    return 0
