"""How the Ansible harness runs things on its slot (the base of AnsibleHarness, which sets the
attributes declared here): playbooks through the runner with the sample's extra-vars, one trial
through ``run_trial.yml`` or the resident agents, and the trial's merged result judged."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from workbench.config.external import ExternalServer
from workbench.config.factor_pack import FactorPack, level_vars
from workbench.controller.trial import TrialResult
from workbench.measure import agent as agents
from workbench.measure import telemetry
from workbench.measure.playbook import PlaybookRun, Runner
from workbench.measure.trialjson import (
    background_figures,
    background_out,
    harness_result,
    host_parts,
    missed_background,
    per_host_figures,
    read_json,
    result_from_json,
    with_timeseries,
)

# Wall-clock bounds of the playbook runs (ansible-runner stops a run that exceeds them)
SETUP_TIMEOUT_S = 3600.0  # provision / deploy / probe: the file-set build alone may take 30 min
TEARDOWN_TIMEOUT_S = 600.0
TRIAL_SLACK_S = 180.0  # run_trial beyond runlength + warm-up (fstress's own slack is 60 s)
# bound of fstress's drain probe before each trial (role fstress_drain_timeout_s)
DRAIN_TIMEOUT_S = 60.0


class HarnessError(RuntimeError):
    """A provisioning / deployment / teardown step failed (measure() never raises this)."""


class HarnessRuns:
    """Playbook and trial runs of one sample on one slot (AnsibleHarness's docstring: the
    arguments behind these attributes)."""

    slot: str
    inventory: Path
    workload: str
    results_dir: Path
    server_vars: dict[str, Any]
    extravars: dict[str, Any]
    external: ExternalServer | None
    background: dict[str, Any]
    load_hosts: list[str]
    fileset_rate: float
    warmup_s: float
    start_margin_s: float
    min_achieved: float
    overload_ms: float | None
    runner: Runner
    playbook_dir: Path
    agent: bool
    last_path: str  # the last trial's: "agent" or "playbook"
    last_run: PlaybookRun | None
    _server_suspect: bool  # first trial, or the last one failed: check the server first
    pack: FactorPack | None  # a factor pack (config.factor_pack) and its levels chosen
    pack_levels: dict[str, Any]

    @property
    def log_path(self) -> Path:
        return self.results_dir / "ansible.log"

    def _vars(self, **more: Any) -> dict[str, Any]:
        v: dict[str, Any] = {
            "slot": self.slot,
            "workload": self.workload,
            "fileset_rate": self.fileset_rate,
        }
        v.update(self.server_vars)
        v.update(self.extravars)
        v.update(more)
        return v

    def _play(self, name: str, timeout_s: float = SETUP_TIMEOUT_S, **more: Any) -> PlaybookRun:
        playbook = self.playbook_dir / name
        # one private_data_dir per playbook: a teardown may start while a killed provision's
        # ansible-runner still rotates its artifacts
        run = self.runner(
            playbook,
            self._vars(**more),
            inventory=self.inventory,
            private_data_dir=self.results_dir / ".runner" / playbook.stem,
            log_path=self.log_path,
            timeout_s=timeout_s,
        )
        self.last_run = run
        return run

    def _must(self, name: str, **more: Any) -> PlaybookRun:
        run = self._play(name, **more)
        if not run.ok:
            raise HarnessError(f"{name} failed: {run.message()} (log: {self.log_path})")
        return run

    # ------------------------------------------------------------------ factor pack
    def apply_pack(self) -> PlaybookRun | None:
        """apply_factors.yml: the factor pack's tasks (or role) with the chosen levels, on the
        pack's hosts (default: the slot's SUT; an external server: the controller, localhost) —
        after provisioning, before deploy. A level that fails to apply is a HarnessError naming
        the failing task and its message, after the pack's reset tasks ran (if it names any) so
        nothing half-applied is left behind. None: no pack, or no level chosen."""
        if self.pack is None or not self.pack_levels:
            return None
        pack = self.pack
        run = self._play("apply_factors.yml", **self._pack_vars(pack.apply, pack.role))
        if run.ok:
            return run
        levels = ", ".join(f"{k}={v}" for k, v in self.pack_levels.items())
        msg = f"factor pack {pack.path}: {levels} failed to apply: {run.message()}"
        if pack.reset:
            reset = self._play("apply_factors.yml", **self._pack_vars(pack.reset, ""))
            msg += (
                "; the pack's reset ran" if reset.ok else f"; its reset failed: {reset.message()}"
            )
        raise HarnessError(f"{msg} (log: {self.log_path})")

    def _pack_vars(self, tasks: str, role: str) -> dict[str, Any]:
        """apply_factors.yml's variables: where, what, and the levels (config.factor_pack)."""
        assert self.pack is not None
        hosts = self.pack.hosts or ("localhost" if self.external else f"sut:&{self.slot}")
        return {
            "wb_pack_hosts": hosts,
            "wb_pack_tasks": tasks,
            "wb_pack_role": role,
            "wb_pack_file": self.pack.path,
            **level_vars(self.pack_levels),
        }

    @property
    def agent_spec_dir(self) -> Path:
        return self.results_dir / "agent"

    def _fleet(self) -> agents.Fleet:
        return agents.fleet_for(
            self.inventory,
            self.slot,
            self.agent_spec_dir,
            self.load_hosts,
            log_dir=self.results_dir,
        )

    # ------------------------------------------------------------------ trials
    def _trial_run(
        self, n: int | str, load_ops_s: float, runlength_s: float, out: Path
    ) -> PlaybookRun:
        """The trial through the agents or run_trial.yml (`trial_path`)."""
        if self.last_path == "agent":
            self.last_run = self._agent_trial(n, load_ops_s, runlength_s, out)
            return self.last_run
        return self._play(
            "run_trial.yml",
            timeout_s=self.trial_timeout_s(runlength_s),
            trial_id=n if isinstance(n, int) else 0,  # seeds fstress
            warmup_trial=not isinstance(n, int),
            load_ops_s=float(load_ops_s),
            runlength_s=float(runlength_s),
            warmup_s=self.warmup_s,
            trial_out=str(out),
            start_margin_s=self.start_margin_s,
            **({"background_out": str(background_out(out))} if self.background else {}),
            ensure_server=self._server_suspect and self.external is None,
        )

    def trial_path(self, check_server: bool | None = None) -> str:
        """ "agent" or "playbook": the path of the next trial (check_server as `measure`'s). The
        agents run it when on, the server needs no check (ensure_server is the playbook's), no
        background tenant, the cache policy keep, and deploy wrote every spec."""
        suspect = self._server_suspect if check_server is None else bool(check_server)
        ok = self.agent and not suspect and not self.background and bool(self.load_hosts)
        ok = ok and str(self._vars().get("nfs_server_cache_policy", "keep")) == "keep"
        ok = ok and all((self.agent_spec_dir / f"{h}.json").is_file() for h in self.load_hosts)
        return "agent" if ok else "playbook"

    def _agent_trial(
        self, n: int | str, load_ops_s: float, runlength_s: float, out: Path
    ) -> PlaybookRun:
        """One trial through the agents (agents.run_trial); a failed agent → a failed run (a harness
        failure) and the fleet killed: the next trial starts new agents."""
        t0 = time.monotonic()
        fleet = None
        try:
            fleet = self._fleet()
            failures = agents.run_trial(
                fleet,
                n,
                load_ops_s=load_ops_s,
                runlength_s=runlength_s,
                warmup_s=self.warmup_s,
                start_margin_s=self.start_margin_s,
                timeout_s=self.trial_timeout_s(runlength_s),
                out=out,
            )
        except agents.AgentError as e:
            if fleet is not None:
                agents.drop_fleet(self.inventory, self.slot, fleet)
            failures = [f"agent: {e}"]
        return PlaybookRun(
            rc=1 if failures else 0,
            status="failed" if failures else "successful",
            failures=failures,
            elapsed_s=time.monotonic() - t0,
        )

    def trial_timeout_s(self, runlength_s: float) -> float:
        """Wall-clock bound of one run_trial playbook: the generator's own limit (runlength +
        warm-up + its drain bound + the role's fstress_trial_slack_s) plus start-up, server check,
        fetch and merge."""
        drain_s = float(self.extravars.get("fstress_drain_timeout_s", DRAIN_TIMEOUT_S))
        return float(runlength_s) + self.warmup_s + self.start_margin_s + drain_s + TRIAL_SLACK_S

    def _judge(
        self,
        run: PlaybookRun,
        out: Path,
        load_ops_s: float,
        runlength_s: float,
        sampling: telemetry.Samplers | None = None,
    ) -> TrialResult:
        """The merged result judged by result_from_json; a harness failure when there is none to
        judge (see the module docstring): the server was not measured."""
        raw: dict[str, Any] | None = None
        if out.is_file():
            try:
                raw = json.loads(out.read_text())
            except (OSError, ValueError) as e:
                return harness_result(
                    load_ops_s, runlength_s, f"harness: unreadable result {out}: {e}"
                )
        if not run.ok and (raw is None or not raw.get("generator_saturated")):
            return harness_result(load_ops_s, runlength_s, f"harness: {run.message()}", raw)
        if raw is None:
            return harness_result(load_ops_s, runlength_s, f"harness: no merged result at {out}")
        parts = host_parts(Path(f"{out}.d"))
        raw["per_host"] = per_host_figures(parts)
        if sampling is not None:
            raw["telemetry"] = telemetry.of_trial(sampling, raw, runlength_s)
        if not raw.get("series"):  # merged by an fstress without series: the hosts' own
            raw = with_timeseries(raw, parts)
        if self.background:
            bg = background_out(out)
            raw["background"] = background_figures(
                self.background, read_json(bg), host_parts(Path(f"{bg}.d")), raw
            )
            missed = missed_background(raw["background"])
            if missed:
                return harness_result(load_ops_s, runlength_s, missed, raw)
        return result_from_json(raw, load_ops_s, runlength_s, self.min_achieved, self.overload_ms)
