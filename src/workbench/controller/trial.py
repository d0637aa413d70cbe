"""One trial: a run of the workload at one offered load for one runlength.

`TrialResult` is the only thing the harness hands the controller (``measure(load, runlength_s)``)
and the unit of the trial log that ``decide(spec, trials)`` reads. It is immutable and
round-trips through plain dicts (JSON, Parquet rows, XCom).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TrialResult:
    """Outcome of one trial.

    mean_ms / p95_ms: response time of the operations measured in the trial (ms).
    achieved_rate: operations completed per second during the measured interval.
    valid: False when the trial must not count (generator saturated, errors, failed
        validation, harness fault); `reason` says why. Invalid trials are re-run.
    harness_failure: the trial measured nothing of the server (a load host unreachable, the
        playbook runner broken, no result fetched; always with valid False). The controller
        ignores it for every statistical purpose — it is no sample of the server and not one of
        the server's invalid trials — and re-runs the same trial; it only costs time (budget)
        and counts toward the harness-failure cap (docs/controller.md "Harness failures").
        `outcome` names the three cases: "measured", "invalid" (the server's), "harness".
    load_ops_s / runlength_s: the offered load and runlength the trial was asked for;
        ``find_peak`` fills them in when ``measure`` leaves them unset.
    drain_s: how long the server took before the trial to get back to its idle round-trip time
        (fstress's drain probe; the longest of the load hosts'); None when not probed. Recorded,
        never used by the controller.
    """

    mean_ms: float
    p95_ms: float
    achieved_rate: float
    valid: bool = True
    reason: str = ""
    load_ops_s: float | None = None
    runlength_s: float | None = None
    std_ms: float | None = None
    p99_ms: float | None = None
    ops_total: int | None = None
    errors: int = 0
    harness_failure: bool = False
    drain_s: float | None = None
    raw: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("mean_ms", "p95_ms", "achieved_rate"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
                raise ValueError(f"TrialResult.{name} must be a number >= 0, got {value!r}")
        if not isinstance(self.harness_failure, bool):
            raise ValueError(
                f"TrialResult.harness_failure must be a bool, got {self.harness_failure!r}"
            )
        if self.drain_s is not None and not (
            isinstance(self.drain_s, (int, float)) and 0 <= self.drain_s < math.inf
        ):
            raise ValueError(
                f"TrialResult.drain_s must be None or a number >= 0, got {self.drain_s!r}"
            )
        if self.harness_failure and self.valid:
            raise ValueError("TrialResult: a harness failure is never valid (valid=False)")

    @property
    def outcome(self) -> str:
        """ "measured" (valid), "invalid" (the server's invalid trial) or "harness" (a harness
        failure)."""
        return "harness" if self.harness_failure else ("measured" if self.valid else "invalid")

    @property
    def load(self) -> float:
        """The offered load of a trial of the log (``find_peak`` tags each one; ValueError if
        not)."""
        return _tagged(self.load_ops_s, "load_ops_s")

    @property
    def runlength(self) -> float:
        """The runlength of a trial of the log (``find_peak`` tags each one; ValueError if not)."""
        return _tagged(self.runlength_s, "runlength_s")

    def at(self, load_ops_s: float, runlength_s: float) -> TrialResult:
        """This result tagged with the load and runlength it was measured at (unset fields only)."""
        return dataclasses.replace(
            self,
            load_ops_s=self.load_ops_s if self.load_ops_s is not None else float(load_ops_s),
            runlength_s=self.runlength_s if self.runlength_s is not None else float(runlength_s),
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields, plus the derived `outcome` (for readers of the stored record)."""
        return {**dataclasses.asdict(self), "outcome": self.outcome}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrialResult:
        """From a dict of fields; unknown keys (n, decision, outcome) are ignored. A record stored
        before harness failures had their own outcome lacks `harness_failure`: it is False."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def _tagged(value: float | None, name: str) -> float:
    if value is None:
        raise ValueError(f"TrialResult.{name} is unset: tag the trial with .at(load, runlength)")
    return value


def steady_verdict(rec: Mapping[str, Any]) -> str | None:
    """The steady-state verdict of a stored trial record (stats.steady, in raw["steady"]), None when
    it has none."""
    return ((rec.get("raw") or {}).get("steady") or {}).get("verdict")


def record_outcome(rec: Mapping[str, Any]) -> str:
    """The outcome of a stored trial record (a dict): "harness", "invalid" or "measured". Records
    stored before harness failures had their own outcome have neither field: valid decides."""
    if rec.get("harness_failure") or rec.get("outcome") == "harness":
        return "harness"
    return "measured" if rec.get("valid", True) else "invalid"
