"""The resident fstress agents of a slot (issue 34): one `fstress agent` per load host, started
after deploy, asked to run trial k over its stdin/stdout (loadgen/README.md, "Agent"), stopped
at teardown.

A trial costs its runlength, warm-up and start margin plus ~0.1 s (a run_trial.yml run: 2-6 s more).
The flags are the role's: deploy (``roles/fstress/tasks/main.yml``, "Write this host's agent
spec") writes each load host's command prefix (``ip netns exec``, ``taskset``, ``chrt``, the
binary) and the trial-independent ``fstress run`` flags (``_fstress_run_args``, the same fact
run.yml uses) to ``<results_dir>/agent/<host>.json``; agent_process adds the trial's own flags
exactly as run_trial.yml does (`trial_args`: rate share, runlength, warm-up, client id, seed,
common start).

Scope: the agents live in this process (a `subprocess.Popen` per load host, over `ip netns exec`
for the local slots or ``ssh -T`` for SSH hosts; the end of their stdin ends them). A rating run
in one process (`workbench rate`, `pipeline.runner.run_rating`, so map_surface's and
nightly_regression's rating tasks) re-creates its harness per step but keeps the process, so the
agents are kept in a registry keyed by inventory and slot (`fleet_for`) and the harness of each
step finds them; so does the main job's rate_peak under `dag.test()` (workbench.dagrun: every
task in its process). Under a scheduler or Celery (one task process per trial) rate_peak stays
on the playbook: its harness is created with the agents off unless the process opted in
(`enable`) or WB_FSTRESS_AGENT=1.

Live view (on unless WB_METRICS=off): a numbered slot's agent serves /metrics
(live_agents.agent_endpoint) and names the rating and slot (protocol 2); an older fstress (exit 2 at
`--metrics-addr`) starts without.

Faults: no reply (the agent's output ended: killed, host or connection gone), a reply with
``ok: false``, or no reply within the trial's bound → the trial is a harness failure (the controller
re-runs it) and the fleet is closed: the next trial starts new agents. A new agent's ``--pid-file``
stops a live agent of an earlier deployment (the stale agent replaced); teardown closes the fleet
(quit, then kill) and teardown.yml kills an agent by its pid file.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.config.paths import FSTRESS
from workbench.measure import live, live_agents
from workbench.measure.agent_process import (
    EXIT_USAGE,
    HELLO_TIMEOUT_S,
    Agent,
    AgentError,
    agent_argv,
    trial_args,
    trial_seed,
)

__all__ = [
    "AgentError",
    "Agent",
    "Fleet",
    "trial_seed",
    "trial_args",
    "agent_argv",
    "fleet_for",
    "close_fleet",
    "enabled",
    "enable",
    "in_process_default",
    "run_trial",
    "merge",
]


@dataclass
class HostResult:
    host: str
    ok: bool
    exit: int
    result: dict[str, Any] | None
    error: str = ""
    elapsed_s: float = 0.0
    reused: bool = False


class Fleet:
    """The agents of one slot's load hosts (in client-id order), of one deployment."""

    def __init__(
        self,
        specs: Sequence[Mapping[str, Any]],
        deployment: str | None = None,
        slot: str | None = None,
        log_dir: Path | None = None,
        hello_timeout_s: float = HELLO_TIMEOUT_S,
    ) -> None:
        self.specs = [dict(s) for s in specs]
        self.deployment = deployment or f"wb-{uuid.uuid4().hex[:12]}"
        self.slot, self.log_dir = slot, log_dir
        port = live_agents.agent_port_for(slot) if live.enabled() else None
        self.agents: list[Agent] = []
        try:
            for s in self.specs:
                self.agents.append(self._start(s, port))
            for i, a in enumerate(self.agents):
                self._hello(i, a, port is not None, hello_timeout_s)
        except BaseException:
            self.kill()
            raise

    def _start(self, spec: Mapping[str, Any], port: int | None) -> Agent:
        log = (self.log_dir / f"agent-{spec['host']}.log") if self.log_dir is not None else None
        with live_agents.agent_endpoint(spec.get("connection", "ssh"), port) as (addr, fds):
            return Agent(spec["host"], agent_argv(spec, self.deployment, addr), log, fds)

    def _hello(self, i: int, a: Agent, metrics: bool, timeout_s: float) -> None:
        """Agent i's hello; one that exits 2 at --metrics-addr (an older fstress) started again
        without."""
        try:
            a.wait_hello(timeout_s)
        except AgentError:
            if not metrics or a.proc.returncode != EXIT_USAGE:
                raise
            a.kill()
            self.agents[i] = self._start(self.specs[i], None)
            self.agents[i].wait_hello(timeout_s)

    hosts = property(lambda self: [s["host"] for s in self.specs])

    def alive(self) -> bool:
        return all(a.proc.poll() is None for a in self.agents)

    def run(self, per_host_args: Sequence[Sequence[str]], timeout_s: float) -> list[HostResult]:
        """One trial: every agent's run request sent first, then every reply awaited (all bounded
        by one deadline). AgentError when any agent fails to answer; an ok:false reply is a
        HostResult."""
        deadline = time.monotonic() + timeout_s
        labels = live_agents.agent_labels(self.slot)  # the live view's: protocol 2
        rids = [
            a.send("run", args=list(args), **(labels if a.protocol >= 2 else {}))
            for a, args in zip(self.agents, per_host_args)
        ]
        out = []
        for a, rid in zip(self.agents, rids):
            r = a.reply(rid, deadline)
            result = r.get("result") if isinstance(r.get("result"), dict) else None
            out.append(
                HostResult(
                    a.host,
                    bool(r.get("ok")),
                    int(r["exit"]) if r.get("exit") is not None else 1,
                    result,
                    str(r.get("error") or ""),
                    float(r.get("elapsed_s") or 0.0),
                    bool(r.get("reused")),
                )
            )
        return out

    def close(self) -> None:
        for a in self.agents:  # quit to all first: they wind down together
            with contextlib.suppress(AgentError):
                a.send("quit")
        for a in self.agents:
            a.close(send_quit=False)

    def kill(self) -> None:
        for a in self.agents:
            a.kill()


