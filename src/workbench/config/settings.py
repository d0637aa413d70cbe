"""Declared settings: a dataclass field that carries its type, bounds, default and one line of help.

A rating's settings (`controller.spec.RatingSpec`, the policies of `controller.policy`) are frozen
dataclasses whose fields are made by `setting(...)`. From those declarations come the range checks
(`check_settings`, called in `__post_init__`), the Params form entries of the DAGs (`param_schema`)
and the command-line flags (`add_flags`): a setting's name, bounds and help are written once.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

META = "workbench.setting"


@dataclass(frozen=True)
class Bounds:
    """What a setting takes. kind: "number" | "integer" | "bool" | "choice" | "numbers"."""

    kind: str
    lo: float | None = None  # lowest value allowed
    hi: float | None = None  # highest value allowed
    lo_open: bool = False  # lo itself not allowed
    hi_open: bool = False  # hi itself not allowed
    none_ok: bool = False  # None allowed (the setting's "not set")
    inf_ok: bool = False  # +inf allowed (numbers)
    choices: tuple[Any, ...] = ()  # kind "choice"
    help: str = ""
    form: Mapping[str, Any] | None = None  # the Params form's (narrower) range, JSON-schema words;
    # None: not on the form
    flag: bool = False  # a command-line flag of `workbench rate` / `plan`

    def describe(self) -> str:
        """The allowed values, for an error message."""
        if self.kind == "bool":
            return "a bool"
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind == "integer" and self.lo is not None and self.hi is not None:
            return f"an integer in [{self.lo:g}, {self.hi:g}]" + (
                " or None" if self.none_ok else ""
            )
        lo = "" if self.lo is None else f"{'>' if self.lo_open else '>='} {self.lo:g}"
        hi = "" if self.hi is None else f"{'<' if self.hi_open else '<='} {self.hi:g}"
        what = {"integer": "an integer", "numbers": "a non-empty sequence of numbers"}.get(
            self.kind, "a number"
        )
        rng = " and ".join(x for x in (lo, hi) if x)
        return (
            what
            + (f" {rng}" if rng else "")
            + (" (inf allowed)" if self.inf_ok else "")
            + (" or None" if self.none_ok else "")
        )

    def accepts(self, v: Any) -> bool:
        if v is None:
            return self.none_ok
        if self.kind == "bool":
            return isinstance(v, bool)
        if self.kind == "choice":
            return v in self.choices
        if self.kind == "list":
            return not isinstance(v, (str, bytes, int, float))
        if self.kind == "numbers":
            return (
                not isinstance(v, (str, bytes, int, float))
                and len(v) > 0
                and all(self._number_ok(x) for x in v)
            )
        if self.kind == "integer" and (not isinstance(v, int) or isinstance(v, bool)):
            return False
        return self._number_ok(v)

    def _number_ok(self, v: Any) -> bool:
        if not isinstance(v, (int, float)) or isinstance(v, bool) or math.isnan(v):
            return False
        if math.isinf(v):
            return self.inf_ok and v > 0
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            return False
        return not (self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)))


def setting(
    default: Any,
    help: str,
    kind: str = "number",
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    none_ok: bool = False,
    inf_ok: bool = False,
    choices: tuple[Any, ...] = (),
    form: Mapping[str, Any] | None = None,
    flag: bool = False,
) -> Any:
    """A dataclass field declared once: its default, help and what it takes (see `Bounds`)."""
    b = Bounds(
        kind,
        lo,
        hi,
        lo_open,
        hi_open,
        none_ok or default is None,
        inf_ok,
        tuple(choices),
        help,
        form,
        flag,
    )
    return dataclasses.field(default=default, metadata={META: b})


def bounds_of(cls_or_obj: Any) -> dict[str, Bounds]:
    """name → Bounds of every declared setting of a dataclass (in declaration order)."""
    return {f.name: f.metadata[META] for f in dataclasses.fields(cls_or_obj) if META in f.metadata}


def check_settings(obj: Any) -> None:
    """ValueError naming the first setting of `obj` whose value its declaration does not allow."""
    for name, b in bounds_of(obj).items():
        v = getattr(obj, name)
        if not b.accepts(v):
            raise ValueError(f"{type(obj).__name__}.{name} must be {b.describe()}, got {v!r}")


def param_schema(b: Bounds) -> dict[str, Any]:
    """The Params form entry (JSON schema) of a setting: empty = the profile's value."""
    t = {
        "number": "number",
        "integer": "integer",
        "bool": "boolean",
        "choice": "string",
        "numbers": "array",
        "list": "array",
    }[b.kind]
    out: dict[str, Any] = dict(type=["null", t], default=None, description=b.help)
    if b.kind == "choice":
        out["enum"] = [None, *b.choices]
    out.update(b.form or {})
    return out


def form_settings(cls: Any) -> dict[str, dict[str, Any]]:
    """name → Params form entry of every setting of `cls` that is on the form."""
    return {name: param_schema(b) for name, b in bounds_of(cls).items() if b.form is not None}


def cli_help(text: str) -> str:
    """A help text as argparse prints it: a literal % is written %% (argparse %-formats help)."""
    return text.replace("%", "%%")


def add_flags(parser: argparse.ArgumentParser, cls: Any) -> list[str]:
    """The command-line flags (--name-with-dashes) of the settings of `cls` marked `flag`; their
    values arrive as None when not given (the profile's). Returns the names."""
    names = []
    for name, b in bounds_of(cls).items():
        if not b.flag:
            continue
        kw: dict[str, Any] = (
            {"choices": b.choices}
            if b.kind == "choice"
            else {"type": int if b.kind == "integer" else float}
        )
        parser.add_argument("--" + name.replace("_", "-"), help=cli_help(b.help), **kw)
        names.append(name)
    return names
