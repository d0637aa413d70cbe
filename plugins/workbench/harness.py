"""The Ansible harness: provision a sample, deploy fstress, run one trial, tear down.

`AnsibleHarness.measure(load_ops_s, runlength_s)` is the only thing the controller calls
(``find_peak(spec, harness.measure)``). Each call runs ``playbooks/run_trial.yml`` through
ansible-runner with the trial's parameters as *extra-vars data* (never interpolated into a shell
string): every load host of the slot runs ``fstress run`` at its share of the load from one common
start time, the controller merges their JSON results exactly (``fstress merge``), and this module
maps the merged JSON to a `TrialResult` and judges its validity:

* generator saturated (fstress exit 3)      → invalid "generator saturated: <fstress's reason>"
* NFS errors or RPC timeouts                → invalid "N errors, M timeouts"
* achieved rate < 95 % of offered           → invalid (SPEC SFS's validity rule)
* playbook failure / no merged JSON (fstress or the server killed mid-trial, host unreachable)
                                            → invalid "harness: <task>: <message>"

An invalid trial is re-run by the controller at the same load; the harness keeps going (the next
run_trial starts the server again if it died — nfs_server's ``start`` tasks).

The playbook runner is injectable (``runner=``) so the mapping and the validity rules are unit
tested without Ansible; the default runs ansible-runner quietly and streams its events to
``<results_dir>/ansible.log``.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from workbench.trial import TrialResult

__all__ = ["AnsibleHarness", "PlaybookRun", "HarnessError", "FACTOR_VARS", "factor_vars",
           "result_from_json", "ansible_runner_run", "REPO"]

REPO = Path(__file__).resolve().parents[2]
PLAYBOOKS = REPO / "playbooks"
DEFAULT_INVENTORY = REPO / "inventory" / "local" / "hosts.yml"
MIN_ACHIEVED_FRACTION = 0.95     # SPEC SFS: achieved throughput within 5 % of the requested load

# Factor name (CLI / response-surface vocabulary) → nfs_server role variable, with a type check.
FACTOR_VARS: dict[str, tuple[str, type]] = {
    "backend": ("nfs_server_backend", str),
    "threads": ("nfs_server_threads", int),
    "fs": ("nfs_server_fs_type", str),
    "disks": ("nfs_server_disks", int),
    "disk_size_mb": ("nfs_server_disk_size_mb", int),
    "read_iops": ("nfs_server_disk_read_iops", int),
    "write_iops": ("nfs_server_disk_write_iops", int),
    "read_bps": ("nfs_server_disk_read_bps", int),
    "write_bps": ("nfs_server_disk_write_bps", int),
    "memory_mb": ("nfs_server_memory_mb", int),
    "sync": ("nfs_server_export_sync", bool),
    "cache_policy": ("nfs_server_cache_policy", str),
    "server_cpus": ("nfs_server_cpus", str),
}
_CHOICES = {"backend": ("ganesha", "knfsd"), "fs": ("ext4", "xfs", "btrfs", "tmpfs"),
            "cache_policy": ("keep", "drop", "restart")}
_MINIMUM = {"threads": 1, "disks": 1, "disk_size_mb": 64, "read_iops": 0, "write_iops": 0,
            "read_bps": 0, "write_bps": 0, "memory_mb": 0}


class HarnessError(RuntimeError):
    """A provisioning / deployment / teardown step failed (measure() never raises this)."""


def factor_vars(factors: Mapping[str, Any]) -> dict[str, Any]:
    """Factors → nfs_server extra-vars, checked here so bad input fails before any host changes.

    memory_mb: 0 = unlimited, else ≥ 96 (the role's floor). disks ≥ 1. fs ∈ ext4|xfs|btrfs|tmpfs.
    """
    out: dict[str, Any] = {}
    for name, value in factors.items():
        if name not in FACTOR_VARS:
            raise ValueError(f"unknown factor {name!r}; known: {', '.join(sorted(FACTOR_VARS))}")
        var, typ = FACTOR_VARS[name]
        if typ is int:
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                    value = int(value)
                else:
                    raise ValueError(f"factor {name} must be a whole number, got {value!r}")
            lo = _MINIMUM.get(name, 0)
            if value < lo:
                raise ValueError(f"factor {name} must be >= {lo}, got {value}")
            if name == "memory_mb" and 0 < value < 96:
                raise ValueError(f"factor memory_mb must be 0 (unlimited) or >= 96, got {value}")
        elif typ is bool:
            if not isinstance(value, bool):
                raise ValueError(f"factor {name} must be true/false, got {value!r}")
        else:
            value = str(value)
            if name in _CHOICES and value not in _CHOICES[name]:
                raise ValueError(f"factor {name} must be one of {', '.join(_CHOICES[name])}, got {value!r}")
        out[var] = value
    if out.get("nfs_server_disks", 1) > 1 and out.get("nfs_server_fs_type", "ext4") != "btrfs":
        raise ValueError(f"disks={out['nfs_server_disks']} needs fs=btrfs (raid0 over the disks); "
                         f"got fs={out.get('nfs_server_fs_type', 'ext4')}")
    return out


@dataclass
class PlaybookRun:
    """Outcome of one playbook run: rc, ansible-runner status and the failed tasks' messages."""

    rc: int
    status: str
    failures: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)
    first_event_s: float = 0.0                  # runner + ansible-playbook start-up to the first event
    task_s: dict[str, float] = field(default_factory=dict)   # task name → seconds (summed over hosts' max)

    @property
    def ok(self) -> bool:
        return self.rc == 0 and self.status == "successful"

    def message(self) -> str:
        if self.failures:
            return "; ".join(self.failures[:3])
        return f"playbook {self.status} (rc {self.rc})"