def merge(parts: Sequence[Path], out: Path) -> str:
    """`fstress merge` of the hosts' results into `out`, as run_trial.yml merges them (rc 0, or 3: a
    saturated host); the failure's message, or ""."""
    argv = [str(FSTRESS), "merge", *map(str, parts), "--json", str(out)]
    try:
        m = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"fstress merge: {e}"
    if m.returncode not in (0, 3):
        last = (m.stderr.strip().splitlines() or [""])[-1]
        return f"fstress merge failed (rc {m.returncode}): {last}"
    return ""


def run_trial(
    fleet: Fleet,
    trial_id: int | str,
    *,
    load_ops_s: float,
    runlength_s: float,
    warmup_s: float,
    start_margin_s: float,
    timeout_s: float,
    out: Path,
) -> list[str]:
    """Trial `trial_id` (an int, or the warm-up) as run_trial.yml runs it: each load host its share
    of `load_ops_s` from one common start, its JSON to <out>.d/<host>.json, merged into `out`. The
    failures ([]: merged); AgentError when an agent died or did not answer within `timeout_s`."""
    hosts = fleet.hosts
    warm = not isinstance(trial_id, int)
    start_at = time.time() + start_margin_s
    per_host = [
        trial_args(
            spec,
            rate=float(load_ops_s) / len(hosts),
            runlength_s=runlength_s,
            warmup_s=warmup_s,
            client_id=i,
            seed=trial_seed(0 if warm else int(trial_id), i, warm),
            start_at=start_at,
        )
        for i, spec in enumerate(fleet.specs)
    ]
    replies = fleet.run(per_host, timeout_s)
    parts_dir = Path(f"{out}.d")
    parts_dir.mkdir(parents=True, exist_ok=True)
    failures = []
    for r in replies:
        if r.result is not None and r.exit in (0, 3):
            (parts_dir / f"{r.host}.json").write_text(json.dumps(r.result))
        else:
            failures.append(f"{r.host}: agent run failed (exit {r.exit}): {r.error or 'no result'}")
    if failures:
        return failures
    err = merge([parts_dir / f"{h}.json" for h in hosts], out)
    return [err] if err else []


