"""Factor spaces and designed experiments for response-surface mapping (seed 000 §5.4-5.5, 002 §3.7, §4).

* ``FactorSpace`` of ``Numeric`` (levels and/or a range, linear or log scale) and ``Categorical`` factors;
  samples are plain dicts ``{name: value}`` in natural units.
* coding: numeric x -> 2 (u - u_lo) / (u_hi - u_lo) - 1 with u = x or log(x), so the range maps to [-1, 1];
  categorical factors become 0/1 dummy columns (treatment coding, first level = baseline).
* designs through ``pydoe`` 1.6: ``fullfact``, ``ff2n``, ``ccdesign``, ``bbdesign``, ``lhs``, and D-optimal
  subsets of a candidate grid (``pydoe.optimal_design``; a Fedorov exchange on the same model matrix as
  ``analysis.surface`` when categorical factors are present).
* seeding (seed 000 §5.4 / 002 §3.7): ``seed_order`` visits samples as a nearest-neighbour chain and
  ``nearest_seed`` returns the peak of the nearest finished sample (categorical mismatch -> default or an
  aggregate of the finished peaks).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import product
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pydoe

from analysis.surface import model_matrix

__all__ = [
    "Numeric", "Categorical", "FactorSpace", "DOptimal", "d_optimal", "seed_order", "nearest_seed",
    "log_det_information",
]

Sample = Mapping[str, Any]


@dataclass(frozen=True)
class Numeric:
    """A numeric factor. ``levels`` (for grids) and/or ``low``/``high`` (for continuous designs)."""

    name: str
    levels: tuple[float, ...] | None = None
    low: float | None = None
    high: float | None = None
    scale: str = "linear"  # "linear" | "log"
    integer: bool = False

    def __post_init__(self) -> None:
        if self.levels is not None:
            lv = tuple(float(v) for v in self.levels)
            if len(lv) < 1 or len(set(lv)) != len(lv):
                raise ValueError(f"factor {self.name!r}: levels must be non-empty and distinct")
            object.__setattr__(self, "levels", tuple(sorted(lv)))
            if self.low is None:
                object.__setattr__(self, "low", min(lv))
            if self.high is None:
                object.__setattr__(self, "high", max(lv))
        if self.low is None or self.high is None:
            raise ValueError(f"factor {self.name!r}: give levels or low and high")
        if not self.high > self.low:
            raise ValueError(f"factor {self.name!r}: high must be > low")
        if self.scale not in ("linear", "log"):
            raise ValueError(f"factor {self.name!r}: scale must be 'linear' or 'log'")
        if self.scale == "log" and self.low <= 0:
            raise ValueError(f"factor {self.name!r}: log scale needs low > 0")

    def _u(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return np.log(x) if self.scale == "log" else x

    def code(self, x: Any) -> np.ndarray:
        """Natural -> coded: 2 (u - u_lo)/(u_hi - u_lo) - 1, u = x or ln x."""
        lo, hi = self._u(self.low), self._u(self.high)
        return 2.0 * (self._u(x) - lo) / (hi - lo) - 1.0

    def decode(self, c: Any) -> np.ndarray:
        """Coded -> natural: inverse of ``code`` (rounded when ``integer``)."""
        lo, hi = self._u(self.low), self._u(self.high)
        u = lo + (np.asarray(c, dtype=float) + 1.0) * (hi - lo) / 2.0
        x = np.exp(u) if self.scale == "log" else u
        return np.round(x) if self.integer else x

    def level_values(self, n: int = 2) -> tuple[float, ...]:
        if self.levels is not None:
            return self.levels
        return tuple(float(v) for v in self.decode(np.linspace(-1, 1, n)))


@dataclass(frozen=True)
class Categorical:
    """A categorical factor (e.g. file-system type). The first level is the dummy-coding baseline."""

    name: str
    levels: tuple[Any, ...]

    def __post_init__(self) -> None:
        lv = tuple(self.levels)
        if len(lv) < 1 or len(set(lv)) != len(lv):
            raise ValueError(f"factor {self.name!r}: levels must be non-empty and distinct")
        object.__setattr__(self, "levels", lv)

    def index(self, v: Any) -> int:
        try:
            return self.levels.index(v)
        except ValueError:
            raise ValueError(f"factor {self.name!r}: {v!r} is not one of {self.levels}") from None


@dataclass(frozen=True)
class FactorSpace:
    factors: tuple[Numeric | Categorical, ...]

    def __init__(self, factors: Iterable[Numeric | Categorical]) -> None:
        fs = tuple(factors)
        names = [f.name for f in fs]
        if len(set(names)) != len(names) or not fs:
            raise ValueError("factor names must be non-empty and unique")
        object.__setattr__(self, "factors", fs)

    # ----------------------------------------------------------------- views
    @property
    def names(self) -> list[str]:
        return [f.name for f in self.factors]

    @property
    def numeric(self) -> list[Numeric]:
        return [f for f in self.factors if isinstance(f, Numeric)]

    @property
    def categorical(self) -> list[Categorical]:
        return [f for f in self.factors if isinstance(f, Categorical)]

    def __getitem__(self, name: str) -> Numeric | Categorical:
        for f in self.factors:
            if f.name == name:
                return f
        raise KeyError(name)

    @classmethod
    def infer(cls, samples: Sequence[Sample], log_ratio: float = 10.0) -> "FactorSpace":
        """A space spanning the given samples: numbers -> Numeric (log scale when all > 0 and max/min >= log_ratio),
        anything else -> Categorical with the levels in order of appearance."""
        if not samples:
            raise ValueError("no samples to infer a factor space from")
        out: list[Numeric | Categorical] = []
        for name in samples[0]:
            vals = [s[name] for s in samples]
            if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in vals):
                lv = sorted({float(v) for v in vals})
                if len(lv) == 1:
                    lv = [lv[0], lv[0] + 1.0]
                scale = "log" if lv[0] > 0 and lv[-1] / lv[0] >= log_ratio else "linear"
                out.append(Numeric(name, levels=tuple(lv), scale=scale,
                                   integer=all(float(v).is_integer() for v in vals)))
            else:
                out.append(Categorical(name, tuple(dict.fromkeys(vals))))
        return cls(out)

    # ----------------------------------------------------------------- coding
    def coded(self, samples: Sequence[Sample]) -> np.ndarray:
        """(n, k_numeric) coded numeric factors in [-1, 1] over the space's ranges."""
        cols = [f.code([s[f.name] for s in samples]) for f in self.numeric]
        return np.column_stack(cols) if cols else np.zeros((len(samples), 0))

    def dummies(self, samples: Sequence[Sample]) -> np.ndarray:
        """(n, sum(levels - 1)) 0/1 treatment-coded dummy columns of the categorical factors."""
        cols = []
        for f in self.categorical:
            idx = np.array([f.index(s[f.name]) for s in samples])
            for j in range(1, len(f.levels)):
                cols.append((idx == j).astype(float))
        return np.column_stack(cols) if cols else np.zeros((len(samples), 0))

    def dummy_names(self) -> list[str]:
        return [f"{f.name}={lv}" for f in self.categorical for lv in f.levels[1:]]

    def encode(self, samples: Sequence[Sample]) -> np.ndarray:
        """Natural -> one row per sample, in factor order: numeric coded, categorical as level index."""
        rows = []
        for s in samples:
            row = []
            for f in self.factors:
                row.append(float(f.code(s[f.name])) if isinstance(f, Numeric) else float(f.index(s[f.name])))
            rows.append(row)
        return np.array(rows, dtype=float).reshape(len(samples), len(self.factors))

    def decode(self, coded: np.ndarray) -> list[dict[str, Any]]:
        """Inverse of ``encode``."""
        coded = np.atleast_2d(np.asarray(coded, dtype=float))
        out = []
        for row in coded:
            s: dict[str, Any] = {}
            for f, c in zip(self.factors, row):
                if isinstance(f, Numeric):
                    v = float(f.decode(c))
                    s[f.name] = int(v) if f.integer else v
                else:
                    s[f.name] = f.levels[int(round(c))]
            out.append(s)
        return out

    def model_matrix(self, samples: Sequence[Sample], degree: int = 2) -> tuple[np.ndarray, list[str]]:
        """The RSM model matrix of ``analysis.surface.model_matrix`` for natural-unit samples."""
        return model_matrix(self.coded(samples), degree, self.dummies(samples),
                            [f.name for f in self.numeric], self.dummy_names())

    # ----------------------------------------------------------------- designs
    def _cross_categorical(self, numeric_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        cats = self.categorical
        if not cats:
            return numeric_rows
        out = []
        for combo in product(*[c.levels for c in cats]):
            for r in numeric_rows:
                out.append({**r, **{c.name: v for c, v in zip(cats, combo)}})
        return out

    def _ordered(self, s: Mapping[str, Any]) -> dict[str, Any]:
        return {n: s[n] for n in self.names}

    def fullfact(self, n_levels: int = 2) -> list[dict[str, Any]]:
        """Full factorial of every factor's levels (``pydoe.fullfact``); ranges without levels use n_levels."""
        lv = [f.levels if isinstance(f, Categorical) else f.level_values(n_levels) for f in self.factors]
        idx = pydoe.fullfact([len(v) for v in lv]).astype(int)
        return [self._natural({f.name: v[i] for f, v, i in zip(self.factors, lv, row)}) for row in idx]

    def grid(self, n_levels: int = 2) -> list[dict[str, Any]]:
        """Candidate grid = full factorial."""
        return self.fullfact(n_levels)

    def _natural(self, s: dict[str, Any]) -> dict[str, Any]:
        for f in self.numeric:
            if f.integer:
                s[f.name] = int(round(float(s[f.name])))
            else:
                s[f.name] = float(s[f.name])
        return s

    def _from_numeric_coded(self, coded: np.ndarray) -> list[dict[str, Any]]:
        rows = []
        for r in np.atleast_2d(coded):
            s = {f.name: f.decode(c) for f, c in zip(self.numeric, r)}
            rows.append(self._natural(s))
        return [self._ordered(s) for s in self._cross_categorical(rows)]

    def ff2n(self) -> list[dict[str, Any]]:
        """2-level full factorial at the numeric low/high (``pydoe.ff2n``), crossed with categorical levels."""
        k = len(self.numeric)
        if k == 0:
            return [self._ordered(s) for s in self._cross_categorical([{}])]
        return self._from_numeric_coded(pydoe.ff2n(k))

    def ccdesign(self, **kw: Any) -> list[dict[str, Any]]:
        """Central composite design on the numeric factors (``pydoe.ccdesign``, defaults face='ccf' so the
        axial points stay in range), crossed with categorical levels."""
        kw.setdefault("face", "ccf")
        return self._from_numeric_coded(pydoe.ccdesign(len(self.numeric), **kw))

    def bbdesign(self, center: int | None = None) -> list[dict[str, Any]]:
        """Box-Behnken design on >= 3 numeric factors (``pydoe.bbdesign``), crossed with categorical levels."""
        if len(self.numeric) < 3:
            raise ValueError("Box-Behnken needs at least 3 numeric factors")
        return self._from_numeric_coded(pydoe.bbdesign(len(self.numeric), center=center))

    def lhs(self, n: int, seed: int = 0, criterion: str | None = "maximin") -> list[dict[str, Any]]:
        """Latin hypercube of n samples inside the numeric ranges (``pydoe.lhs``); categorical levels assigned
        in balanced random order."""
        k = len(self.numeric)
        rng = np.random.default_rng(seed)
        unit = pydoe.lhs(k, samples=n, criterion=criterion, seed=int(seed)) if k else np.zeros((n, 0))
        rows = [self._natural({f.name: f.decode(2.0 * u - 1.0) for f, u in zip(self.numeric, r)}) for r in unit]
        for c in self.categorical:
            lv = [c.levels[i % len(c.levels)] for i in range(n)]
            perm = rng.permutation(n)
            for i, r in enumerate(rows):
                r[c.name] = lv[perm[i]]
        return [self._ordered(r) for r in rows]


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
    """Fedorov exchange without replacement: swap a design point for a candidate while log det(M'M) rises."""
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
        design.append(arg)
    return design


def d_optimal(space: FactorSpace, n: int, candidates: Sequence[Sample] | None = None, degree: int = 2,
              methods: Sequence[str] = ("detmax", "fedorov", "modified_fedorov"), n_levels: int = 3) -> DOptimal:
    """D-optimal subset of n distinct candidates (default: the space's full-factorial grid) for the RSM model.

    All-numeric spaces: ``pydoe.optimal_design(coded_candidates, n, degree, criterion="D", method=...)`` for each
    method (pydoe's own default, "sequential", is much weaker), points mapped back to candidate rows, the best
    det(X'X) kept, then polished by a Fedorov exchange. Spaces with categorical factors (dummy columns must not
    be squared, which pydoe's model would do): greedy start + Fedorov exchange on ``space.model_matrix``.
    """
    cand = list(candidates) if candidates is not None else space.grid(n_levels)
    if not 0 < n <= len(cand):
        raise ValueError(f"n must be in [1, {len(cand)}], got {n!r}")
    M, _ = space.model_matrix(cand, degree)
    p = M.shape[1]
    options: list[tuple[float, list[int], str, dict]] = []
    if not space.categorical:
        C = space.coded(cand)
        key = {tuple(np.round(r, 9)): i for i, r in enumerate(C)}
        for m in methods:
            try:
                pts, info = pydoe.optimal_design(C, n, degree, criterion="D", method=m)
            except Exception as exc:  # pragma: no cover - defensive: keep the other methods
                options.append((-math.inf, [], m, {"error": repr(exc)}))
                continue
            idx = list(dict.fromkeys(key[tuple(np.round(r, 9))] for r in pts if tuple(np.round(r, 9)) in key))
            if len(idx) < n:  # repeated points: top up greedily with distinct candidates
                idx = _greedy(M, n, idx)
            options.append((log_det_information(M[idx]), idx, f"pydoe:{m}", info))
    start = max(options, key=lambda o: o[0])[1] if options else _greedy(M, n)
    polished = _fedorov(M, n, start)
    options.append((log_det_information(M[polished]), polished,
                    "fedorov-exchange" if not options else "pydoe+fedorov-exchange", {}))
    ld, idx, method, info = max(options, key=lambda o: o[0])
    return DOptimal(indices=list(idx), samples=[dict(cand[i]) for i in idx], log_det=ld, method=method,
                    n_params=p, info=info)


# ----------------------------------------------------------------------- seeding
def _distance_matrix(space: FactorSpace, a: Sequence[Sample], b: Sequence[Sample],
                     mismatch: float = math.inf) -> np.ndarray:
    """Euclidean distance in coded numeric units; +mismatch for any categorical difference."""
    A, B = space.coded(a), space.coded(b)
    d = np.sqrt(((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)) if A.shape[1] else np.zeros((len(a), len(b)))
    for c in space.categorical:
        va = np.array([c.index(s[c.name]) for s in a])
        vb = np.array([c.index(s[c.name]) for s in b])
        d = d + np.where(va[:, None] != vb[None, :], mismatch, 0.0)
    return d


def seed_order(samples: Sequence[Sample], start: Sample | int | None = None,
               space: FactorSpace | None = None) -> list[int]:
    """Order in which to benchmark ``samples`` so that each can be seeded from a near finished one.

    Nearest-neighbour chain: start at ``start`` (an index, or the sample nearest to the given point; default
    the sample nearest to the all-low corner), then repeatedly go to the unvisited sample nearest to the
    current one (ties -> lowest index). Categorical mismatches count as distance 100 so each categorical
    level is finished before the chain moves on.
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
            low = {f.name: (f.low if isinstance(f, Numeric) else samples[0][f.name]) for f in space.factors}
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


def nearest_seed(sample: Sample, finished: Sequence[tuple[Sample, float]], default: float | None = None,
                 space: FactorSpace | None = None, fallback: str = "default") -> float | None:
    """Seed load for ``sample`` = peak rate of the nearest finished sample (seed 000 §5.4, 002 §3.7).

    Only finished samples with the same categorical levels count as "near" (distance in coded numeric units).
    If none matches, return ``default`` (fallback="default", seed 000) or the median of all finished peaks
    (fallback="aggregate", 002: "an aggregate of peak rates from previous samples"); ``default`` when
    nothing is finished.
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
