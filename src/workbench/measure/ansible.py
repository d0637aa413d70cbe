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
* playbook failure without a merged result (a host unreachable, the runner broken, a task failed
  before fstress wrote its JSON, fetch failed, fstress killed; fstress exit 4: the server did not
  drain to its idle round-trip time before the load, so none was sent) or no / unreadable merged
  JSON                                      → harness failure "harness: <task>: <message>"

An invalid trial is the server's: the controller counts it (max_invalid_per_load) and re-runs the
load. A harness failure measured nothing of the server: the controller ignores it for every
statistical purpose, re-runs the same trial and stops only when the harness keeps failing
(TrialResult.harness_failure). Either way the harness keeps going (the next run_trial starts the
server again if it died — nfs_server's ``start`` tasks).

With the resident agents on (``agent=True``, or None and a process that opted in:
measure/agent.py), deploy also starts one ``fstress agent`` per load host and a trial whose server
needs no check (not after an invalid trial; trial 0 only after a valid warm-up), without a background
tenant and with the cache policy ``keep`` runs through them instead of run_trial.yml: the same flags (the role writes
them at deploy), the same per-host JSON under ``<trial_out>.d/``, the same ``fstress merge`` and the
same judgement; a dead or silent agent is a harness failure and the agents are restarted for the
next trial. The other trials take the playbook.

The playbook runner is injectable (``runner=``) so the mapping and the validity rules are unit
tested without Ansible; the default runs ansible-runner quietly and streams its events to
``<results_dir>/ansible.log``.
"""
from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

from workbench.config import tenants
from workbench.config.external import ExternalServer, refuse_server_factors
from workbench.config.factors import factor_vars
from workbench.config.paths import DEFAULT_INVENTORY, PLAYBOOKS
from workbench.measure import agent as agents
from workbench.controller.trial import TrialResult
from workbench.measure.inventory import slot_background_hosts, slot_load_hosts
from workbench.measure.playbook import PlaybookRun, Runner, ansible_runner_run
from workbench.measure import live, telemetry
from workbench.measure.trialjson import (MIN_ACHIEVED_FRACTION, background_figures, background_out, harness_result,
                                        host_parts, per_host_figures, read_json, result_from_json, with_timeseries)


__all__ = ["AnsibleHarness", "HarnessError"]

# Wall-clock bounds of the playbook runs (ansible-runner stops a run that exceeds them)
SETUP_TIMEOUT_S = 3600.0        # provision / deploy / probe: the file-set build alone may take 30 min
TEARDOWN_TIMEOUT_S = 600.0
TRIAL_SLACK_S = 180.0           # run_trial beyond runlength + warm-up (fstress's own slack is 60 s)
DRAIN_TIMEOUT_S = 60.0          # bound of fstress's drain probe before each trial (role fstress_drain_timeout_s)


def external_sysinfo(server: ExternalServer, probe: Mapping[str, Any]) -> dict[str, Any]:
    """sysinfo.json of an external server: what a client learnt (`fstress probe`: portmapper
    programs, FSINFO/FSSTAT/PATHCONF of the export, NULL round trips) and the user's description."""
    endpoint = {**server.endpoint(), "nfs_port": probe.get("nfs_port", server.nfs_port),
                "mount_port": probe.get("mount_port", server.mount_port)}
    return {"mode": "external", "host": server.address,
            "server": {"kind": "external server", "description": server.description, "endpoint": endpoint},
            "probe": dict(probe)}


def probes_sut(server_vars: Mapping[str, Any]) -> bool:
    """Whether provisioning a slot's own server also probes it from a load host (provision_sut.yml
    with probe_dest): over NFSv4.1, for the session limits it grants (max slots, request and response
    sizes), which only a client learns."""
    return str(server_vars.get("nfs_server_nfs_version", "3")) != "3"


def background_vars(background: Mapping[str, Any], hosts: list[str]) -> dict[str, Any]:
    """run_trial.yml's and deploy_loadgen.yml's extra-vars of tenant B (config.tenants) on `hosts`."""
    return {"wb_background_hosts": ",".join(hosts), "background_ops_s": float(background["ops_s"]),
            "background_workload": background["workload"]}


class HarnessError(RuntimeError):
    """A provisioning / deployment / teardown step failed (measure() never raises this)."""


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
    load_hosts: the slot's first N load hosts share the load (0 = all); InventoryError when the slot
        has fewer.
    background: tenant B beside every trial (config.tenants: ops_s, workload, load_hosts; None or
        ops_s 0 = none): its load hosts from group `background`, its own merged result kept in the
        trial's raw["background"]; a trial where B's generator saturated is invalid, named.
    external: an external server's fields (config.external.ExternalServer; {} = the slot's SUT): no
        provision, cache policy or server teardown; `provision` describes it from a load host.
    runner: ``runner(playbook, extravars, *, inventory, private_data_dir, log_path) -> PlaybookRun``
        (default: ansible-runner); tests inject a fake.
    agent: run trials through resident fstress agents (measure/agent.py); None = whether this
        process opted in (agents.enabled(): the in-process rating loop, or WB_FSTRESS_AGENT=1).
    """

    def __init__(self, slot: str = "slot1", inventory: str | Path | None = None,
                 factors: Mapping[str, Any] | None = None, workload: str = "web_server",
                 results_dir: str | Path | None = None, *, warmup_s: float = 2.0,
                 fileset_rate: float = 2000.0, extravars: Mapping[str, Any] | None = None,
                 runner: Runner | None = None, playbook_dir: str | Path | None = None,
                 start_margin_s: float = 0.5, min_achieved: float = MIN_ACHIEVED_FRACTION,
                 overload_ms: float | None = None, keep_parts: bool = False,
                 external: Mapping[str, Any] | None = None, load_hosts: int = 0,
                 background: Mapping[str, Any] | None = None, agent: bool | None = None) -> None:
        if not isinstance(slot, str) or not slot or not slot.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"slot must be an inventory group name like slot1, got {slot!r}")
        if not isinstance(workload, str) or not workload:
            raise ValueError(f"workload must be a non-empty name, got {workload!r}")
        for name, v, lo in (("warmup_s", warmup_s, 0.0), ("fileset_rate", fileset_rate, 1e-9),
                            ("start_margin_s", start_margin_s, 0.0)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < lo:
                raise ValueError(f"{name} must be a number >= {lo:g}, got {v!r}")
        self.slot = slot
        # absolute: ansible-runner runs in its private data directory, where a relative path
        # matches no host and every play "succeeds" on nobody
        self.inventory = Path(inventory).resolve() if inventory is not None else DEFAULT_INVENTORY
        self.factors = dict(factors or {})
        self.server_vars = factor_vars(self.factors)
        self.workload = workload
        self.extravars = dict(extravars or {})
        self.external = ExternalServer(**external) if external else None
        if self.external is not None:
            if self.factors:
                refuse_server_factors(self.factors)
            self.extravars.update(fstress_endpoint=self.external.endpoint(), wb_external=True)
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
        self.load_hosts: list[str] = []
        if self.inventory.is_file():     # the load hosts (and enough of them) before any host changes
            self.load_hosts = slot_load_hosts(self.inventory, slot, load_hosts, server=self.external is None)
            self.extravars["wb_load_hosts"] = ",".join(self.load_hosts)
        self.background = dict(background) if tenants.is_active(background) else {}
        if self.background:
            self.extravars.update(background_vars(self.background, slot_background_hosts(
                self.inventory, slot, self.background["load_hosts"]) if self.inventory.is_file() else []))
        (self.results_dir / "trials").mkdir(parents=True, exist_ok=True)
        self.agent, self.last_path = agents.enabled() if agent is None else bool(agent), ""  # last: agent/playbook

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

    def _play(self, name: str, timeout_s: float = SETUP_TIMEOUT_S, **more: Any) -> PlaybookRun:
        playbook = self.playbook_dir / name
        # one private_data_dir per playbook: a teardown may start while a killed provision's
        # ansible-runner still rotates its artifacts
        run = self.runner(playbook, self._vars(**more), inventory=self.inventory,
                          private_data_dir=self.results_dir / ".runner" / playbook.stem, log_path=self.log_path,
                          timeout_s=timeout_s)
        self.last_run = run
        return run

    def _must(self, name: str, **more: Any) -> PlaybookRun:
        run = self._play(name, **more)
        if not run.ok:
            raise HarnessError(f"{name} failed: {run.message()} (log: {self.log_path})")
        return run

    # ------------------------------------------------------------------ steps
    def provision(self) -> PlaybookRun:
        """provision_sut.yml: the SUT of the slot with this sample's factors; sysinfo.json fetched
        (over NFSv4.1 with the load host's probe of it under "probe": the session limits). An external
        server: probe_server.yml describes it from the first load host instead."""
        dest = self.results_dir / "sysinfo.json"
        probe = self.results_dir / "probe.json"
        probe.unlink(missing_ok=True)
        if self.external is None:
            specs = telemetry.spec_dir(self.results_dir)
            specs.mkdir(parents=True, exist_ok=True)     # kept: provisioning again changes nothing
            more = {"sysinfo_dest": str(dest), "nfs_server_telemetry_spec_dir": str(specs)}
            if not probes_sut(self.server_vars):
                return self._must("provision_sut.yml", **more)
            run = self._must("provision_sut.yml", probe_dest=str(probe), **more)
            dest.write_text(json.dumps({**json.loads(dest.read_text()), "probe": json.loads(probe.read_text())},
                                       indent=1))
            return run
        run = self._must("probe_server.yml", probe_dest=str(probe))
        dest.write_text(json.dumps(external_sysinfo(self.external, json.loads(probe.read_text())), indent=1))
        return run

    @property
    def agent_spec_dir(self) -> Path:
        return self.results_dir / "agent"

    def deploy(self) -> PlaybookRun:
        """deploy_loadgen.yml: fstress on the slot's load hosts and the sample's file set; with the
        agents on, then the agents of this deployment (a live one of an earlier deployment replaced)."""
        if not self.agent:
            return self._must("deploy_loadgen.yml")
        agents.drop_fleet(self.inventory, self.slot, kill=False)
        shutil.rmtree(self.agent_spec_dir, ignore_errors=True)
        self.agent_spec_dir.mkdir(parents=True)
        run = self._must("deploy_loadgen.yml", fstress_agent_spec_dir=str(self.agent_spec_dir))
        missing = [h for h in self.load_hosts if not (self.agent_spec_dir / f"{h}.json").is_file()]
        if missing:              # a deploy that wrote no spec (a test's runner): the playbook path
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(f"=== no agent spec for {', '.join(missing)}: trials through run_trial.yml\n")
            return run
        try:
            self._fleet()
        except agents.AgentError as e:
            raise HarnessError(f"deploy: the fstress agents did not start: {e}") from e
        return run

    def _fleet(self) -> agents.Fleet:
        return agents.fleet_for(self.inventory, self.slot, self.agent_spec_dir, self.load_hosts,
                                log_dir=self.results_dir)

    def teardown(self) -> PlaybookRun:
        """teardown.yml: stop the agents, the server, release the slot's disks (never raises; returns
        the run)."""
        agents.close_fleet(self.inventory, self.slot)
        return self._play("teardown.yml", timeout_s=TEARDOWN_TIMEOUT_S)

    def warm_up(self, load_ops_s: float, duration_s: float) -> TrialResult:
        """A discarded trial after deploy (Auto-pilot, seed 001 §4: run n+1 times, drop the first):
        the first trial on a fresh server pays for cold metadata and page cache. Its own seed: with
        trial 0's, trial 0 replayed its files from the cache (0.2 ms after the warm-up's 2 s, then
        642 ms at the same load). Recorded as trials/warmup.json only. No server check first: deploy has
        just built (or found) the file set through the server."""
        return self.measure(load_ops_s, duration_s, trial_id="warmup", check_server=False)

    def measure(self, load_ops_s: float, runlength_s: float, *, trial_id: int | str | None = None,
                check_server: bool | None = None) -> TrialResult:
        """One trial at `load_ops_s` (total over the slot's load hosts) for `runlength_s` seconds.

        trial_id: number of the trial's JSON (default: the next of this harness); check_server:
        make sure the server runs first (default: on the first trial and after an invalid one).
        A harness re-created per trial (one Airflow task per trial) passes both."""
        for name, v in (("load_ops_s", load_ops_s), ("runlength_s", runlength_s)):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a number > 0, got {v!r}")
        n = self.trial_count if trial_id is None else trial_id
        if isinstance(n, int):
            self.trial_count = n + 1
        self._server_suspect = self._server_suspect if check_server is None else bool(check_server)
        out = (self.results_dir / "trials" / f"{n}.json").resolve()
        for stale in (out, background_out(out)):
            stale.unlink(missing_ok=True)
            shutil.rmtree(f"{stale}.d", ignore_errors=True)
        t0 = time.monotonic()
        self.last_path = self.trial_path()
        sampling = telemetry.Samplers(telemetry.spec_dir(self.results_dir), self.trial_timeout_s(runlength_s),
                                      self.results_dir / "telemetry.log", live.publisher(self.slot))
        try:
            with sampling:
                run = self._trial_run(n, load_ops_s, runlength_s, out)
        except Exception as e:  # the runner itself broke: this trial is lost, the rating goes on
            run = PlaybookRun(rc=-1, status="error", failures=[f"runner error: {type(e).__name__}: {e}"],
                              elapsed_s=time.monotonic() - t0)
        wall = time.monotonic() - t0
        self.timings.append({"trial": n, "path": self.last_path, "wall_s": wall, "playbook_s": run.elapsed_s,
                             "runlength_s": float(runlength_s), "warmup_s": self.warmup_s,
                             "overhead_s": wall - float(runlength_s) - self.warmup_s})
        result = self._judge(run, out, load_ops_s, runlength_s, sampling)
        for part in ([] if self.keep_parts else [out, background_out(out)]):
            shutil.rmtree(f"{part}.d", ignore_errors=True)
        # after any invalid trial (a killed server shows up as errors or a failed run) the next
        # run_trial first makes sure the server runs
        self._server_suspect = not result.valid
        return result

    def _trial_run(self, n: int | str, load_ops_s: float, runlength_s: float, out: Path) -> PlaybookRun:
        """The trial through the agents or run_trial.yml (`trial_path`)."""
        if self.last_path == "agent":
            self.last_run = self._agent_trial(n, load_ops_s, runlength_s, out)
            return self.last_run
        return self._play("run_trial.yml", timeout_s=self.trial_timeout_s(runlength_s),
                          trial_id=n if isinstance(n, int) else 0,   # seeds fstress
                          warmup_trial=not isinstance(n, int),
                          load_ops_s=float(load_ops_s),
                          runlength_s=float(runlength_s), warmup_s=self.warmup_s,
                          trial_out=str(out), start_margin_s=self.start_margin_s,
                          **({"background_out": str(background_out(out))} if self.background else {}),
                          ensure_server=self._server_suspect and self.external is None)

    def trial_path(self, check_server: bool | None = None) -> str:
        """"agent" or "playbook": the path of the next trial (check_server as `measure`'s). The agents run
        it when on, the server needs no check (ensure_server is the playbook's), no background tenant,
        the cache policy keep, and deploy wrote every spec."""
        suspect = self._server_suspect if check_server is None else bool(check_server)
        ok = self.agent and not suspect and not self.background and bool(self.load_hosts)
        ok = ok and str(self._vars().get("nfs_server_cache_policy", "keep")) == "keep"
        ok = ok and all((self.agent_spec_dir / f"{h}.json").is_file() for h in self.load_hosts)
        return "agent" if ok else "playbook"

    def _agent_trial(self, n: int | str, load_ops_s: float, runlength_s: float, out: Path) -> PlaybookRun:
        """One trial through the agents (agents.run_trial); a failed agent → a failed run (a harness
        failure) and the fleet killed: the next trial starts new agents."""
        t0 = time.monotonic()
        fleet = None
        try:
            fleet = self._fleet()
            failures = agents.run_trial(fleet, n, load_ops_s=load_ops_s, runlength_s=runlength_s,
                                        warmup_s=self.warmup_s, start_margin_s=self.start_margin_s,
                                        timeout_s=self.trial_timeout_s(runlength_s), out=out)
        except agents.AgentError as e:
            if fleet is not None:
                agents.drop_fleet(self.inventory, self.slot, fleet)
            failures = [f"agent: {e}"]
        return PlaybookRun(rc=1 if failures else 0, status="failed" if failures else "successful",
                           failures=failures, elapsed_s=time.monotonic() - t0)

    def trial_timeout_s(self, runlength_s: float) -> float:
        """Wall-clock bound of one run_trial playbook: the generator's own limit (runlength + warm-up +
        its drain bound + the role's fstress_trial_slack_s) plus start-up, server check, fetch and merge."""
        drain_s = float(self.extravars.get("fstress_drain_timeout_s", DRAIN_TIMEOUT_S))
        return float(runlength_s) + self.warmup_s + self.start_margin_s + drain_s + TRIAL_SLACK_S

    def _judge(self, run: PlaybookRun, out: Path, load_ops_s: float, runlength_s: float,
               sampling: telemetry.Samplers | None = None) -> TrialResult:
        """The merged result judged by result_from_json; a harness failure when there is none to
        judge (see the module docstring): the server was not measured."""
        raw: dict[str, Any] | None = None
        if out.is_file():
            try:
                raw = json.loads(out.read_text())
            except (OSError, ValueError) as e:
                return harness_result(load_ops_s, runlength_s, f"harness: unreadable result {out}: {e}")
        if not run.ok and (raw is None or not raw.get("generator_saturated")):
            return harness_result(load_ops_s, runlength_s, f"harness: {run.message()}", raw)
        if raw is None:
            return harness_result(load_ops_s, runlength_s, f"harness: no merged result at {out}")
        parts = host_parts(Path(f"{out}.d"))
        raw["per_host"] = per_host_figures(parts)
        if sampling is not None:
            raw["telemetry"] = telemetry.of_trial(sampling, raw, runlength_s)
        if not raw.get("series"):              # merged by an fstress without series: the hosts' own
            raw = with_timeseries(raw, parts)
        if self.background:
            bg = background_out(out)
            raw["background"] = background_figures(self.background, read_json(bg), host_parts(Path(f"{bg}.d")))
        return result_from_json(raw, load_ops_s, runlength_s, self.min_achieved, self.overload_ms)

    __call__ = measure

    def __repr__(self) -> str:
        return (f"AnsibleHarness(slot={self.slot!r}, workload={self.workload!r}, "
                f"factors={self.factors!r}, results_dir={str(self.results_dir)!r})")
