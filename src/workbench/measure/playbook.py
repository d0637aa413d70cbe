"""One playbook run through ansible-runner: quiet, its events streamed to a log, failures named."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from workbench.config.paths import REPO


@dataclass
class PlaybookRun:
    """Outcome of one playbook run: rc, ansible-runner status and the failed tasks' messages."""

    rc: int
    status: str
    failures: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)
    first_event_s: float = 0.0  # runner + ansible-playbook start-up to the first event
    # task name → seconds (summed over hosts' max)
    task_s: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.rc == 0 and self.status == "successful"

    def message(self) -> str:
        if self.failures:
            return "; ".join(self.failures[:3])
        if self.status == "timeout":
            return f"playbook stopped after its timeout ({self.elapsed_s:.0f} s)"
        return f"playbook {self.status} (rc {self.rc})"


Runner = Callable[..., PlaybookRun]

# the PLAY RECAP's counters (host → count), as in ansible-runner's Runner.stats
STATS_KEYS = ("ok", "changed", "failures", "dark", "skipped", "rescued", "ignored", "processed")


def _event_failure(ev: Mapping[str, Any]) -> str | None:
    kind = ev.get("event", "")
    if kind not in ("runner_on_failed", "runner_on_unreachable", "runner_item_on_failed"):
        return None
    data = ev.get("event_data", {}) or {}
    if data.get("ignore_errors"):
        return None
    res = data.get("res", {}) or {}
    msg = res.get("msg") or ""
    if "rc" in res and isinstance(res.get("rc"), int) and res["rc"] != 0:
        rc = res["rc"]
        msg = (msg + " " if msg else "") + (f"(killed by signal {-rc})" if rc < 0 else f"(rc {rc})")
    lines = [ln for ln in str(res.get("stderr") or "").strip().splitlines() if ln.strip()]
    # the generator's one-line error, not its warnings
    errs = [ln for ln in lines if "warning:" not in ln] or lines
    if errs:
        msg = (msg + ": " if msg else "") + errs[-1]
    task = data.get("task", "?")
    host = data.get("host", "?")
    what = "unreachable" if kind == "runner_on_unreachable" else "failed"
    return f"{host}: {task} {what}: {str(msg).strip()[:400]}"


# Inherited variables a playbook may need; everything else of this process stays out of the
# playbook's environment (Airflow's Fernet key and database URL, the store's secret key, ...).
INHERITED_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "SSH_AUTH_SOCK",
    "WB_STATE_DIR",
    "WB_WORKDIR",
    "WB_CGROUP_ROOT",
)


def job_env(env: Mapping[str, str], inherited: Mapping[str, str]) -> dict[str, str]:
    """The environment of a playbook run: what ansible-runner set for it (absent from, or changed
    against, this process's `inherited` environment), INHERITED_ENV and the user's ANSIBLE_*.
    ansible-runner starts from the whole process environment and dumps it into its artifacts
    (``artifacts/<id>/command``); this keeps credentials out of both."""
    return {
        k: v
        for k, v in env.items()
        if k in INHERITED_ENV or k.startswith("ANSIBLE_") or inherited.get(k) != v
    }


def _run_scrubbed(**kwargs: Any) -> Any:
    """ansible_runner.run with the job environment narrowed by job_env before anything runs."""
    from ansible_runner.interface import init_runner

    r = init_runner(**kwargs)
    r.config.env = job_env(r.config.env, os.environ)
    r.run()
    return r


# The playbooks that run under Mitogen's strategy, which runs a host's modules in one interpreter
# kept per connection instead of forking a worker and a new Python per task: provisioning takes
# 0.43x the CPU time of the linear strategy (bench/ansible_strategy.py). The others stay linear:
# deploy gains little (0.87x; the file set is fstress's own work), teardown loses (1.22x), and
# Mitogen runs the tasks of hosts that share a connection (every local host) one after another,
# where run_trial.yml must start all load hosts at once and deploy builds their file sets side by
# side.
MITOGEN_PLAYBOOKS = frozenset({"provision_sut.yml"})


