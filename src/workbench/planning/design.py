"""Factor spaces and designed experiments for response-surface mapping (seed 000 §5.4-5.5, 002 §3.7,
§4).

* ``FactorSpace`` of ``Numeric`` (levels and/or a range, linear or log scale) and ``Categorical``
  factors; samples are plain dicts ``{name: value}`` in natural units.
* coding: numeric x -> 2 (u - u_lo) / (u_hi - u_lo) - 1 with u = x or log(x), so the range maps to
  [-1, 1]; categorical factors become 0/1 dummy columns (treatment coding, first level = baseline).
* designs through ``pydoe`` 1.6: ``fullfact``, ``ff2n``, ``ccdesign``, ``bbdesign``, ``lhs``, and
  D-optimal subsets of a candidate grid (``pydoe.optimal_design``; a Fedorov exchange on the same
  model matrix as ``workbench.stats.rsm`` when categorical factors are present).
* seeding (seed 000 §5.4 / 002 §3.7): ``seed_order`` visits samples as a nearest-neighbour chain and
  ``nearest_seed`` returns the peak of the nearest finished sample (categorical mismatch -> default
  or an aggregate of the finished peaks).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

import numpy as np
import pydoe

from workbench.stats.rsm import model_matrix

__all__ = ["Numeric", "Categorical", "FactorSpace", "Sample"]


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
    """A categorical factor (e.g. file-system type). The first level is the dummy-coding
    baseline."""

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
    def infer(cls, samples: Sequence[Sample], log_ratio: float = 10.0) -> FactorSpace:
        """A space spanning the given samples: numbers -> Numeric (log scale when all > 0 and
        max/min >= log_ratio), anything else -> Categorical with the levels in order of
        appearance."""
        if not samples:
            raise ValueError("no samples to infer a factor space from")
        out: list[Numeric | Categorical] = []
        for name in samples[0]:
            vals = [s[name] for s in samples]
            if all(
                isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                for v in vals
            ):
                lv = sorted({float(v) for v in vals})
                if len(lv) == 1:
                    lv = [lv[0], lv[0] + 1.0]
                scale = "log" if lv[0] > 0 and lv[-1] / lv[0] >= log_ratio else "linear"
                out.append(
                    Numeric(
                        name,
                        levels=tuple(lv),
                        scale=scale,
                        integer=all(float(v).is_integer() for v in vals),
                    )
                )
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
        """Natural -> one row per sample, in factor order: numeric coded, categorical as level
        index."""
        rows = []
        for s in samples:
            row = []
            for f in self.factors:
                row.append(
                    float(f.code(s[f.name]))
                    if isinstance(f, Numeric)
                    else float(f.index(s[f.name]))
                )
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

    def model_matrix(
        self, samples: Sequence[Sample], degree: int = 2
    ) -> tuple[np.ndarray, list[str]]:
        """The RSM model matrix of ``workbench.stats.rsm.model_matrix`` for natural-unit samples."""
        return model_matrix(
            self.coded(samples),
            degree,
            self.dummies(samples),
            [f.name for f in self.numeric],
            self.dummy_names(),
        )

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
        """Full factorial of every factor's levels (``pydoe.fullfact``); ranges without levels use
        n_levels."""
        lv = [
            f.levels if isinstance(f, Categorical) else f.level_values(n_levels)
            for f in self.factors
        ]
        idx = pydoe.fullfact([len(v) for v in lv]).astype(int)
        return [
            self._natural({f.name: v[i] for f, v, i in zip(self.factors, lv, row)}) for row in idx
        ]

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
        """2-level full factorial at the numeric low/high (``pydoe.ff2n``), crossed with categorical
        levels."""
        k = len(self.numeric)
        if k == 0:
            return [self._ordered(s) for s in self._cross_categorical([{}])]
        return self._from_numeric_coded(pydoe.ff2n(k))

    def ccdesign(self, **kw: Any) -> list[dict[str, Any]]:
        """Central composite design on the numeric factors (``pydoe.ccdesign``, defaults face='ccf'
        so the axial points stay in range), crossed with categorical levels."""
        kw.setdefault("face", "ccf")
        return self._from_numeric_coded(pydoe.ccdesign(len(self.numeric), **kw))

    def bbdesign(self, center: int | None = None) -> list[dict[str, Any]]:
        """Box-Behnken design on >= 3 numeric factors (``pydoe.bbdesign``), crossed with categorical
        levels."""
        if len(self.numeric) < 3:
            raise ValueError("Box-Behnken needs at least 3 numeric factors")
        return self._from_numeric_coded(pydoe.bbdesign(len(self.numeric), center=center))

    def lhs(self, n: int, seed: int = 0, criterion: str | None = "maximin") -> list[dict[str, Any]]:
        """Latin hypercube of n samples inside the numeric ranges (``pydoe.lhs``); categorical
        levels assigned in balanced random order."""
        k = len(self.numeric)
        rng = np.random.default_rng(seed)
        unit = (
            pydoe.lhs(k, samples=n, criterion=criterion, seed=int(seed)) if k else np.zeros((n, 0))
        )
        rows = [
            self._natural({f.name: f.decode(2.0 * u - 1.0) for f, u in zip(self.numeric, r)})
            for r in unit
        ]
        for c in self.categorical:
            lv = [c.levels[i % len(c.levels)] for i in range(n)]
            perm = rng.permutation(n)
            for i, r in enumerate(rows):
                r[c.name] = lv[perm[i]]
        return [self._ordered(r) for r in rows]
