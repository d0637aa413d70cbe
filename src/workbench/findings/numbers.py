"""Numbers in records: a field may be None, NaN, a string or missing; a figure counts only when
finite."""

from __future__ import annotations

import math
from typing import Any, TypeGuard, overload


@overload
def finite(x: Any, /) -> TypeGuard[float]: ...
@overload
def finite(*xs: Any) -> bool: ...
def finite(*xs: Any) -> bool:
    """Every x is a finite number (or a string float() reads as one: for mypy, one x is a float)."""
    try:
        return all(x is not None and math.isfinite(float(x)) for x in xs)
    except (TypeError, ValueError):
        return False
