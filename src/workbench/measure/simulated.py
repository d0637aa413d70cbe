"""A simulated server: the same ``measure(load, runlength_s)`` contract as the real harness.

Response-time model (per operation, steady state, load factor rho = lambda / capacity):

    R(lambda)   = base_ms + service_ms / (1 - rho**m)           # M/M/m approximation (M/M/1: exact)
    p95(lambda) = base_ms + ln(1 / (1 - 0.95)) * (R - base_ms)  # exponential tail (M/M/1: exact)
    m           = servers or max(1, capacity * service_ms / 1000)  # the capacity's parallelism

so R rises from R(0) = base_ms + service_ms to infinity at capacity, and the peak rate has a closed
form (``true_peak_rate``): rho* = (1 - service_ms / (R_sat - base_ms)) ** (1/m).

Trial noise (seed 000 Figs. 4-5: variability rises with load and falls with runlength):

    cv(lambda, r) = noise * sqrt(runlength_ref_s / r)
                    * (1 + (R(lambda) - R(0)) / noise_ref_ms) ** load_exponent
    trial mean    = R(lambda) * max(1 + cv * z, 0.05) + drift_ms_per_s * clock_s

z ~ N(0, 1) (or Student t with 3 df scaled to unit variance when ``heavy_tail``; or a mean-1
lognormal with ``noise_dist="lognormal"``). cv grows with the queueing delay R - R(0) (so it rises
steeply near saturation, where R -> inf) and scales as r^(-1/2) (the mean of ~lambda*r correlated
samples). With the defaults (noise 0.04, r_ref 60 s, noise_ref_ms 10, gamma 0.75) a trial at R = 40
ms has cv ~ 0.12 at r = 60 s and ~0.07 at 180 s, close to seed 000 Fig. 5 (95% CI 20-27 ms from 5
trials of 90 s at rho = 0.9, i.e. cv ~ 0.12).

Overload (rho >= rho_max = 0.999): a trial of length r sees a queue growing at (lambda - capacity)
ops/s, whose time-average wait is (lambda - capacity) * r / (2 * capacity) s; that term is added to
R(rho_max). The achieved rate is Poisson(min(lambda, capacity) * r) / r.

Everything is deterministic given ``seed`` and the sequence of calls: each ``measure`` draws the
same fixed number of variates from one ``numpy.random.Generator`` seeded at construction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from workbench.controller.trial import TrialResult
from workbench.measure.factor_model import family_capacity

__all__ = ["SimulatedServer"]


RHO_MAX = 0.999  # beyond this the steady-state model is replaced by the transient overload term


_LN20 = math.log(20.0)  # p95 of an exponential = ln(1/0.05) * mean


def _quantile_factor(q: float) -> float:
    """ln(1/(1-q)): the q-quantile of an exponential with mean 1."""
    return -math.log(1.0 - q)


def _check_model(
    capacity_ops_s: float,
    base_ms: float,
    service_ms: float,
    noise: float,
    invalid_prob: float,
    quantile: float,
) -> None:
    """ValueError naming the first model parameter out of its range."""
    if not capacity_ops_s > 0:
        raise ValueError(f"capacity_ops_s must be > 0, got {capacity_ops_s!r}")
    if base_ms < 0 or not service_ms > 0:
        raise ValueError("base_ms must be >= 0 and service_ms > 0")
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise!r}")
    if not 0 <= invalid_prob < 1:
        raise ValueError(f"invalid_prob must be in [0, 1), got {invalid_prob!r}")
    if not 0 < quantile < 1:
        raise ValueError(f"quantile must be in (0, 1), got {quantile!r}")


class SimulatedServer:
    """A deterministic, seeded, queueing-model server.

    Parameters
    ----------
    capacity_ops_s: throughput at which the mean response time goes to infinity.
    base_ms: fixed per-operation floor (network, RPC, CPU) that does not queue.
    service_ms: mean service time of the queueing part; R(0) = base_ms + service_ms.
    servers: parallelism m of the M/M/m approximation (default: capacity * service_ms / 1000, at
        least 1).
    seed: seed of the numpy Generator; results depend only on it and the call sequence.
    noise: relative std of a trial mean at low load and runlength ``runlength_ref_s``. 0 -> exact
        model values.
    load_exponent: gamma in cv ∝ (1 + (R - R0)/noise_ref_ms)^gamma (how steeply noise rises toward
        saturation).
    noise_ref_ms: queueing delay at which the noise has grown by 2^gamma.
    runlength_ref_s: runlength at which ``noise`` is specified (cv ∝ r^-1/2).
    heavy_tail: True -> Student-t(3) trial noise (scaled to unit variance) instead of normal.
    noise_dist: "normal" | "t" | "lognormal" (overrides heavy_tail when given explicitly).
    drift_ms_per_s: slow additive drift of the mean per second of simulated clock (sum of
        runlengths).
    invalid_prob: probability that a trial comes back ``valid=False`` (simulated harness fault).
    generator_max_ops_s: loads above this come back ``valid=False`` ("generator saturated").
    quantile: the tail quantile reported as ``p95_ms`` (0.95).
    """

    def __init__(
        self,
        capacity_ops_s: float = 1000.0,
        base_ms: float = 2.0,
        service_ms: float = 5.0,
        servers: float | None = None,
        seed: int = 0,
        noise: float = 0.04,
        load_exponent: float = 0.75,
        noise_ref_ms: float = 10.0,
        runlength_ref_s: float = 60.0,
        heavy_tail: bool = False,
        noise_dist: str | None = None,
        drift_ms_per_s: float = 0.0,
        invalid_prob: float = 0.0,
        generator_max_ops_s: float | None = None,
        quantile: float = 0.95,
        name: str = "",
    ) -> None:
        # every argument as given (with_seed builds the copy from them): before any other name
        self._kwargs: dict[str, Any] = {k: v for k, v in locals().items() if k != "self"}
        _check_model(capacity_ops_s, base_ms, service_ms, noise, invalid_prob, quantile)
        dist = noise_dist or ("t" if heavy_tail else "normal")
        if dist not in ("normal", "t", "lognormal"):
            raise ValueError(f"noise_dist must be 'normal', 't' or 'lognormal', got {noise_dist!r}")
        self.capacity_ops_s = float(capacity_ops_s)
        self.base_ms = float(base_ms)
        self.service_ms = float(service_ms)
        self.servers = (
            float(servers)
            if servers is not None
            else max(1.0, self.capacity_ops_s * self.service_ms / 1000.0)
        )
        self.seed = seed
        self.noise = float(noise)
        self.load_exponent = float(load_exponent)
        if not noise_ref_ms > 0:
            raise ValueError(f"noise_ref_ms must be > 0, got {noise_ref_ms!r}")
        self.noise_ref_ms = float(noise_ref_ms)
        self.runlength_ref_s = float(runlength_ref_s)
        self.noise_dist = dist
        self.drift_ms_per_s = float(drift_ms_per_s)
        self.invalid_prob = float(invalid_prob)
        self.generator_max_ops_s = generator_max_ops_s
        self.quantile = float(quantile)
        self.name = name
        self.factors: dict[str, Any] | None = None
        self.family: str | None = None
        self.rng = np.random.default_rng(seed)
        self.clock_s = 0.0  # simulated time consumed by trials (sum of runlengths)
        self.n_calls = 0

    # ------------------------------------------------------------------ model
    def __repr__(self) -> str:
        return (
            f"SimulatedServer(capacity_ops_s={self.capacity_ops_s:.1f}, base_ms={self.base_ms}, "
            f"service_ms={self.service_ms}, servers={self.servers:.2f}, seed={self.seed}, "
            f"noise={self.noise})"
        )

    def with_seed(self, seed: int) -> SimulatedServer:
        """A fresh copy (clock 0, new generator) with the same model and another seed."""
        s = SimulatedServer(**{**self._kwargs, "seed": seed})
        s.factors, s.family = self.factors, self.family
        return s

    def _rho(self, load_ops_s: float) -> float:
        return max(float(load_ops_s), 0.0) / self.capacity_ops_s

    def _queue_ms(self, rho: float) -> float:
        # service_ms / (1 - rho^m): M/M/m approximation of the queueing part (exact for m = 1)
        return self.service_ms / (1.0 - rho**self.servers)

    def true_mean_ms(self, load_ops_s: float) -> float:
        """Steady-state mean response time (ms); inf at or above capacity."""
        rho = self._rho(load_ops_s)
        if rho >= 1.0:
            return math.inf
        return self.base_ms + self._queue_ms(rho)

    def true_p95_ms(self, load_ops_s: float) -> float:
        """Steady-state ``quantile`` (default 95th percentile) response time (ms); inf at or above
        capacity."""
        rho = self._rho(load_ops_s)
        if rho >= 1.0:
            return math.inf
        # exponential tail
        return self.base_ms + _quantile_factor(self.quantile) * self._queue_ms(rho)

    def true_peak_rate(self, r_sat_ms: float, l_sat_ms: float | None = None) -> float:
        """Highest load with true mean <= r_sat_ms (and true p95 <= l_sat_ms): closed-form inverse
        of R(lambda).

        rho^m = 1 - service / (R_sat - base)           (mean rule)
        rho^m = 1 - ln20 * service / (L_sat - base)    (p95 rule)
        Returns 0.0 when even an idle server violates the threshold.
        """

        def inv(threshold: float, k: float) -> float:
            if threshold - self.base_ms <= k * self.service_ms:
                return 0.0
            x = 1.0 - k * self.service_ms / (threshold - self.base_ms)
            return self.capacity_ops_s * x ** (1.0 / self.servers)

        lam = inv(float(r_sat_ms), 1.0)
        if l_sat_ms is not None:
            lam = min(lam, inv(float(l_sat_ms), _quantile_factor(self.quantile)))
        return lam

    @property
    def idle_ms(self) -> float:
        """R(0) = base_ms + service_ms."""
        return self.base_ms + self.service_ms

    def trial_cv(self, load_ops_s: float, runlength_s: float) -> float:
        """Relative std of one trial's mean: noise * sqrt(r_ref / r) * (1 + (R - R0)/R_ref)^gamma
        (000 Figs. 4-5)."""
        r_model = self._model_mean_ms(load_ops_s, runlength_s)
        mult = min((1.0 + (r_model - self.idle_ms) / self.noise_ref_ms) ** self.load_exponent, 1e3)
        return self.noise * math.sqrt(self.runlength_ref_s / float(runlength_s)) * mult

    def _overload_ms(self, load_ops_s: float, runlength_s: float) -> float:
        # transient queue growth above capacity: mean extra wait = (lambda - mu) * r / (2 mu)
        # seconds
        excess = max(float(load_ops_s) - self.capacity_ops_s, 0.0)
        return 1000.0 * excess * float(runlength_s) / (2.0 * self.capacity_ops_s)

    def _model_mean_ms(self, load_ops_s: float, runlength_s: float) -> float:
        rho = min(self._rho(load_ops_s), RHO_MAX)
        return self.base_ms + self._queue_ms(rho) + self._overload_ms(load_ops_s, runlength_s)

    def _model_p95_ms(self, load_ops_s: float, runlength_s: float) -> float:
        rho = min(self._rho(load_ops_s), RHO_MAX)
        # a linearly growing wait is uniform on [0, 2*avg]: its 95th percentile is 1.9 * avg
        return (
            self.base_ms
            + _quantile_factor(self.quantile) * self._queue_ms(rho)
            + 2.0 * self.quantile * self._overload_ms(load_ops_s, runlength_s)
        )

    # ---------------------------------------------------------------- measure
    def _draw(self) -> tuple[float, float]:
        """Two unit-variance, mean-zero shocks (relative) of the configured distribution (fixed draw
        count)."""
        g = self.rng
        if self.noise_dist == "t":
            z = g.standard_t(3, size=2) / math.sqrt(3.0)  # Var(t3) = 3
        else:
            z = g.standard_normal(2)
        return float(z[0]), float(z[1])

    def _factor(self, cv: float, z: float) -> float:
        if self.noise_dist == "lognormal":
            s2 = math.log1p(cv * cv)  # lognormal with mean 1 and coefficient of variation cv
            return math.exp(math.sqrt(s2) * z - s2 / 2.0)
        return max(1.0 + cv * z, 0.05)

    def measure(self, load_ops_s: float, runlength_s: float) -> TrialResult:
        """Run one simulated trial at ``load_ops_s`` for ``runlength_s`` seconds."""
        load = float(load_ops_s)
        r = float(runlength_s)
        if not (load > 0 and math.isfinite(load)):
            raise ValueError(f"load_ops_s must be a finite number > 0, got {load_ops_s!r}")
        if not (r > 0 and math.isfinite(r)):
            raise ValueError(f"runlength_s must be a finite number > 0, got {runlength_s!r}")
        self.n_calls += 1
        # fixed number of draws per call: z, z2, poisson count, invalid uniform
        z, z2 = self._draw()
        served = min(load, self.capacity_ops_s)
        ops = int(self.rng.poisson(served * r)) if self.noise > 0 else int(round(served * r))
        u = float(self.rng.random())
        t_mid = self.clock_s + r / 2.0
        self.clock_s += r

        mean0 = self._model_mean_ms(load, r)
        p950 = self._model_p95_ms(load, r)
        cv = self.trial_cv(load, r)
        drift = self.drift_ms_per_s * t_mid
        if self.noise > 0:
            mean = mean0 * self._factor(cv, z) + drift
            zp = 0.8 * z + 0.6 * z2  # p95 noise correlated with the mean's (unit variance)
            p95 = self.base_ms + (p950 - self.base_ms) * self._factor(cv, zp) + drift
            rate = ops / r
        else:
            mean, p95, rate = mean0 + drift, p950 + drift, served
        mean = max(mean, 0.0)
        p95 = max(p95, mean)
        valid, reason = True, ""
        if self.generator_max_ops_s is not None and load > self.generator_max_ops_s:
            valid, reason = False, "generator_saturated"
        elif u < self.invalid_prob:
            valid, reason = False, "simulated harness fault"
        return TrialResult(
            mean_ms=mean,
            p95_ms=p95,
            achieved_rate=rate,
            valid=valid,
            reason=reason,
            load_ops_s=load,
            runlength_s=r,
            std_ms=max(mean - self.base_ms, 0.0),  # exponential: std = mean of queue part
            ops_total=ops,
            errors=0,
            raw={
                "simulated": True,
                "load_factor": load / self.capacity_ops_s,
                "cv": cv,
                "clock_s": self.clock_s,
            },
        )

    __call__ = measure

    # ---------------------------------------------------------------- factors
    @classmethod
    def for_factors(
        cls, family: str, factors: Mapping[str, Any], seed: int = 0, **kwargs: Any
    ) -> SimulatedServer:
        """A server whose capacity and service time depend on factors (seed 000 Fig. 2 in kind).

        family: "db" (disk-bound), "web" (memory/cache-bound), "mail" (metadata/sync-write mix).
        factors: threads (nfsds), disks, memory_mb, fs ("ext4" | "xfs" | "btrfs"); missing ones take
            defaults.
        kwargs: passed to the constructor (noise, heavy_tail, ...).
        """
        cap, service_ms, base_ms = family_capacity(family, factors)
        s = cls(
            capacity_ops_s=cap,
            base_ms=base_ms,
            service_ms=service_ms,
            seed=seed,
            name=f"{family}:{dict(factors)}",
            **kwargs,
        )
        s._kwargs.update(capacity_ops_s=cap, base_ms=base_ms, service_ms=service_ms)
        s.family, s.factors = family, dict(factors)
        return s