Runner = Callable[..., PlaybookRun]


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


def ansible_runner_run(playbook: Path, extravars: Mapping[str, Any], *, inventory: Path,
                       private_data_dir: Path, log_path: Path) -> PlaybookRun:
    """Run one playbook with ansible-runner: quiet, events streamed to `log_path`."""
    import ansible_runner

    failures: list[str] = []
    t0 = time.monotonic()
    first: list[float] = []
    task_s: dict[str, float] = {}
    cur: dict[str, Any] = {"task": None, "t": 0.0}

    def close_task(now: float) -> None:
        if cur["task"] is not None:
            task_s[cur["task"]] = task_s.get(cur["task"], 0.0) + now - cur["t"]
    private_data_dir.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {playbook.name} "
                  f"{json.dumps(dict(extravars), sort_keys=True, default=str)}\n")

        def on_event(ev: dict[str, Any]) -> bool:
            now = time.monotonic() - t0
            if not first:
                first.append(now)
            kind = ev.get("event", "")
            if kind in ("playbook_on_task_start", "playbook_on_stats", "playbook_on_play_start"):
                close_task(now)
                cur["task"] = (ev.get("event_data", {}) or {}).get("task") if kind == "playbook_on_task_start" else None
                cur["t"] = now
            out = ev.get("stdout")
            if out:
                log.write(out + "\n")
            f = _event_failure(ev)
            if f:
                failures.append(f)
            return False          # do not keep event files: we keep the log

        r = ansible_runner.run(
            private_data_dir=str(private_data_dir),
            playbook=str(playbook),
            inventory=str(inventory),
            extravars=dict(extravars),
            quiet=True,
            event_handler=on_event,
            rotate_artifacts=1,
            envvars={
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
            },
            settings={"suppress_ansible_output": True},
        )
        log.write(f"=== {playbook.name}: {r.status} rc={r.rc} in {time.monotonic() - t0:.2f}s\n")
    return PlaybookRun(rc=int(r.rc if r.rc is not None else -1), status=str(r.status),
                       failures=failures, elapsed_s=time.monotonic() - t0, stats=r.stats or {},
                       first_event_s=first[0] if first else 0.0, task_s=task_s)


def _num(d: Mapping[str, Any], key: str, default: float = 0.0) -> float:
    v = d.get(key, default)
    try:
        v = float(v)
    except (TypeError, ValueError):
        return default
    return v if math.isfinite(v) else default