def strategy_env(playbook: str | Path, inherited: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Mitogen's strategy for `playbook` if it is one of MITOGEN_PLAYBOOKS and the user's
    ANSIBLE_STRATEGY names no other (`ANSIBLE_STRATEGY=linear` is the way back); else nothing."""
    if Path(playbook).name not in MITOGEN_PLAYBOOKS or "ANSIBLE_STRATEGY" in inherited:
        return {}
    import ansible_mitogen

    return {
        "ANSIBLE_STRATEGY_PLUGINS": str(
            Path(ansible_mitogen.__file__).parent / "plugins" / "strategy"
        ),
        "ANSIBLE_STRATEGY": "mitogen_linear",
    }


def _runner_envvars(playbook: Path) -> dict[str, str]:
    """ansible-runner's variables for a run of `playbook`: its strategy, this interpreter's bin
    first on PATH, the repository's ansible.cfg and roles, quiet and fast settings."""
    return {
        **strategy_env(playbook),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": str(REPO / "roles"),
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_GATHERING": "explicit",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_DEPRECATION_WARNINGS": "False",
        "ANSIBLE_LOCALHOST_WARNING": "False",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
        "ANSIBLE_PYTHON_INTERPRETER": "auto_silent",
    }


class _Events:
    """The event handler of one run: each event's stdout to the log, and what the run's PlaybookRun
    reports — the failed tasks' messages, the time to the first event, the seconds per task and the
    recap's counters."""

    def __init__(self, log: TextIO, t0: float) -> None:
        self.log, self.t0 = log, t0
        self.failures: list[str] = []
        self.first_s: float | None = None
        self.task_s: dict[str, float] = {}
        self.task: str | None = None
        self.task_t = 0.0
        self.stats: dict[str, Any] = {}

    def _close_task(self, now: float) -> None:
        if self.task is not None:
            self.task_s[self.task] = self.task_s.get(self.task, 0.0) + now - self.task_t

    def on_event(self, ev: dict[str, Any]) -> bool:
        now = time.monotonic() - self.t0
        if self.first_s is None:
            self.first_s = now
        kind = ev.get("event", "")
        if kind in ("playbook_on_task_start", "playbook_on_stats", "playbook_on_play_start"):
            self._close_task(now)
            self.task = (
                (ev.get("event_data", {}) or {}).get("task")
                if kind == "playbook_on_task_start"
                else None
            )
            self.task_t = now
        out = ev.get("stdout")
        if out:
            self.log.write(out + "\n")
        f = _event_failure(ev)
        if f:
            self.failures.append(f)
        if kind == "playbook_on_stats":  # the recap: ansible-runner's r.stats reads it back
            data = ev.get("event_data", {}) or {}  # from the event files we do not keep
            self.stats.update({k: dict(data.get(k) or {}) for k in STATS_KEYS})
        return False  # do not keep event files: we keep the log


def ansible_runner_run(
    playbook: Path,
    extravars: Mapping[str, Any],
    *,
    inventory: Path,
    private_data_dir: Path,
    log_path: Path,
    timeout_s: float | None = None,
) -> PlaybookRun:
    """Run one playbook with ansible-runner: quiet, events streamed to `log_path`; stopped after
    `timeout_s` (status "timeout", a failed run)."""
    t0 = time.monotonic()
    private_data_dir.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(
            f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {playbook.name} "
            f"{json.dumps(dict(extravars), sort_keys=True, default=str)}\n"
        )
        events = _Events(log, t0)
        r = _run_scrubbed(
            private_data_dir=str(private_data_dir),
            playbook=str(playbook),
            inventory=str(inventory),
            extravars=dict(extravars),
            quiet=True,
            event_handler=events.on_event,
            rotate_artifacts=1,
            timeout=int(math.ceil(timeout_s)) if timeout_s else None,
            envvars=_runner_envvars(playbook),
            settings={"suppress_ansible_output": True},
            # never cancelled this way: without a callback ansible-runner installs its own SIGTERM
            # handler, which would hide a kill from pipeline.stop.killable
            cancel_callback=lambda: False,
        )
        log.write(f"=== {playbook.name}: {r.status} rc={r.rc} in {time.monotonic() - t0:.2f}s\n")
    return PlaybookRun(
        rc=int(r.rc if r.rc is not None else -1),
        status=str(r.status),
        failures=events.failures,
        elapsed_s=time.monotonic() - t0,
        stats=events.stats or r.stats or {},
        first_event_s=events.first_s or 0.0,
        task_s=events.task_s,
    )
