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
needs no check (not after an invalid trial; trial 0 only after a valid warm-up), without a
background tenant and with the cache policy ``keep`` runs through them instead of run_trial.yml: the
same flags (the role writes them at deploy), the same per-host JSON under ``<trial_out>.d/``, the
same ``fstress merge`` and the same judgement; a dead or silent agent is a harness failure and the
agents are restarted for the next trial. The other trials take the playbook.

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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.config.factor_pack import FactorPack
from workbench.config.factors import factor_vars
from workbench.config.paths import DEFAULT_INVENTORY, PLAYBOOKS
from workbench.controller.trial import TrialResult
from workbench.measure import agent as agents
from workbench.measure import live, telemetry
from workbench.measure.harness_runs import TEARDOWN_TIMEOUT_S, HarnessError, HarnessRuns
from workbench.measure.inventory import slot_load_hosts
from workbench.measure.playbook import PlaybookRun, Runner, ansible_runner_run
from workbench.measure.sample_vars import (
    background_of,
    check_args,
    external_sysinfo,
    probes_sut,
    sample_extravars,
)
from workbench.measure.trialjson import (
    MIN_ACHIEVED_FRACTION,
    SHARED_START_MARGIN_S,
    background_out,
)

__all__ = ["AnsibleHarness", "HarnessError"]


