"""Workload factors and custom workloads: the fstress knobs a rating or a sweep can set, once.

A workload factor is a property of the offered load (seed 003 §3: the Fstress parameters), next to
the server factors of ``config.factors``. Each row says the word users type (Params, CLI
``--name-with-dashes``, sweep factor), the fstress workload key it sets, how its value is written
there, and its bounds. A rating's workload is its base — a canned workload, or a custom workload
text in the fstress format (loadgen/internal/workload, package doc) — plus these overrides,
rendered as fstress workload text (``render_workload``); ``pipeline.validation`` runs
``fstress check`` on that text before anything runs. Adding a factor: one row here.
"""

from __future__ import annotations

import argparse
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workbench.config.settings import cli_help
from workbench.config.vocabulary import CANNED_WORKLOADS

MAX_TEXT_BYTES = 65536  # a custom workload text (fstress reads files up to 16 MiB)
MIX_PROCS = (
    "read",
    "write",
    "getattr",
    "lookup",
    "access",
    "create",
    "remove",
    "setattr",
    "commit",
    "readdir",
)
SECTION = "Workload factors"
FACTORS_MARK = "# workload factors:"  # render_workload's comment above the lines the factors set


@dataclass(frozen=True)
class WorkloadFactor:
    name: str  # the word of Params, CLI and sweeps
    key: str  # fstress workload key it sets
    kind: type  # float | int
    fmt: str  # the value as fstress text, "{v}" replaced ("zipf:{v}")
    help: str
    minimum: float
    maximum: float

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def text(self, v: Any) -> str:
        return self.fmt.format(v=f"{v:g}" if isinstance(v, float) else v)


WORKLOAD_FACTORS: tuple[WorkloadFactor, ...] = (
    WorkloadFactor(
        "zipf_alpha",
        "file_popularity",
        float,
        "zipf:{v}",
        "Zipf α of file popularity (the i-th file gets weight 1/i^α; 0 = uniform)",
        0.0,
        4.0,
    ),
    WorkloadFactor(
        "files_per_ops",
        "fileset_files_per_ops",
        float,
        "{v}",
        "file-set size: files per op/s of the rate it is sized for (fstress self-scaling k)",
        0.0001,
        10000.0,
    ),
    WorkloadFactor("read_size_kb", "read_size", int, "{v}K", "bytes per READ (KiB)", 1, 16384),
    WorkloadFactor("write_size_kb", "write_size", int, "{v}K", "bytes per WRITE (KiB)", 1, 16384),
    WorkloadFactor(
        "compress_ratio",
        "compress_ratio",
        float,
        "{v}",
        "what WRITEs carry: a data unit's size over its compressed size (1 = incompressible, "
        "the default; zeros: a custom workload's compress_ratio = zeros)",
        1.0,
        64.0,
    ),
    WorkloadFactor(
        "dedupe_pct",
        "dedupe_pct",
        float,
        "{v}",
        "share of the written data units that repeat another (%; default 0)",
        0.0,
        100.0,
    ),
    WorkloadFactor(
        "data_unit_kb",
        "data_unit",
        int,
        "{v}K",
        "unit of the written data's compression and deduplication (KiB, a power of two; default 4)",
        1,
        1024,
    ),
    *(
        WorkloadFactor(
            f"mix_{p}_pct",
            "mix_share",
            float,
            f"{p}:{{v}}",
            f"share of {p.upper()} in the op mix (%); the other operations keep their "
            f"relative weights and share the rest",
            0.0,
            100.0,
        )
        for p in MIX_PROCS
    ),
)
WORKLOAD_BY_NAME: dict[str, WorkloadFactor] = {f.name: f for f in WORKLOAD_FACTORS}
WORKLOAD_FACTOR_NAMES = tuple(WORKLOAD_BY_NAME)


def check_workload_factor(name: str, value: Any) -> float | int:
    """One workload factor's value in its type and bounds, or ValueError naming it."""
    f = WORKLOAD_BY_NAME[name]
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (f.kind is float or float(value).is_integer())
    )
    if not ok or not f.minimum <= value <= f.maximum:
        want = "a whole number" if f.kind is int else "a number"
        raise ValueError(
            f"{name}: {value!r} is not allowed; {want} in [{f.minimum:g}, {f.maximum:g}]"
        )
    return f.kind(value)