def result_from_json(raw: Mapping[str, Any], load_ops_s: float, runlength_s: float,
                     min_achieved: float = MIN_ACHIEVED_FRACTION,
                     overload_ms: float | None = None) -> TrialResult:
    """Map a (merged) fstress JSON result to a TrialResult and judge its validity.

    overload_ms: RPC timeouts (no NFS errors) in a trial whose mean response time of the answered
    calls is already ≥ overload_ms do not invalidate it: a timed-out call took longer than any
    answered one, so counting it could only raise the mean — the trial is above the peak either
    way (an overloaded server, not a harness fault). The CLI sets it to R_sat·(1 + s), the top of
    the peak-rate region; None (default) = every timeout invalidates, as SPEC SFS does.
    """
    offered = _num(raw, "offered_rate", load_ops_s) or float(load_ops_s)
    achieved = max(_num(raw, "achieved_rate"), 0.0)
    errors = int(_num(raw, "errors"))
    timeouts = int(_num(raw, "timeouts"))
    reasons = []
    if raw.get("generator_saturated"):
        reasons.append(f"generator saturated: {raw.get('saturation_reason') or 'no reason given'}")
    overloaded = (overload_ms is not None and errors == 0 and timeouts > 0
                  and _num(raw, "mean_ms") >= overload_ms)
    if (errors > 0 or timeouts > 0) and not overloaded:
        reasons.append(f"{errors} errors, {timeouts} timeouts")
    if achieved < min_achieved * offered:
        reasons.append(f"achieved {achieved:.1f} ops/s < {min_achieved:.0%} of offered {offered:.1f}")
    if int(_num(raw, "ops_total")) <= 0 and not reasons:
        reasons.append("no operations measured")
    return TrialResult(
        mean_ms=max(_num(raw, "mean_ms"), 0.0),
        p95_ms=max(_num(raw, "p95_ms"), 0.0),
        p99_ms=max(_num(raw, "p99_ms"), 0.0),
        std_ms=max(_num(raw, "std_ms"), 0.0),
        achieved_rate=achieved,
        ops_total=int(_num(raw, "ops_total")),
        errors=errors + timeouts,
        valid=not reasons,
        reason="; ".join(reasons) if reasons else (
            f"overloaded: {timeouts} timeouts, mean {_num(raw, 'mean_ms'):.0f} ms >= {overload_ms:g} ms"
            if overloaded else ""),
        load_ops_s=float(load_ops_s),
        runlength_s=float(runlength_s),
        raw=dict(raw),
    )


def invalid_result(load_ops_s: float, runlength_s: float, reason: str,
                   raw: Mapping[str, Any] | None = None) -> TrialResult:
    return TrialResult(mean_ms=0.0, p95_ms=0.0, achieved_rate=0.0, valid=False, reason=reason,
                       load_ops_s=float(load_ops_s), runlength_s=float(runlength_s),
                       raw=dict(raw) if raw else None)