class AnsibleHarness(HarnessRuns):
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
    factor_pack: a factor pack (config.factor_pack, as FactorPack.to_dict()) whose `pack_levels`
        provision applies after the server is up (apply_factors.yml); None = none.
    runner: ``runner(playbook, extravars, *, inventory, private_data_dir, log_path) -> PlaybookRun``
        (default: ansible-runner); tests inject a fake.
    agent: run trials through resident fstress agents (measure/agent.py); None = whether this
        process opted in (agents.enabled(): the in-process rating loop, or WB_FSTRESS_AGENT=1).
    """

    def __init__(
        self,
        slot: str = "slot1",
        inventory: str | Path | None = None,
        factors: Mapping[str, Any] | None = None,
        workload: str = "web_server",
        results_dir: str | Path | None = None,
        *,
        warmup_s: float = 2.0,
        fileset_rate: float = 2000.0,
        extravars: Mapping[str, Any] | None = None,
        runner: Runner | None = None,
        playbook_dir: str | Path | None = None,
        start_margin_s: float = 0.5,
        min_achieved: float = MIN_ACHIEVED_FRACTION,
        overload_ms: float | None = None,
        keep_parts: bool = False,
        external: Mapping[str, Any] | None = None,
        load_hosts: int = 0,
        background: Mapping[str, Any] | None = None,
        agent: bool | None = None,
        factor_pack: Mapping[str, Any] | None = None,
        pack_levels: Mapping[str, Any] | None = None,
    ) -> None:
        check_args(slot, workload, warmup_s, fileset_rate, start_margin_s)
        self.slot = slot
        # absolute: ansible-runner runs in its private data directory, where a relative path
        # matches no host and every play "succeeds" on nobody
        self.inventory = Path(inventory).resolve() if inventory is not None else DEFAULT_INVENTORY
        self.factors = dict(factors or {})
        self.server_vars = factor_vars(self.factors)
        self.pack = FactorPack.from_dict(factor_pack) if factor_pack else None
        # checked again: bad input fails before any host changes
        self.pack_levels = self.pack.check_levels(pack_levels or {}) if self.pack else {}
        self.external, self.workload, self.extravars = sample_extravars(
            extravars, external, self.factors, workload
        )
        self.results_dir = (
            Path(results_dir)
            if results_dir is not None
            else Path(tempfile.mkdtemp(prefix="workbench-"))
        ).resolve()
        self.warmup_s = float(warmup_s)
        self.fileset_rate = float(fileset_rate)
        self.runner = runner or ansible_runner_run
        self.playbook_dir = Path(playbook_dir) if playbook_dir is not None else PLAYBOOKS
        self.start_margin_s = float(start_margin_s)
        self.min_achieved = float(min_achieved)
        self.overload_ms = overload_ms
        self.keep_parts = keep_parts
        self.trial_count = 0
        self._server_suspect = True
        self.last_run = None
        self.timings: list[dict[str, Any]] = []
        if runner is None and not self.inventory.is_file():
            raise ValueError(f"inventory {self.inventory} not found")
        self._hosts(load_hosts, background)
        (self.results_dir / "trials").mkdir(parents=True, exist_ok=True)
        self.agent = agents.enabled() if agent is None else bool(agent)
        self.last_path = ""

    def _hosts(self, load_hosts: int, background: Mapping[str, Any] | None) -> None:
        """The slot's load hosts (and enough of them: InventoryError) before any host changes, and
        tenant B's, into the extra-vars."""
        self.load_hosts = []
        if self.inventory.is_file():
            self.load_hosts = slot_load_hosts(
                self.inventory, self.slot, load_hosts, server=self.external is None
            )
            self.extravars["wb_load_hosts"] = ",".join(self.load_hosts)
        self.background, background_vars = background_of(background, self.inventory, self.slot)
        self.extravars.update(background_vars)
        if self.background or len(self.load_hosts) > 1:  # generators that must start together
            self.start_margin_s = max(self.start_margin_s, SHARED_START_MARGIN_S)

    # ------------------------------------------------------------------ steps
    def provision(self) -> PlaybookRun:
        """provision_sut.yml: the SUT of the slot with this sample's factors; sysinfo.json fetched
        (over NFSv4.1 with the load host's probe of it under "probe": the session limits). An
        external server: probe_server.yml describes it from the first load host instead. Then the
        factor pack's levels (apply_pack)."""
        run = self._provision_server()
        self.apply_pack()
        return run

    def _provision_server(self) -> PlaybookRun:
        dest = self.results_dir / "sysinfo.json"
        probe = self.results_dir / "probe.json"
        probe.unlink(missing_ok=True)
        if self.external is None:
            specs = telemetry.spec_dir(self.results_dir)
            specs.mkdir(parents=True, exist_ok=True)  # kept: provisioning again changes nothing
            more = {"sysinfo_dest": str(dest), "nfs_server_telemetry_spec_dir": str(specs)}
            if not probes_sut(self.server_vars):
                return self._must("provision_sut.yml", **more)
            run = self._must("provision_sut.yml", probe_dest=str(probe), **more)
            dest.write_text(
                json.dumps(
                    {**json.loads(dest.read_text()), "probe": json.loads(probe.read_text())},
                    indent=1,
                )
            )
            return run
        run = self._must("probe_server.yml", probe_dest=str(probe))
        dest.write_text(
            json.dumps(external_sysinfo(self.external, json.loads(probe.read_text())), indent=1)
        )
        return run

    def deploy(self) -> PlaybookRun:
        """deploy_loadgen.yml: fstress on the slot's load hosts and the sample's file set; with the
        agents on, then the agents of this deployment (a live one of an earlier deployment
        replaced)."""
        if not self.agent:
            return self._must("deploy_loadgen.yml")
        agents.drop_fleet(self.inventory, self.slot, kill=False)
        shutil.rmtree(self.agent_spec_dir, ignore_errors=True)
        self.agent_spec_dir.mkdir(parents=True)
        run = self._must("deploy_loadgen.yml", fstress_agent_spec_dir=str(self.agent_spec_dir))
        missing = [h for h in self.load_hosts if not (self.agent_spec_dir / f"{h}.json").is_file()]
        if missing:  # a deploy that wrote no spec (a test's runner): the playbook path
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(
                    f"=== no agent spec for {', '.join(missing)}: trials through run_trial.yml\n"
                )
            return run
        try:
            self._fleet()
        except agents.AgentError as e:
            raise HarnessError(f"deploy: the fstress agents did not start: {e}") from e
        return run

    def teardown(self) -> PlaybookRun:
        """teardown.yml: stop the agents, the server, release the slot's disks (never raises;
        returns the run)."""
        agents.close_fleet(self.inventory, self.slot)
        return self._play("teardown.yml", timeout_s=TEARDOWN_TIMEOUT_S)

    def warm_up(self, load_ops_s: float, duration_s: float) -> TrialResult:
        """A discarded trial after deploy (Auto-pilot, seed 001 §4: run n+1 times, drop the first):
        the first trial on a fresh server pays for cold metadata and page cache. Its own seed: with
        trial 0's, trial 0 replayed its files from the cache (0.2 ms after the warm-up's 2 s, then
        642 ms at the same load). Recorded as trials/warmup.json only. No server check first: deploy
        has just built (or found) the file set through the server."""
        return self.measure(load_ops_s, duration_s, trial_id="warmup", check_server=False)

    def measure(
        self,
        load_ops_s: float,
        runlength_s: float,
        *,
        trial_id: int | str | None = None,
        check_server: bool | None = None,
    ) -> TrialResult:
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
        sampling = telemetry.Samplers(
            telemetry.spec_dir(self.results_dir),
            self.trial_timeout_s(runlength_s),
            self.results_dir / "telemetry.log",
            live.publisher(self.slot),
        )
        try:
            with sampling:
                run = self._trial_run(n, load_ops_s, runlength_s, out)
        except Exception as e:  # the runner itself broke: this trial is lost, the rating goes on
            run = PlaybookRun(
                rc=-1,
                status="error",
                failures=[f"runner error: {type(e).__name__}: {e}"],
                elapsed_s=time.monotonic() - t0,
            )
        self._timed(n, run, time.monotonic() - t0, runlength_s)
        result = self._judge(run, out, load_ops_s, runlength_s, sampling)
        for part in [] if self.keep_parts else [out, background_out(out)]:
            shutil.rmtree(f"{part}.d", ignore_errors=True)
        # after any invalid trial (a killed server shows up as errors or a failed run) the next
        # run_trial first makes sure the server runs
        self._server_suspect = not result.valid
        return result

    def _timed(self, n: int | str, run: PlaybookRun, wall: float, runlength_s: float) -> None:
        """The trial's wall time and where it went, for the overhead benchmark (bench/)."""
        self.timings.append(
            {
                "trial": n,
                "path": self.last_path,
                "wall_s": wall,
                "playbook_s": run.elapsed_s,
                "runlength_s": float(runlength_s),
                "warmup_s": self.warmup_s,
                "overhead_s": wall - float(runlength_s) - self.warmup_s,
            }
        )

    __call__ = measure

    def __repr__(self) -> str:
        return (
            f"AnsibleHarness(slot={self.slot!r}, workload={self.workload!r}, "
            f"factors={self.factors!r}, results_dir={str(self.results_dir)!r})"
        )
