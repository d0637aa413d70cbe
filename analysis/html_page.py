"""The building blocks of the self-contained HTML pages (the reports of analysis.report,
surface_report, nightly_report, comparison): inline CSS, escaped cells, tables, PNGs as base64 data
URIs; no external assets or scripts. Every value that comes from users or measurements goes
through ``e`` (``html.escape``) unless it is already-safe ``Raw`` HTML built here."""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1.5em auto;
max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;border-bottom:1px solid #ddd;
padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:right;vertical-align:top}
th{background:#f3f3f3}td.l,th.l{text-align:left}
.kv td:first-child{text-align:left;font-weight:600;background:#fafafa}
.ok{background:#e3f6e3;color:#135e13;font-weight:700}
.bad{background:#fde2e1;color:#9b1c1c;font-weight:700}
.na{background:#eee;color:#555;font-weight:700}
tr.invalid td{color:#9b1c1c}
tr.harness td{color:#666;font-style:italic;background:#f4f4f4}
tr.excluded td{color:#9b1c1c;background:#fff4e5}
.headline{font-size:1.25em;margin:.3em 0}.muted{color:#666;font-size:.85em}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}
pre{background:#f7f7f7;padding:.6em;overflow:auto;font-size:.8em;max-height:30em}
.status{display:inline-block;padding:.2em .7em;border-radius:4px}
"""
_L = ' class="l"'


class Raw(str):
    """Already-safe HTML (built here from escaped parts)."""


def e(x: Any) -> str:
    return x if isinstance(x, Raw) else html.escape("" if x is None else str(x), quote=True)


def link(text: Any, href: str | None) -> Any:
    return Raw(f'<a href="{e(href)}">{e(text)}</a>') if href else text


def num(x: Any, fmt: str = ".4g") -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "—"
    return format(v, fmt) if math.isfinite(v) else "—"


def pair(p: Any, fmt: str = ".4g") -> str:
    if isinstance(p, (list, tuple)) and len(p) == 2:
        return f"[{num(p[0], fmt)}, {num(p[1], fmt)}]"
    return "—"


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    left: Sequence[int] = (0,),
    row_class: Sequence[str] | None = None,
) -> str:
    th = "".join(f"<th{_L if i in left else ''}>{e(h)}</th>" for i, h in enumerate(headers))
    body = []
    for k, r in enumerate(rows):
        cls = f' class="{row_class[k]}"' if row_class and row_class[k] else ""
        tds = "".join(f"<td{_L if i in left else ''}>{e(c)}</td>" for i, c in enumerate(r))
        body.append(f"<tr{cls}>{tds}</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def kv(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f'<tr><td>{e(k)}</td><td class="l">{e(v)}</td></tr>' for k, v in pairs)
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def img(png: bytes, alt: str) -> str:
    return (
        f'<img alt="{e(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'
    )


def plots_html(plots: Mapping[str, bytes] | None, captions: Mapping[str, str] | None = None) -> str:
    cap = captions or {}  # name → caption (escaped HTML) after the file name
    return "".join(
        f'<figure>{img(b, n)}<figcaption class="muted">{e(n)}{": " + cap[n] if n in cap else ""}'
        f"</figcaption></figure>"
        for n, b in (plots or {}).items()
    )


def page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>{body}</body></html>\n"
    )


def status(flag: bool | None, yes: str, no: str, unknown: str = "NO VERDICT") -> str:
    cls, text = ("na", unknown) if flag is None else (("bad", yes) if flag else ("ok", no))
    return Raw(f'<span class="status {cls}">{e(text)}</span>')


def fmt_dict(d: Any) -> str:
    if isinstance(d, Mapping):
        return ", ".join(f"{k}={v}" for k, v in d.items())
    return "" if d is None else str(d)