class AnsibleHarness:
    """Harness for one sample on one slot: provision → deploy → measure* → teardown.

    slot: inventory group of the slot (``slot1``: its SUT and load hosts).
    inventory: inventory file (default: the local workbench, inventory/local/hosts.yml).
    factors: sample factors (threads, fs, disks, memory_mb, read_iops, ..., see FACTOR_VARS).
    workload: fstress workload name (or a workload file name copied by the fstress role).
    results_dir: trial JSONs go to ``results_dir/trials/<n>.json``, sysinfo to sysinfo.json,
        the ansible event log to ansible.log.
    warmup_s: unrecorded warm-up before each measured interval.
    overload_ms: see result_from_json (timeouts in a clearly overloaded trial keep it valid).
    fileset_rate: total rate the file set is sized for (once per sample; default 2000 ops/s).
    extravars: further extra-vars for every playbook (data, e.g. fstress_cpus / nfs_server_cpus).
    runner: ``runner(playbook, extravars, *, inventory, private_data_dir, log_path) -> PlaybookRun``
        (default: ansible-runner); tests inject a fake.
    """

    def __init__(self, slot: str = "slot1", inventory: str | Path | None = None,
                 factors: Mapping[str, Any] | None = None, workload: str = "web_server",
                 results_dir: str | Path | None = None, *, warmup_s: float = 2.0,
                 fileset_rate: float = 2000.0, extravars: Mapping[str, Any] | None = None,
                 runner: Runner | None = None, playbook_dir: str | Path | None = None,
                 start_margin_s: float = 0.5, min_achieved: float = MIN_ACHIEVED_FRACTION,
                 overload_ms: float | None = None, keep_parts: bool = False) -> None:
        if not isinstance(slot, str) or not slot or not slot.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"slot must be an inventory group name like slot1, got {slot!r}")
        if not isinstance(workload, str) or not workload:
            raise ValueError(f"workload must be a non-empty name, got {workload!r}")
        for name, v, lo in (("warmup_s", warmup_s, 0.0), ("fileset_rate", fileset_rate, 1e-9),
                            ("start_margin_s", start_margin_s, 0.0)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < lo:
                raise ValueError(f"{name} must be a number >= {lo:g}, got {v!r}")
        self.slot = slot
        self.inventory = Path(inventory) if inventory is not None else DEFAULT_INVENTORY
        self.factors = dict(factors or {})
        self.server_vars = factor_vars(self.factors)
        self.workload = workload
        self.extravars = dict(extravars or {})
        wl_file = Path(workload)
        if wl_file.is_file():          # a workload file: the fstress role copies it to the load hosts
            self.workload = wl_file.name
            self.extravars.setdefault("fstress_workload_files", [str(wl_file.resolve())])
        self.results_dir = (Path(results_dir) if results_dir is not None else Path(
            tempfile.mkdtemp(prefix="workbench-"))).resolve()
        self.warmup_s = float(warmup_s)
        self.fileset_rate = float(fileset_rate)
        self.runner: Runner = runner or ansible_runner_run
        self.playbook_dir = Path(playbook_dir) if playbook_dir is not None else PLAYBOOKS
        self.start_margin_s = float(start_margin_s)
        self.min_achieved = float(min_achieved)
        self.overload_ms = overload_ms
        self.keep_parts = keep_parts
        self.trial_count = 0
        self._server_suspect = True      # first trial, or the last one failed: check the server first
        self.last_run: PlaybookRun | None = None
        self.timings: list[dict[str, float]] = []
        if runner is None and not self.inventory.is_file():
            raise ValueError(f"inventory {self.inventory} not found")
        (self.results_dir / "trials").mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ plumbing
    @property
    def log_path(self) -> Path:
        return self.results_dir / "ansible.log"

    def _vars(self, **more: Any) -> dict[str, Any]:
        v: dict[str, Any] = {"slot": self.slot, "workload": self.workload,
                             "fileset_rate": self.fileset_rate}
        v.update(self.server_vars)
        v.update(self.extravars)
        v.update(more)
        return v

    def _play(self, name: str, **more: Any) -> PlaybookRun:
        playbook = self.playbook_dir / name
        # one private_data_dir per playbook: a teardown may start while a killed provision's
        # ansible-runner still rotates its artifacts
        run = self.runner(playbook, self._vars(**more), inventory=self.inventory,
                          private_data_dir=self.results_dir / ".runner" / playbook.stem, log_path=self.log_path)
        self.last_run = run
        return run

    def _must(self, name: str, **more: Any) -> PlaybookRun:
        run = self._play(name, **more)
        if not run.ok:
            raise HarnessError(f"{name} failed: {run.message()} (log: {self.log_path})")
        return run

    # ------------------------------------------------------------------ steps
    def provision(self) -> PlaybookRun:
        """provision_sut.yml: the SUT of the slot with this sample's factors; sysinfo.json fetched."""
        return self._must("provision_sut.yml", sysinfo_dest=str(self.results_dir / "sysinfo.json"))

    def deploy(self) -> PlaybookRun:
        """deploy_loadgen.yml: fstress on the slot's load hosts and the sample's file set."""
        return self._must("deploy_loadgen.yml")

    def teardown(self) -> PlaybookRun:
        """teardown.yml: stop the server, release the slot's disks (never raises; returns the run)."""
        return self._play("teardown.yml")

    def warm_up(self, load_ops_s: float, duration_s: float) -> TrialResult:
        """A discarded trial after deploy (Auto-pilot, seed 001 §4: run n+1 times, drop the first):
        the first trial on a fresh server pays for cold metadata and page cache (seen: 2 s mean
        response at a load whose next trial took 0.2 ms). Recorded as trials/warmup.json only."""
        return self.measure(load_ops_s, duration_s, trial_id="warmup", check_server=True)

    def measure(self, load_ops_s: float, runlength_s: float, *, trial_id: int | str | None = None,
                check_server: bool | None = None) -> TrialResult:
        """One trial at `load_ops_s` (total over the slot's load hosts) for `runlength_s` seconds.

        trial_id: number of the trial's JSON (default: the next of this harness); check_server:
        make sure the server runs first (default: on the first trial and after an invalid one).
        A harness re-created per trial (one Airflow task per trial) passes both."""
        if not (isinstance(load_ops_s, (int, float)) and math.isfinite(load_ops_s) and load_ops_s > 0):
            raise ValueError(f"load_ops_s must be a number > 0, got {load_ops_s!r}")
        if not (isinstance(runlength_s, (int, float)) and math.isfinite(runlength_s) and runlength_s > 0):
            raise ValueError(f"runlength_s must be a number > 0, got {runlength_s!r}")
        n = self.trial_count if trial_id is None else trial_id
        if isinstance(n, int):
            self.trial_count = n + 1
        if check_server is not None:
            self._server_suspect = bool(check_server)
        out = (self.results_dir / "trials" / f"{n}.json").resolve()
        out.unlink(missing_ok=True)
        shutil.rmtree(f"{out}.d", ignore_errors=True)
        t0 = time.monotonic()
        try:
            run = self._play("run_trial.yml", trial_id=n if isinstance(n, int) else 0,   # seeds fstress
                             load_ops_s=float(load_ops_s),
                             runlength_s=float(runlength_s), warmup_s=self.warmup_s,
                             trial_out=str(out), start_margin_s=self.start_margin_s,
                             ensure_server=self._server_suspect)
        except Exception as e:  # the runner itself broke: this trial is lost, the rating goes on
            run = PlaybookRun(rc=-1, status="error", failures=[f"runner error: {type(e).__name__}: {e}"],
                              elapsed_s=time.monotonic() - t0)
        wall = time.monotonic() - t0
        self.timings.append({"trial": n, "wall_s": wall, "playbook_s": run.elapsed_s,
                             "runlength_s": float(runlength_s), "warmup_s": self.warmup_s,
                             "overhead_s": wall - float(runlength_s) - self.warmup_s})
        if not self.keep_parts:
            shutil.rmtree(f"{out}.d", ignore_errors=True)
        result = self._judge(run, out, load_ops_s, runlength_s)
        # after any invalid trial (a killed server shows up as errors or a failed run) the next
        # run_trial first makes sure the server runs
        self._server_suspect = not result.valid
        return result

    def _judge(self, run: PlaybookRun, out: Path, load_ops_s: float, runlength_s: float) -> TrialResult:
        raw: dict[str, Any] | None = None
        if out.is_file():
            try:
                raw = json.loads(out.read_text())
            except (OSError, ValueError) as e:
                return invalid_result(load_ops_s, runlength_s, f"harness: unreadable result {out}: {e}")
        if not run.ok and (raw is None or not raw.get("generator_saturated")):
            return invalid_result(load_ops_s, runlength_s, f"harness: {run.message()}", raw)
        if raw is None:
            return invalid_result(load_ops_s, runlength_s, f"harness: no merged result at {out}")
        return result_from_json(raw, load_ops_s, runlength_s, self.min_achieved, self.overload_ms)

    __call__ = measure

    def __repr__(self) -> str:
        return (f"AnsibleHarness(slot={self.slot!r}, workload={self.workload!r}, "
                f"factors={self.factors!r}, results_dir={str(self.results_dir)!r})")

