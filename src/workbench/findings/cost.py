"""A rating's cost in words: the measured wall time with its breakdown, and the controller's
account (pipeline.finish.measured_cost writes both into result.json)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def _s(x: Any) -> str:
    return f"{x:.0f}" if isinstance(x, (int, float)) and math.isfinite(x) else "—"


def cost_text(result: Mapping[str, Any]) -> str:
    parts = result.get("cost_breakdown_s")
    if not parts:
        return (
            f"{_s(result.get('cost_s'))} s (controller's account: runlength + overhead per trial)"
        )
    split = ", ".join(f"{k} {_s(v)}" for k, v in parts.items())
    return (
        f"{_s(result.get('cost_s'))} s measured ({split}); controller's account "
        f"{_s(result.get('cost_spec_s'))} s"
    )
