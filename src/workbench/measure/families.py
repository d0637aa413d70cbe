"""Server families of the validity study (bench/validity.py, issue 16): seeded `SimulatedServer`s
whose trials misbehave in the ways real ones do — outlier trials, heavy-tailed noise, a sharp knee,
an inflated first trial at each new load (Ganesha's cache warm-up).

The TRUTH of a server is its steady-state model (`true_mean_ms`, `true_peak_rate`): outliers and
the cold start are trial-level faults, not part of R(λ). The true peak-rate region is
[λ(R_sat·(1 − s)), λ(R_sat·(1 + s))] (`true_region`), where λ(R) inverts the true mean response.

Families (`family_servers(name, n)`):
  mm     the M/M/m-like noisy family of issue 16: mostly M/M/1 means, trial noise rising steeply
         with load and falling with runlength, 3 % outlier trials
  knee   the same noise on M/M/m with many servers: R flat, then a wall
  heavy  Student-t(3) trial noise and 5 % larger outliers
  cold   the mm servers without outliers, the first trial at every new load inflated
  wall   modelled on the real Ganesha ratings of issue 30 (bench/wall_calibration.py reads them):
         flat at 0.4–1 ms, then a wall, heavy-tailed trial noise with an AR(1) swing between
         consecutive trials that grows towards the edge, the trial after an overloaded one inflated,
         3 % outliers

The wall's calibration (bench/wall_calibration.py: 28 real rating logs, 2 s and 10 s trials, R_sat
40 ms), one entry per parameter (real vs the family, by the same code):
  WALL_BASE_MS 0.4–1.0
      real trial means at loads ≤ 0.8·λ40: 0.1–0.7 ms, mostly 0.2–0.5
  WALL_SCALE_MS, _SHARPNESS
      kept: width R_sat/2 → 10·R_sat at 60 s trials 1.8 % [1.3, 3.4] of λ40 vs the fitted real
      curves' 1.6 % [1.4, 5.0] (fits: S 0.02–1.1 ms, m 1.3–76, capacity/λ40 0.99; at 10 s real
      10 %, family 2 %: the issue's "within 5 %" is short trials' transient)
  WALL_SWING 0.45 at 10 s
      ∝ r^−½ like the trial noise (was 0.25 at every r): sd of log trial mean near λ40 at 10 s
      family 0.57, real 0.56 (2 loads); at 2 s family 1.5, real 2.4
  WALL_SWING_PHI 0.5
      von Neumann lag-1 of log trial means: family 0.14 at λ*, real 0.12 (17 pairs, 2 s)
  WALL_CARRY_OVER 1.1–2.1
      the trial after an overloaded one: real ×1.8–46 at 10 s (4), diluted ×10/60 to 60 s
  (no cold start)
      real first / later trial at a fresh load: median 1.02 (2 s, 54), 1.04 (10 s, 16)
  (60 s kept at r^−½)
      real 60 s trials (bench/wall_noise.py) never read near R_sat: flat or 0.3–3.4 s by the
      server's history, its λ40 moving ≥ 5 % (docs/performance-log.md, "… in 60 s trials")
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from workbench.controller.state import load_key
from workbench.controller.trial import TrialResult
from workbench.measure.simulated import SimulatedServer
from workbench.stats.intervals import region

__all__ = ["FAMILY_NAMES", "ValidityServer", "WallServer", "family_servers", "true_region"]


FAMILY_NAMES = ("mm", "knee", "heavy", "cold", "wall")

STUDY_SEED = 12345  # seed of the server draws (the same as test_decide_validity)
CAPACITY_OPS_S = (200.0, 5000.0)  # capacity, log-uniform
BASE_MS = (0.5, 3.0)  # non-queueing floor per op, uniform
SERVICE_MS = (2.0, 10.0)  # mean service time of the queueing part, uniform
MM_SERVERS = (1, 1, 2, 4, 8)  # M/M/m parallelism m, one of these (mostly M/M/1)
NOISE = (0.03, 0.08)  # trial cv at idle for a 60 s trial, uniform
LOAD_EXPONENT = 1.0  # cv ∝ (1 + (R − R0)/10 ms)^1.0: ≈ 4× idle at 40 ms
MM_OUTLIER_PROB = 0.03  # mm: share of outlier trials
OUTLIER_FACTOR = (1.5, 3.0)  # mm, cold: an outlier's mean and p95 × U(1.5, 3)
KNEE_SERVERS = (8.0, 32.0)  # knee: m log-uniform; region only ≈ 0.1–0.4 % of λ* wide
KNEE_OUTLIER_PROB = 0.03  # knee: share of outlier trials, as mm
HEAVY_NOISE_DIST = "t"  # heavy: Student t(3) trial noise scaled to unit variance
HEAVY_OUTLIER_PROB = 0.05  # heavy: share of outlier trials
HEAVY_OUTLIER_FACTOR = (1.5, 5.0)  # heavy: an outlier's mean and p95 × U(1.5, 5)
COLD_START_FACTOR = (1.2, 1.6)  # cold: first trial at a new load, mean and p95 × U(1.2, 1.6)
FAULT_SEED_OFFSET = 7_654_321  # the faults' own generator: seed + this (noise draws unchanged)
WALL_BASE_MS = (0.4, 1.0)  # wall: the flat part, uniform
WALL_SCALE_MS = (0.3, 1.5)  # wall: S of R = base + S·ρ^m/(1 − ρ), log-uniform (region ≈ 0.1–0.35 %)
WALL_SHARPNESS = (16.0, 48.0)  # wall: m, log-uniform (R(0.9·λ*) ≈ base … 2 ms)
# wall: log-sd of the AR(1) swing at R_sat in a 10 s trial (× min(1, queueing/R_sat))
WALL_SWING = 0.45
WALL_SWING_REF_S = 10.0  # wall: the swing's sd ∝ (10 s / runlength)^½, as the trial noise's
WALL_SWING_PHI = 0.5  # wall: lag-1 correlation of the swing between consecutive trials
WALL_SEED_OFFSET = 3_141_593  # wall: the swing's own generator
WALL_CARRY_OVER = (1.1, 2.1)  # wall: the trial after an overloaded one, mean and p95 × U(1.1, 2.1)


class ValidityServer(SimulatedServer):
    """A `SimulatedServer` with trial-level faults drawn from their own seeded generator.

    outlier_prob: chance that a trial is an outlier (mean and p95 × U(outlier_factor)).
    cold_start_factor: (lo, hi): the first trial at each new load has mean and p95 × U(lo, hi);
      None: no cold start. Faults draw exactly two uniforms per trial (deterministic per seed).
    """

    def __init__(
        self,
        *,
        outlier_prob: float = 0.0,
        outlier_factor: tuple[float, float] = OUTLIER_FACTOR,
        cold_start_factor: tuple[float, float] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not 0 <= outlier_prob < 1:
            raise ValueError(f"outlier_prob must be in [0, 1), got {outlier_prob!r}")
        self.outlier_prob = float(outlier_prob)
        self.outlier_factor = tuple(float(x) for x in outlier_factor)
        self.cold_start_factor = (
            None if cold_start_factor is None else tuple(float(x) for x in cold_start_factor)
        )
        self.fault_rng = np.random.default_rng(int(self.seed) + FAULT_SEED_OFFSET)
        self.seen_loads: set[float] = set()

    def measure(self, load_ops_s: float, runlength_s: float) -> TrialResult:
        t = super().measure(load_ops_s, runlength_s)
        u_out, u_size = (float(x) for x in self.fault_rng.random(2))
        factor = 1.0
        key = load_key(load_ops_s)
        if self.cold_start_factor is not None and key not in self.seen_loads:
            lo, hi = self.cold_start_factor
            factor *= lo + (hi - lo) * u_size
        self.seen_loads.add(key)
        if u_out < self.outlier_prob:
            lo, hi = self.outlier_factor
            factor *= lo + (hi - lo) * u_size
        if factor == 1.0:
            return t
        raw = {**(t.raw or {}), "fault_factor": factor}
        return dataclasses.replace(t, mean_ms=t.mean_ms * factor, p95_ms=t.p95_ms * factor, raw=raw)

    __call__ = measure


class WallServer(ValidityServer):
    """A wall: R(λ) = base + S·ρ^m/(1 − ρ) (flat while ρ^m is small, M/M/1-like at the edge), with
    an AR(1) log-normal swing u_t = φ·u_{t−1} + √(1 − φ²)·ε_t of the trial mean, scaled by
    WALL_SWING·√(10 s/r)·min(1, (R − base)/40 ms) (0 in the flat part), the trial after an
    overloaded one (load above capacity) × U(WALL_CARRY_OVER), on top of ValidityServer's faults."""

    def __init__(self, *, wall_ms: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wall_ms = float(wall_ms)
        self.swing_rng = np.random.default_rng(int(self.seed) + WALL_SEED_OFFSET)
        self.swing = 0.0
        self.overloaded = False

    def _queue_ms(self, rho: float) -> float:
        return self.wall_ms * rho**self.servers / (1.0 - rho)

    @property
    def idle_ms(self) -> float:
        return self.base_ms

    def true_peak_rate(self, r_sat_ms: float, l_sat_ms: float | None = None) -> float:
        """The load where the true mean (and p95) reach their thresholds: R is increasing in ρ, so
        bisection on ρ ∈ (0, 1) (60 halvings: ρ to 1e-18)."""

        def inv(threshold: float, k: float) -> float:
            lo, hi = 0.0, 1.0
            for _ in range(60):
                mid = (lo + hi) / 2.0
                lo, hi = (
                    (mid, hi) if self.base_ms + k * self._queue_ms(mid) <= threshold else (lo, mid)
                )
            return lo * self.capacity_ops_s

        lam = inv(float(r_sat_ms), 1.0)
        if l_sat_ms is not None:
            lam = min(lam, inv(float(l_sat_ms), -math.log(1.0 - self.quantile)))
        return lam

    def swing_sd(self, load_ops_s: float, runlength_s: float) -> float:
        """Log-sd of the swing of one trial: WALL_SWING·√(10 s/r)·min(1, queueing/40 ms)."""
        rho = min(self._rho(load_ops_s), 0.999)
        return (
            WALL_SWING
            * math.sqrt(WALL_SWING_REF_S / runlength_s)
            * min(1.0, self._queue_ms(rho) / 40.0)
        )

    def effective_cv(self, load_ops_s: float, runlength_s: float) -> float:
        """The sd of log trial mean that a mean of many consecutive trials averages down like an iid
        one's: √(cv² + sd_swing²·(1 + φ)/(1 − φ)) (AR(1) variance of a mean, Box, Jenkins & Reinsel
            §2.1.5)."""
        phi = WALL_SWING_PHI
        return math.sqrt(
            self.trial_cv(load_ops_s, runlength_s) ** 2
            + self.swing_sd(load_ops_s, runlength_s) ** 2 * (1 + phi) / (1 - phi)
        )

    def measure(self, load_ops_s: float, runlength_s: float) -> TrialResult:
        t = super().measure(load_ops_s, runlength_s)
        eps, u_carry = float(self.swing_rng.standard_normal()), float(self.swing_rng.random())
        lo, hi = WALL_CARRY_OVER
        carry = lo + (hi - lo) * u_carry if self.overloaded else 1.0
        self.overloaded = load_ops_s > self.capacity_ops_s
        self.swing = WALL_SWING_PHI * self.swing + math.sqrt(1.0 - WALL_SWING_PHI**2) * eps
        sd = self.swing_sd(load_ops_s, runlength_s)
        # swing of mean 1: the truth stays R(λ)
        f = carry * math.exp(sd * self.swing - sd * sd / 2.0)
        return dataclasses.replace(t, mean_ms=t.mean_ms * f, p95_ms=t.p95_ms * f)

    __call__ = measure


def true_region(server: SimulatedServer, r_sat_ms: float, width: float) -> tuple[float, float]:
    """The true peak-rate region in loads: [λ(R_sat(1 − s)), λ(R_sat(1 + s))] of the true mean."""
    lo_ms, hi_ms = region(r_sat_ms, width)
    return (server.true_peak_rate(lo_ms), server.true_peak_rate(hi_ms))


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(math.log(lo), math.log(hi))))