def workload_overrides(values: Mapping[str, Any]) -> dict[str, str]:
    """fstress key → value text of the chosen factors (None = not chosen); the mix shares together
    in one mix_share, which fstress applies after the base's mix (at most 100 % in all)."""
    out: dict[str, str] = {}
    shares = []
    for name, v in values.items():
        if v is None:
            continue
        f = WORKLOAD_BY_NAME[name]
        v = check_workload_factor(name, v)
        if f.key == "mix_share":
            shares.append((name, v, f.text(v)))
        else:
            out[f.key] = f.text(v)
    if sum(v for _, v, _ in shares) > 100:
        raise ValueError(
            f"{' + '.join(n for n, _, _ in shares)}: the shares sum to "
            f"{sum(v for _, v, _ in shares):g} %; at most 100"
        )
    if shares:
        out["mix_share"] = ", ".join(t for _, _, t in shares)
    return out


_LINE = re.compile(r"^\s*([A-Za-z_]+)\s*=(.*)$")


def _key_of(line: str) -> str | None:
    m = _LINE.match(line.split("#", 1)[0])
    return m.group(1).lower() if m else None


def check_workload_text(text: Any) -> str:
    """A custom workload text from the Params form or a nightly baseline: a string of at most
    MAX_TEXT_BYTES that stands alone — its `base` a canned workload, its distribution files only
    the canned ones (``@canned:NAME``): the worker that runs it has no other files. The rest
    (keys, values, bounds) is `fstress check`'s. Returns it with Unix line ends; ValueError names
    the line."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(
            "workload_text: give the text of a workload file (fstress format), or leave it empty"
        )
    if len(text.encode()) > MAX_TEXT_BYTES:
        raise ValueError(f"workload_text: {len(text.encode())} bytes; at most {MAX_TEXT_BYTES}")
    for n, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0]
        key, val = _key_of(line), body.partition("=")[2].strip()
        if key == "base" and val not in CANNED_WORKLOADS:
            raise ValueError(
                f"workload_text line {n}: base {val!r} is not allowed; a canned workload "
                f"({', '.join(CANNED_WORKLOADS)})"
            )
        if val.startswith("@") and not re.fullmatch(r"@\s*canned:[\w.-]+", val):
            raise ValueError(
                f"workload_text line {n}: {val!r} names a file; only @canned:NAME files, "
                f'or write the distribution inline ("4K:3, 64K:1")'
            )
    return text.replace("\r\n", "\n")


def render_workload(base: str, text: str | None, values: Mapping[str, Any]) -> str:
    """The workload fstress runs, as text: `text` (a custom workload) or `base = <canned base>`,
    with the factors' keys replacing its own lines ("" = the canned base as it is). A mix_share
    of the text is merged with the factors' shares (the factors' win per operation)."""
    over = workload_overrides(values)
    if not over:
        return text or ""
    lines = (text or f"base = {base}\n").splitlines()
    if "mix_share" in over:
        own = [ln.split("#", 1)[0].partition("=")[2] for ln in lines if _key_of(ln) == "mix_share"]
        shares = {
            s.split(":")[0].strip().lower(): s.strip() for s in ",".join(own).split(",") if ":" in s
        }
        # procedure → "op:pct"
        shares.update({s.split(":")[0]: s for s in over["mix_share"].split(", ")})
        over["mix_share"] = ", ".join(shares.values())
    kept = [ln for ln in lines if _key_of(ln) not in over]
    chosen = ", ".join(f"{k}={v}" for k, v in values.items() if v is not None)
    return (
        "\n".join([*kept, f"{FACTORS_MARK} {chosen}", *(f"{k} = {v}" for k, v in over.items())])
        + "\n"
    )


def text_digest(text: str) -> str:
    """Short content id of a workload text (file names, history matching)."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def params_schema() -> dict[str, dict[str, Any]]:
    """JSON-schema Params of the workload factors (the form's "Workload factors" section) and of
    the custom workload text (a multi-line text field next to the canned choice)."""
    out: dict[str, dict[str, Any]] = {
        "workload_text": dict(
            type=["null", "string"],
            default=None,
            format="multiline",
            description="custom workload: a workload file's text in the fstress format "
            "(replaces the canned choice; 'base = NAME' starts from a canned one)",
        ),
    }
    for f in WORKLOAD_FACTORS:
        out[f.name] = dict(
            type=["null", "integer" if f.kind is int else "number"],
            default=None,
            minimum=f.minimum,
            maximum=f.maximum,
            description=f.help,
            section=SECTION,
        )
    return out


def add_cli_flags(parser: argparse.ArgumentParser) -> None:
    """One --flag per workload factor (default None = the workload's own value)."""
    g = parser.add_argument_group(SECTION.lower())
    for f in WORKLOAD_FACTORS:
        g.add_argument(f.flag, dest=f.name, type=f.kind, default=None, help=cli_help(f.help))
