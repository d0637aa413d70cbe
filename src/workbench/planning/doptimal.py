"""D-optimal subsets of a candidate grid for the quadratic response-surface model (see design)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pydoe

from workbench.planning.design import FactorSpace, Sample


# ----------------------------------------------------------------------- D-optimal
def log_det_information(M: np.ndarray) -> float:
    """log det(M'M) (-inf when singular): the D criterion."""
    sign, ld = np.linalg.slogdet(M.T @ M)
    return float(ld) if sign > 0 else -math.inf


@dataclass
class DOptimal:
    indices: list[int]
    samples: list[dict[str, Any]]
    log_det: float
    method: str
    n_params: int
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def det(self) -> float:
        return math.exp(self.log_det) if math.isfinite(self.log_det) else 0.0


def _fedorov(M: np.ndarray, n: int, start: list[int], max_iter: int = 100) -> list[int]:
    """Fedorov exchange without replacement: swap a design point for a candidate while log det(M'M)
    rises."""
    design = list(start)
    best = log_det_information(M[design])
    for _ in range(max_iter):
        improved = False
        for pos in range(n):
            for cand in range(len(M)):
                if cand in design:
                    continue
                trial = design.copy()
                trial[pos] = cand
                v = log_det_information(M[trial])
                if v > best + 1e-10:
                    design, best, improved = trial, v, True
        if not improved:
            break
    return design


def _greedy(M: np.ndarray, n: int, start: Sequence[int] = ()) -> list[int]:
    """Greedy augmentation with a small ridge so the first p points can be chosen."""
    design = list(start)
    ridge = 1e-6 * np.eye(M.shape[1])
    while len(design) < n:
        best, arg = -math.inf, None
        for c in range(len(M)):
            if c in design:
                continue
            A = M[design + [c]]
            sign, ld = np.linalg.slogdet(A.T @ A + ridge)
            if ld > best:
                best, arg = ld, c
        if arg is None:  # every candidate is in the design: n > len(M), which d_optimal rules out
            raise AssertionError(f"no candidate left for point {len(design) + 1} of {n}")
        design.append(arg)
    return design


def _pydoe_options(
    C: np.ndarray, M: np.ndarray, n: int, degree: int, methods: Sequence[str]
) -> list[tuple[float, list[int], str, dict]]:
    """(log det, candidate rows, method, pydoe's info) of each of pydoe's methods on the coded
    candidates C, its points mapped back to rows of C (repeated ones topped up greedily)."""
    options: list[tuple[float, list[int], str, dict]] = []
    key = {tuple(np.round(r, 9)): i for i, r in enumerate(C)}
    for m in methods:
        try:
            pts, info = pydoe.optimal_design(C, n, degree, criterion="D", method=m)
        except Exception as exc:  # pragma: no cover - defensive: keep the other methods
            options.append((-math.inf, [], m, {"error": repr(exc)}))
            continue
        idx = list(
            dict.fromkeys(key[tuple(np.round(r, 9))] for r in pts if tuple(np.round(r, 9)) in key)
        )
        if len(idx) < n:  # repeated points: top up greedily with distinct candidates
            idx = _greedy(M, n, idx)
        options.append((log_det_information(M[idx]), idx, f"pydoe:{m}", info))
    return options


def d_optimal(
    space: FactorSpace,
    n: int,
    candidates: Sequence[Sample] | None = None,
    degree: int = 2,
    methods: Sequence[str] = ("detmax", "fedorov", "modified_fedorov"),
    n_levels: int = 3,
) -> DOptimal:
    """D-optimal subset of n distinct candidates (default: the space's full-factorial grid) for the
    RSM model.

    All-numeric spaces: ``pydoe.optimal_design(coded_candidates, n, degree, criterion="D",
    method=...)`` for each method (pydoe's own default, "sequential", is much weaker), points mapped
    back to candidate rows, the best det(X'X) kept, then polished by a Fedorov exchange. Spaces with
    categorical factors (dummy columns must not be squared, which pydoe's model would do): greedy
    start + Fedorov exchange on ``space.model_matrix``.
    """
    cand = list(candidates) if candidates is not None else space.grid(n_levels)
    if not 0 < n <= len(cand):
        raise ValueError(f"n must be in [1, {len(cand)}], got {n!r}")
    M, _ = space.model_matrix(cand, degree)
    p = M.shape[1]
    options = [] if space.categorical else _pydoe_options(space.coded(cand), M, n, degree, methods)
    start = max(options, key=lambda o: o[0])[1] if options else _greedy(M, n)
    polished = _fedorov(M, n, start)
    options.append(
        (
            log_det_information(M[polished]),
            polished,
            "fedorov-exchange" if not options else "pydoe+fedorov-exchange",
            {},
        )
    )
    ld, idx, method, info = max(options, key=lambda o: o[0])
    return DOptimal(
        indices=list(idx),
        samples=[dict(cand[i]) for i in idx],
        log_det=ld,
        method=method,
        n_params=p,
        info=info,
    )