def family_servers(name: str, n: int, seed: int = STUDY_SEED) -> list[ValidityServer]:
    """n seeded servers of family `name` (FAMILY_NAMES); server i's trials use seed 1000 + i.

    Every family draws the same variates in the same order, so server i of mm, knee, heavy and
    cold share capacity, base, service and noise level (knee only replaces m); mm's are the
    servers of tests/controller/test_decide_validity.py plus outlier trials."""
    if name not in FAMILY_NAMES:
        raise ValueError(f"family must be one of {', '.join(FAMILY_NAMES)}; got {name!r}")
    rng = np.random.default_rng(seed)
    # its own stream: mm keeps test_decide_validity's servers
    knee_rng = np.random.default_rng(seed + 1)
    out: list[ValidityServer] = []
    for i in range(n):
        kw: dict[str, Any] = dict(
            capacity_ops_s=_log_uniform(rng, *CAPACITY_OPS_S),
            base_ms=float(rng.uniform(*BASE_MS)),
            service_ms=float(rng.uniform(*SERVICE_MS)),
            servers=float(rng.choice(MM_SERVERS)),
            noise=float(rng.uniform(*NOISE)),
            load_exponent=LOAD_EXPONENT,
            seed=1000 + i,
            name=f"{name}{i}",
        )
        knee_m = _log_uniform(knee_rng, *KNEE_SERVERS)
        if name == "mm":
            kw.update(outlier_prob=MM_OUTLIER_PROB)
        elif name == "knee":
            kw.update(servers=knee_m, outlier_prob=KNEE_OUTLIER_PROB)
        elif name == "heavy":
            kw.update(
                noise_dist=HEAVY_NOISE_DIST,
                outlier_prob=HEAVY_OUTLIER_PROB,
                outlier_factor=HEAVY_OUTLIER_FACTOR,
            )
        elif name == "cold":
            kw.update(cold_start_factor=COLD_START_FACTOR)
        else:
            wall_rng = np.random.default_rng(seed + 2 + 1000 * i)
            kw.update(
                base_ms=float(wall_rng.uniform(*WALL_BASE_MS)),
                servers=_log_uniform(wall_rng, *WALL_SHARPNESS),
                noise_dist=HEAVY_NOISE_DIST,
                outlier_prob=MM_OUTLIER_PROB,
                wall_ms=_log_uniform(wall_rng, *WALL_SCALE_MS),
            )
            out.append(WallServer(**kw))
            continue
        out.append(ValidityServer(**kw))
    return out
