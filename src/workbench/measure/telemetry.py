"""The server's telemetry beside each trial: the sampler of the nfs_server role, run for the trial.

Provisioning writes one spec per server host (``<results_dir>/telemetry/<host>.json``: how to reach
the host and the sampler's command, role nfs_server "Write this host's telemetry spec"). For each
trial the harness starts ``wb-telemetry.py`` on every such host (`Samplers`: locally, or through
``ssh -T`` as the agents are), which prints the server's cumulative counters once a second until its
standard input ends; after the trial `summary` turns the samples inside the measured window into
per-second rates on the trial's own time base (seconds since the window's start), and the means
the bottleneck verdict (findings.bottleneck) reads. A host without a spec, or a sampler that
printed nothing, gives no telemetry, said so in the trial's record; it never fails the trial.
`Samplers(on_interval=...)` also hands each host's newest interval, as it arrives, to the live view
(measure/live.py).
WB_TELEMETRY=off in the environment runs no sampler (to measure what telemetry costs:
bench/telemetry_cost.py). The series and the figures over the window: measure.telemetry_series.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from workbench.config.child_env import child_env
from workbench.measure.remote import end_group, host_argv
from workbench.measure.telemetry_series import INTERVAL_S, interval_row, summary

__all__ = ["Samplers", "spec_dir", "summary", "of_trial"]

OFF_ENV = "WB_TELEMETRY"
STOP_TIMEOUT_S = 5.0
OnInterval = Callable[[str, Mapping[str, Any]], None]  # (host, one interval's series) as it arrives


def spec_dir(results_dir: Path) -> Path:
    """Where provisioning writes the server hosts' telemetry specs."""
    return results_dir / "telemetry"


class _Sampler:
    """One host's sampler process; a reader thread keeps its lines."""

    def __init__(
        self, spec: Mapping[str, Any], max_s: float, log: Any, on_interval: OnInterval | None = None
    ) -> None:
        self.host = str(spec["host"])
        self.samples: list[dict[str, Any]] = []
        self.on_interval = on_interval
        self._seen = threading.Condition()
        cmd = [
            *spec["prefix"],
            "--interval-s",
            str(INTERVAL_S),
            "--max-s",
            f"{max(1.0, max_s):.0f}",
        ]
        self.proc = subprocess.Popen(
            host_argv(spec, cmd),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
            env=child_env(),  # the sampler needs no credential of this process
        )
        self._reader = threading.Thread(
            target=self._read, name=f"telemetry-{self.host}", daemon=True
        )
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and isinstance(msg.get("t"), (int, float)):
                with self._seen:
                    self.samples.append(msg)
                    self._seen.notify_all()
                if self.on_interval is not None and len(self.samples) > 1:
                    self._publish(self.samples[-2], msg)
        with self._seen:
            self._seen.notify_all()

    def _publish(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> None:
        """The newest interval to `on_interval` as it arrives (the live view, measure/live.py)."""
        dt = float(b["t"]) - float(a["t"])
        if dt > 0 and a.get("pid") == b.get("pid") and self.on_interval is not None:
            # the live view logs its own failures; the samples go on
            with contextlib.suppress(Exception):
                self.on_interval(self.host, interval_row(a, b, dt))

    def wait_for(self, n: int, timeout_s: float) -> bool:
        """Whether `n` samples arrived within `timeout_s` (False at once when the sampler ended
        sooner)."""
        with self._seen:
            return (
                self._seen.wait_for(
                    lambda: len(self.samples) >= n or not self._reader.is_alive(), timeout_s
                )
                and len(self.samples) >= n
            )

    def stop(self) -> None:
        """The end of its stdin (it exits at once), then SIGKILL of its group if it does not."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass
        end_group(self.proc, STOP_TIMEOUT_S, STOP_TIMEOUT_S)
        self._reader.join(timeout=STOP_TIMEOUT_S)


class Samplers:
    """The samplers of every server host with a spec, for one trial: ``with Samplers(dir, max_s) as
    s``; after the block `s.samples` maps each host to its raw lines. A sampler that cannot start is
    noted in `s.missing` (host → why); nothing here raises into the trial."""

    def __init__(
        self,
        specs_dir: Path,
        max_s: float,
        log_path: Path | None = None,
        on_interval: OnInterval | None = None,
    ) -> None:
        self.specs_dir, self.max_s, self.log_path = Path(specs_dir), float(max_s), log_path
        self.on_interval = on_interval
        self.samples: dict[str, list[dict[str, Any]]] = {}
        self.missing: dict[str, str] = {}
        self.running: list[_Sampler] = []
        self._log: Any = subprocess.DEVNULL

    def __enter__(self) -> Samplers:
        if os.environ.get(OFF_ENV, "").strip().lower() == "off":
            self.missing["server"] = f"telemetry off ({OFF_ENV}=off)"
            return self
        specs = sorted(self.specs_dir.glob("*.json")) if self.specs_dir.is_dir() else []
        if specs and self.log_path is not None:
            self._log = open(self.log_path, "ab")
        for f in specs:
            try:
                self.running.append(
                    _Sampler(json.loads(f.read_text()), self.max_s, self._log, self.on_interval)
                )
            except (OSError, ValueError, KeyError, TypeError) as e:
                self.missing[f.stem] = f"the sampler did not start: {e}"
        return self

    def __exit__(self, *exc: Any) -> None:
        for s in self.running:
            s.stop()
            self.samples[s.host] = s.samples
        if self._log is not subprocess.DEVNULL:
            self._log.close()


def of_trial(sampling: Samplers, raw: Mapping[str, Any], runlength_s: float) -> dict[str, Any]:
    """raw["telemetry"] of a trial: each server host's `summary` over fstress's measured window
    (start_unix_ns, duration_s), and per host without one the reason."""
    t0 = float(raw.get("start_unix_ns") or 0) / 1e9
    t1 = t0 + float(raw.get("duration_s") or runlength_s)
    hosts: dict[str, Any] = {}
    missing = dict(sampling.missing)
    for host, samples in sampling.samples.items():
        s = summary(samples, t0, t1) if t0 > 0 else None
        if s is None:
            missing[host] = (
                f"{len(samples)} samples, none spanning the measured window"
                if t0 > 0
                else "the trial's result has no start time"
            )
        else:
            hosts[host] = s
    if not hosts and not missing:
        missing["server"] = (
            "no telemetry spec for this slot's server (an external server, or not provisioned here)"
        )
    return {"hosts": hosts, **({"missing": missing} if missing else {})}
