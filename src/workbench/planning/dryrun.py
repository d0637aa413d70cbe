"""The dry-run planner: a rating's expected cost, trials and convergence on simulated servers.

``plan(spec, servers)`` runs ``find_peak`` against seeded ``SimulatedServer``s (one or a grid of
them, as a sweep would visit them, seeded from the nearest finished sample) and summarises."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.controller.decide import find_peak
from workbench.measure.simulated import SimulatedServer
from workbench.planning.design import FactorSpace
from workbench.planning.seeding import nearest_seed, seed_order


# ------------------------------------------------------------------------ planner
def _find_peak() -> Callable[..., Any]:
    return find_peak  # a seam: tests count the planner's calls


def _summary(xs: Sequence[float]) -> dict[str, float]:
    a = np.asarray(xs, dtype=float)
    if a.size == 0:
        return {
            "mean": math.nan,
            "std": math.nan,
            "p10": math.nan,
            "p50": math.nan,
            "p90": math.nan,
        }
    return {
        "mean": float(a.mean()),
        "std": float(a.std(ddof=1)) if a.size > 1 else 0.0,
        "p10": float(np.percentile(a, 10)),
        "p50": float(np.percentile(a, 50)),
        "p90": float(np.percentile(a, 90)),
    }


def _run_one(spec: Any, server: SimulatedServer, find_peak: Callable[..., Any]) -> dict[str, Any]:
    res = find_peak(spec, server.measure)
    r_sat = getattr(spec, "r_sat_ms", 40.0)
    l_sat = getattr(spec, "l_sat_ms", None)
    true = server.true_peak_rate(r_sat, l_sat)
    loads = {t.load_ops_s for t in res.trials}
    peak = res.peak_rate
    return {
        "cost_s": float(res.cost_s),
        "trials": int(res.n_trials if hasattr(res, "n_trials") else len(res.trials)),
        "loads": int(getattr(res, "n_loads", len(loads))),
        "converged": bool(res.converged),
        "peak_rate": float(peak) if peak is not None else math.nan,
        "true_peak": true,
        "rel_error": (abs(peak - true) / true) if (peak is not None and true > 0) else math.nan,
        "result": res,
    }


@dataclass(frozen=True)
class _Sweep:
    """The sweep form of a plan: one server per sample of the family, seeded from the nearest
    finished sample when `seeding` (the first: the one nearest `start`), built with
    `server_kwargs`."""

    samples: list[Mapping[str, Any]]
    family: str
    seeding: bool
    start: Mapping[str, Any] | None
    server_kwargs: Mapping[str, Any]


def _sweep_once(
    spec: Any,
    sweep: _Sweep,
    rep_seed: int,
    find_peak: Callable[..., Any],
    runs: list,
    per_sample_cost: dict[int, list[float]],
    keep_results: bool,
) -> tuple[float, float, float]:
    """One repetition of a sweep's plan: each sample's rating, seeded from the nearest finished one;
    appends to `runs` and `per_sample_cost`, returns the totals (cost, trials, loads)."""
    samples, seeding = sweep.samples, sweep.seeding
    order = list(range(len(samples)))
    space = None
    if seeding:
        space = FactorSpace.infer(samples)
        order = seed_order(samples, start=sweep.start, space=space)
    finished: list[tuple[Mapping[str, Any], float]] = []
    rc = rt = rl = 0.0
    for idx in order:
        f = samples[idx]
        srv = SimulatedServer.for_factors(
            sweep.family, f, seed=rep_seed * 1000 + idx, **sweep.server_kwargs
        )
        sp = spec
        if seeding and finished:
            s_load = nearest_seed(
                f, finished, default=getattr(spec, "seed_load", None), space=space
            )
            if s_load is not None and s_load > 0:
                sp = dataclasses.replace(spec, seed_load=float(s_load))
        out = _run_one(sp, srv, find_peak)
        out["sample"] = idx
        if not keep_results:
            out.pop("result")
        runs.append(out)
        per_sample_cost.setdefault(idx, []).append(out["cost_s"])
        if out["converged"] and math.isfinite(out["peak_rate"]):
            finished.append((f, out["peak_rate"]))
        rc += out["cost_s"]
        rt += out["trials"]
        rl += out["loads"]
    return rc, rt, rl


def plan(
    spec: Any,
    servers: Any,
    reps: int = 10,
    seed: int = 0,
    family: str | None = None,
    seeding: bool = False,
    start: Mapping[str, Any] | None = None,
    server_kwargs: Mapping[str, Any] | None = None,
    keep_results: bool = False,
) -> dict[str, Any]:
    """Dry run: expected cost, trials and convergence of ``find_peak(spec, ...)`` before any
    testbed time.

    servers: a SimulatedServer, a list of them, a callable ``rep -> SimulatedServer``, or (sweep
      form) a list of factor dicts together with ``family=`` (one server per sample via
      ``SimulatedServer.for_factors``).
    reps: independent repetitions (each server is re-seeded per repetition with ``with_seed``).
    seeding (sweep form): visit samples in ``design.seed_order`` and set ``spec.seed_load`` to the
      peak found at the nearest finished sample (seed 000 §5.4 / 002 §3.7); the first sample uses
      ``spec.seed_load`` as given.

    Returns dict with expected_cost_s, expected_trials, expected_loads, convergence_rate, and their
    spread (cost_s / trials / loads: mean, std, p10, p50, p90 over repetitions of the whole plan),
    n_runs, per-run rel_error of the peak vs the true peak, and for sweeps per-sample mean cost.
    """
    find_peak = _find_peak()
    sweep = None
    if isinstance(servers, (list, tuple)) and len(servers) > 0 and isinstance(servers[0], Mapping):
        if family is None:
            raise ValueError("sweep form needs family= ('db', 'web' or 'mail')")
        sweep = _Sweep(list(servers), family, seeding, start, dict(server_kwargs or {}))
    if isinstance(servers, SimulatedServer):
        servers = [servers]
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps!r}")

    totals: list[tuple[float, float, float]] = []  # per repetition: cost, trials, loads
    runs: list[dict[str, Any]] = []
    per_sample: dict[int, list[float]] = {}  # sweep form: each sample's cost per repetition
    for rep in range(reps):
        rep_seed = seed + 7919 * rep
        if sweep is not None:
            once = _sweep_once(spec, sweep, rep_seed, find_peak, runs, per_sample, keep_results)
        else:
            once = _servers_once(spec, servers, rep, rep_seed, find_peak, runs, keep_results)
        totals.append(once)
    out = _plan_summary(totals, runs, reps)
    if sweep is not None:
        out["per_sample_cost_s"] = {i: float(np.mean(v)) for i, v in sorted(per_sample.items())}
    return out


def _servers_once(
    spec: Any,
    servers: Any,
    rep: int,
    rep_seed: int,
    find_peak: Callable[..., Any],
    runs: list[dict[str, Any]],
    keep_results: bool,
) -> tuple[float, float, float]:
    """One repetition of the plan of plain servers (a list of them, re-seeded, or a callable
    rep -> server); appends to `runs`, returns the totals (cost, trials, loads)."""
    rc = rt = rl = 0.0
    srv_list = [servers(rep)] if callable(servers) else list(servers)
    for j, s in enumerate(srv_list):
        srv = s if callable(servers) else s.with_seed(rep_seed * 1000 + j + (s.seed or 0))
        out = _run_one(spec, srv, find_peak)
        if not keep_results:
            out.pop("result")
        runs.append(out)
        rc += out["cost_s"]
        rt += out["trials"]
        rl += out["loads"]
    return rc, rt, rl


def _plan_summary(
    totals: Sequence[tuple[float, float, float]], runs: Sequence[Mapping[str, Any]], reps: int
) -> dict[str, Any]:
    """plan's answer from the repetitions' totals and every rating's run."""
    totals_cost, totals_trials, totals_loads = ([t[i] for t in totals] for i in range(3))
    conv = [r["converged"] for r in runs]
    errs = [r["rel_error"] for r in runs if math.isfinite(r["rel_error"])]
    return {
        "expected_cost_s": float(np.mean(totals_cost)),
        "expected_trials": float(np.mean(totals_trials)),
        "expected_loads": float(np.mean(totals_loads)),
        "convergence_rate": float(np.mean(conv)) if conv else math.nan,
        "non_converged": int(len(conv) - sum(conv)),
        "cost_s": _summary(totals_cost),
        "trials": _summary(totals_trials),
        "loads": _summary(totals_loads),
        "median_rel_error": float(statistics.median(errs)) if errs else math.nan,
        "n_runs": len(runs),
        "reps": reps,
        "runs": runs,
    }
