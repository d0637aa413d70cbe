"""The workload of a rating in its report: the workload factors chosen and the text fstress ran
(result.json ``workload_factors``, ``workload_text``: pipeline.finish.summarise_step writes
them)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any


def workload_html(result: Mapping[str, Any]) -> str:
    """The workload section: name, factors, and the workload file's text as stored (escaped)."""
    name = html.escape(str(result.get("workload") or "?"))
    factors = result.get("workload_factors") or {}
    chosen = ", ".join(f"{html.escape(str(k))} = {html.escape(str(v))}" for k, v in factors.items())
    text = result.get("workload_text") or ""
    body = (
        f"<pre>{html.escape(text)}</pre>"
        if text
        else '<p class="muted">workload text not recorded</p>'
    )
    return f"<p><b>{name}</b>" + (f"; workload factors: {chosen}" if chosen else "") + "</p>" + body
