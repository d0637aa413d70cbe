"""Seeding order of a design's samples and the seed load of each (seed 000 §5.4, 002 §3.7)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from workbench.planning.design import FactorSpace, Numeric, Sample


# ----------------------------------------------------------------------- seeding
def _distance_matrix(
    space: FactorSpace, a: Sequence[Sample], b: Sequence[Sample], mismatch: float = math.inf
) -> np.ndarray:
    """Euclidean distance in coded numeric units; +mismatch for any categorical difference."""
    A, B = space.coded(a), space.coded(b)
    d = (
        np.sqrt(((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
        if A.shape[1]
        else np.zeros((len(a), len(b)))
    )
    for c in space.categorical:
        va = np.array([c.index(s[c.name]) for s in a])
        vb = np.array([c.index(s[c.name]) for s in b])
        d = d + np.where(va[:, None] != vb[None, :], mismatch, 0.0)
    return d


def seed_order(
    samples: Sequence[Sample], start: Sample | int | None = None, space: FactorSpace | None = None
) -> list[int]:
    """Order in which to benchmark ``samples`` so that each can be seeded from a near finished one.

    Nearest-neighbour chain: start at ``start`` (an index, or the sample nearest to the given point;
    default the sample nearest to the all-low corner), then repeatedly go to the unvisited sample
    nearest to the current one (ties -> lowest index). Categorical mismatches count as distance 100
    so each categorical level is finished before the chain moves on.
    """
    samples = list(samples)
    if not samples:
        return []
    space = space or FactorSpace.infer(samples)
    D = _distance_matrix(space, samples, samples, mismatch=100.0)
    if isinstance(start, (int, np.integer)):
        cur = int(start)
    else:
        if start is None:
            low = {
                f.name: (f.low if isinstance(f, Numeric) else samples[0][f.name])
                for f in space.factors
            }
        else:
            low = {**samples[0], **dict(start)}
        cur = int(np.argmin(_distance_matrix(space, [low], samples, mismatch=100.0)[0]))
    order = [cur]
    left = set(range(len(samples))) - {cur}
    while left:
        cand = sorted(left)
        nxt = cand[int(np.argmin(D[cur, cand]))]
        order.append(nxt)
        left.remove(nxt)
        cur = nxt
    return order


def nearest_seed(
    sample: Sample,
    finished: Sequence[tuple[Sample, float]],
    default: float | None = None,
    space: FactorSpace | None = None,
    fallback: str = "default",
) -> float | None:
    """Seed load for ``sample`` = peak rate of the nearest finished sample (seed 000 §5.4, 002
    §3.7).

    Only finished samples with the same categorical levels count as "near" (distance in coded
    numeric units). If none matches, return ``default`` (fallback="default", seed 000) or the median
    of all finished peaks (fallback="aggregate", 002: "an aggregate of peak rates from previous
    samples"); ``default`` when nothing is finished.
    """
    if fallback not in ("default", "aggregate"):
        raise ValueError("fallback must be 'default' or 'aggregate'")
    done = [(dict(f), float(p)) for f, p in finished if p is not None and math.isfinite(float(p))]
    if not done:
        return default
    space = space or FactorSpace.infer([sample] + [f for f, _ in done])
    d = _distance_matrix(space, [sample], [f for f, _ in done])[0]
    if np.all(np.isinf(d)):
        return float(np.median([p for _, p in done])) if fallback == "aggregate" else default
    return done[int(np.argmin(d))][1]