# ---------------------------------------------------------------- the process's fleets
# Whether the in-process rating loop (pipeline.runner.run_rating: `workbench rate`,
# map_surface's
# and
# nightly_regression's rating tasks) and workbench.dagrun's dag.test() run their trials through
# the
# agents (WB_FSTRESS_AGENT=0/1 and `workbench rate --agent off|on` override it).
IN_PROCESS_DEFAULT = True
_FLEETS: dict[tuple[str, str], Fleet] = {}
_LOCK = threading.Lock()
_ENABLED: bool | None = None


def _env() -> bool | None:
    env = os.environ.get("WB_FSTRESS_AGENT", "")
    return env == "1" if env in ("0", "1") else None


def in_process_default() -> bool:
    """Whether an in-process rating uses the agents when not told: WB_FSTRESS_AGENT=0/1, else
    IN_PROCESS_DEFAULT."""
    env = _env()
    return IN_PROCESS_DEFAULT if env is None else env


def enabled() -> bool:
    """Whether harnesses created with agent=None use the agents: inside `enable` (the in-process
    rating loop) as it says; elsewhere (e.g. one Airflow task per trial) only with
    WB_FSTRESS_AGENT=1."""
    if _ENABLED is not None:
        return _ENABLED
    return bool(_env())


class enable:
    """Context manager: harnesses of this process created inside it use the agents or not (`on`;
    None: in_process_default()); at its end (the outermost one) every fleet left is closed."""

    def __init__(self, on: bool | None = None) -> None:
        self.on = in_process_default() if on is None else bool(on)
        self._was: bool | None = None

    def __enter__(self) -> enable:
        global _ENABLED
        self._was, _ENABLED = _ENABLED, self.on
        return self

    def __exit__(self, *exc: Any) -> None:
        global _ENABLED
        _ENABLED = self._was
        if self._was is None:
            close_all()


def _key(inventory: Path | str, slot: str) -> tuple[str, str]:
    return (str(inventory), slot)


def fleet_for(
    inventory: Path | str,
    slot: str,
    spec_dir: Path,
    hosts: Sequence[str],
    log_dir: Path | None = None,
) -> Fleet:
    """This process's live fleet of the slot for exactly `hosts` and their specs, else a new one (an
    earlier one closed first). AgentError when a spec is missing or an agent does not start."""
    specs = []
    for h in hosts:
        f = spec_dir / f"{h}.json"
        try:
            specs.append(json.loads(f.read_text()))
        except (OSError, ValueError) as e:
            raise AgentError(f"{h}: no agent spec at {f} (deploy writes it): {e}") from e
    key = _key(inventory, slot)
    with _LOCK:
        fleet = _FLEETS.get(key)
        if fleet is not None and fleet.specs == specs and fleet.alive():
            return fleet
        if fleet is not None:
            _FLEETS.pop(key, None)
            fleet.close()
        fleet = Fleet(specs, log_dir=log_dir, slot=slot)
        _FLEETS[key] = fleet
        return fleet


def drop_fleet(
    inventory: Path | str, slot: str, fleet: Fleet | None = None, kill: bool = True
) -> None:
    """Forget the slot's fleet (only `fleet`, if given) and kill (or close) its agents."""
    with _LOCK:
        cur = _FLEETS.get(_key(inventory, slot))
        if cur is None or (fleet is not None and cur is not fleet):
            if fleet is not None:
                fleet.kill() if kill else fleet.close()
            return
        _FLEETS.pop(_key(inventory, slot), None)
    cur.kill() if kill else cur.close()


def close_fleet(inventory: Path | str, slot: str) -> None:
    """Teardown's part: quit the slot's agents of this process (kill those that do not go)."""
    drop_fleet(inventory, slot, kill=False)


def close_all() -> None:
    with _LOCK:
        fleets = list(_FLEETS.values())
        _FLEETS.clear()
    for f in fleets:
        f.close()
