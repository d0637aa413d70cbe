"""What the controller knows about each tested load: the summaries its pickers read."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from workbench.stats.intervals import MeanCI

LOAD_KEY_DIGITS = 6


def load_key(load: float) -> float:
    """The one definition of "the same load": offered loads equal to 6 decimals (ops/s)."""
    return round(float(load), LOAD_KEY_DIGITS)


class LoadStatus(str, Enum):  # noqa: UP042 (a StrEnum's str() and f-string would be its value)
    """What the trials at one load say about it ([CC] Algorithm 2). A str, so it compares, prints
    and serialises as its value."""

    OPEN = "open"  # undecided: more trials
    PEAK = "peak"  # the CI meets the stop rule: the load is λ*
    BELOW = "below"  # unsaturated at confidence c
    ABOVE = "above"  # saturated at confidence c
    BELOW_BY_MEAN = "below?"  # max_trials_per_load reached: unsaturated by its median alone
    ABOVE_BY_MEAN = "above?"  # max_trials_per_load reached: saturated by its median alone

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class LoadSummary:
    load: float
    order: int  # index of the load's first trial in the log
    n: int  # valid trials
    mean: float  # (runlength-weighted) mean of the trial means, ms
    ci: MeanCI
    lat: float  # mean of the latency-rule percentile (p95 by default), ms
    status: LoadStatus
    side: int  # −1 unsaturated, +1 saturated, 0 undecided / peak
    confident: bool  # side established at confidence c (not by the trial cap)
    latency_saturated: bool = False
    runlengths: tuple[float, ...] = ()
    means: tuple[float, ...] = ()
    held_by: float | None = None  # the lower load whose median holds this one (monotone check)
    achieved_ops_s: float = float("nan")  # Σ achieved·r / Σ r over the valid trials
    throughput_z: float = 0.0  # (Σ achieved·r − Σ λ·r)/√(Σ λ·r): completions against offered

    @property
    def median_ms(self) -> float:
        """The median trial mean (the mean when the load has no valid trial)."""
        return float(statistics.median(self.means)) if self.means else self.mean


@dataclass(frozen=True)
class SearchState:
    r_sat_ms: float
    loads: tuple[LoadSummary, ...]  # ordered by `order`
    lo: LoadSummary | None  # highest unsaturated load below `hi`
    hi: LoadSummary | None  # lowest saturated load
    start: float  # first load (seed_load or first_load)
    seeded: bool
    params: dict = field(default_factory=dict)

    @property
    def tested(self) -> list[float]:
        return [s.load for s in self.loads]

    @property
    def ends(self) -> tuple[LoadSummary, LoadSummary]:
        """(lo, hi) of a complete bracket; ValueError while either end is unknown."""
        if self.lo is None or self.hi is None:
            raise ValueError("the bracket has no lower or no upper end yet")
        return self.lo, self.hi


def within_resolution(lo_ops_s: float, hi_ops_s: float, resolution: float) -> bool:
    """The bracket [lo, hi] is resolved: (hi − lo) ≤ resolution·hi (the stop rule `resolution`)."""
    return hi_ops_s - lo_ops_s <= resolution * hi_ops_s


def bracket_of(loads: Sequence[LoadSummary]) -> tuple[LoadSummary | None, LoadSummary | None]:
    """[highest unsaturated, lowest saturated]: hi = min load with side +1, lo = max load with
    side −1 below hi (noise can misorder sides; loads above hi never raise lo)."""
    sat = [s for s in loads if s.side > 0]
    hi = min(sat, key=lambda s: s.load) if sat else None
    uns = [s for s in loads if s.side < 0 and (hi is None or s.load < hi.load)]
    lo = max(uns, key=lambda s: s.load) if uns else None
    return lo, hi
