"""The Params of a rating (the DAG's form; the CLI's flags map onto them): their schema, from the
factor table and RatingSpec, and the checks of one value — the bounds of the schema, no template
markers, a store-safe rating id — each failing as a ParamError that names the parameter."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from workbench.config import factor_pack, tenants, untrusted, workloads
from workbench.config.external import EXTERNAL_PARAMS
from workbench.config.factors import params_schema
from workbench.config.profiles import PROFILES
from workbench.config.settings import form_settings
from workbench.config.vocabulary import CANNED_WORKLOADS, SEED_SOURCES, SLOTS
from workbench.controller.policy import POLICY_CLASSES
from workbench.controller.spec import RatingSpec

# Params of a rating: name → (JSON-schema type, constraints, help). The DAG's UI form is built from
# this table and `plan_from_params` checks the same bounds (dag.test and the CLI skip the UI).
PARAMS: dict[str, dict[str, Any]] = {
    "workload": dict(
        type="string",
        enum=list(CANNED_WORKLOADS),
        default="web_server",
        description="fstress workload (seed 003 Table 2; genomics: after SPECstorage 2020)",
    ),
    **workloads.params_schema(),  # workload_text and the workload factors (config.workloads)
    "profile": dict(
        type="string",
        enum=sorted(PROFILES),
        default="quick",
        description="defaults for everything left empty: quick (minutes), smoke (tests), standard",
    ),
    "slot": dict(
        type="string",
        enum=["auto", *SLOTS],
        default="auto",
        description="workbench slot (SUT + load host); auto = the first free one",
    ),
    **params_schema(),  # the factors of the Params form (config.factors)
    **{k: v for k, v in form_settings(RatingSpec).items() if k != "seed_load"},  # the spec's
    "policy": dict(
        type=["null", "string"],
        enum=[None, *POLICY_CLASSES],
        default=None,
        description="search policy (empty: the profile's, the recommended local fit)",
    ),
    "load_hosts": dict(
        type=["null", "integer"],
        minimum=1,
        maximum=64,
        default=None,
        description="load hosts that share the load: the slot's first N (empty = all of them)",
    ),
    **tenants.params_schema(),  # the background tenant B (config.tenants)
    "seed_source": dict(
        type="string",
        enum=list(SEED_SOURCES),
        default="none",
        description="seeding: none, load (seed_load), history (last λ* of this configuration)",
    ),
    "seed_load": form_settings(RatingSpec)["seed_load"],  # used with seed_source = load
    **{
        name: dict(
            type=["null", "integer" if name.endswith("_port") else "string"],
            default=None,
            description=text,
            section="External server",
            **({"minimum": 1, "maximum": 65535} if name.endswith("_port") else {}),
        )
        for name, (_, text) in EXTERNAL_PARAMS.items()
    },
    **factor_pack.params_schema(),  # a filer's own knobs (config.factor_pack)
}


FACTOR_PARAMS = tuple(params_schema())


# + policy: plan_from_params
SPEC_PARAMS = tuple(k for k in form_settings(RatingSpec) if k != "seed_load")


class ParamError(ValueError):
    """Bad rating parameters: the message names the parameter and what is allowed."""


def check_rating_id(rating_id: Any, name: str = "rating_id") -> None:
    """config.untrusted.check_rating_id as a ParamError naming `name` (the CLI passes
    "--results")."""
    try:
        untrusted.check_rating_id(rating_id, name)
    except ValueError as e:
        raise ParamError(str(e)) from None


def untemplated(name: str, value: Any) -> None:
    """ParamError when a value the user typed holds a Jinja marker (config.untrusted)."""
    try:
        untrusted.refuse_template(name, value)
    except ValueError as e:
        raise ParamError(str(e)) from None


def check_param(name: str, value: Any) -> None:
    _check_value(name, value, PARAMS[name])


def _check_value(name: str, value: Any, schema: Mapping[str, Any]) -> None:
    """`value` against the JSON-schema subset of PARAMS (type, enum, bounds, array items)."""
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if value is None:
        if "null" not in types:
            raise ParamError(f"{name}: a value is required")
        return
    ok = {
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "array": isinstance(value, (list, tuple)),
        "object": isinstance(value, Mapping),
    }
    if not any(ok.get(t, False) for t in types if t != "null"):
        want = " or ".join(t for t in types if t != "null")
        raise ParamError(f"{name}: expected {want}, got {type(value).__name__} {value!r}")
    if isinstance(value, (list, tuple)):
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", math.inf):
            raise ParamError(
                f"{name}: {len(value)} items; {schema.get('minItems', 0)} to "
                f"{schema.get('maxItems', 'any number of')} allowed"
            )
        for i, v in enumerate(value):
            _check_value(f"{name}[{i}]", v, schema["items"])
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(str(v) for v in schema["enum"] if v is not None)
        raise ParamError(f"{name}: {value!r} is not one of {allowed}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ParamError(f"{name}: must be finite, got {value!r}")
        lo, hi = schema.get("minimum"), schema.get("maximum")
        xlo = schema.get("exclusiveMinimum")
        if (
            (lo is not None and value < lo)
            or (hi is not None and value > hi)
            or (xlo is not None and value <= xlo)
        ):
            lo_s = f"> {xlo:g}" if xlo is not None else f"≥ {lo:g}" if lo is not None else ""
            hi_s = f"≤ {hi:g}" if hi is not None else ""
            raise ParamError(
                f"{name}: {value!r} is out of range ({lo_s}{', ' if lo_s and hi_s else ''}{hi_s})"
            )


def check_goals(spec: Mapping[str, Any]) -> None:
    """goals_ms: no goal given twice, none the same as r_sat_ms (each would be rated once);
    goals_l_sat_ms: one per goal."""
    goals, r_sat = (
        [float(g) for g in spec.get("goals_ms") or ()],
        float(spec.get("r_sat_ms", RatingSpec.r_sat_ms)),
    )
    l_sats = spec.get("goals_l_sat_ms")
    if l_sats is not None and len(l_sats) != len(goals):
        raise ParamError(
            f"goals_l_sat_ms: {len(l_sats)} L_sat for {len(goals)} goals_ms goal(s); one per goal "
            f"(null = l_sat_ms)"
        )
    twice = sorted({g for g in goals if goals.count(g) > 1 or g == r_sat})
    if twice:
        raise ParamError(
            f"goals_ms: {', '.join(f'{g:g}' for g in twice)} ms given twice (r_sat_ms is "
            f"{r_sat:g} ms); each R_sat goal once"
        )
