"""A rating's factor pack among its Params (config.factor_pack): `factor_pack` names the file, and
the pack's levels come in `pack_factors` or as the pack's own words beside the built-in factors
(a sweep's sample, a nightly baseline), so a pack factor is set like a built-in one."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.config.factor_pack import FactorPack, PackError, load_pack
from workbench.params.schema import PARAMS, ParamError


def load_params_pack(path: Any) -> FactorPack | None:
    """The pack Params `factor_pack` names (None or "" = none), checked; ParamError naming the file
    and the field (a pack factor may not take a Param's name)."""
    if path is None or path == "":
        return None
    if not isinstance(path, str):
        raise ParamError(f"factor_pack: expected a file's path, got {path!r}")
    try:
        return load_pack(path, reserved=tuple(PARAMS))
    except PackError as e:
        raise ParamError(str(e)) from None


# the directories a factor pack named in the Airflow UI may lie in, set by the operator (os.pathsep)
PACK_DIRS_ENV = "WB_FACTOR_PACK_DIRS"


def confined_pack(path: Any) -> None:
    """A factor pack named in a DAG's Params (its tasks run as the scheduler's user, root here):
    once resolved (symbolic links followed) inside a directory the operator listed in
    WB_FACTOR_PACK_DIRS, with its tasks files — a Param must not make Ansible run any file of the
    host. None or "": no pack. The command line is not confined (its user runs the tasks)."""
    if path is None or path == "":
        return
    dirs = [Path(d).resolve() for d in os.environ.get(PACK_DIRS_ENV, "").split(os.pathsep) if d]
    pack = load_params_pack(path)
    assert pack is not None
    for what, f in (("factor_pack", pack.path), ("apply", pack.apply), ("reset", pack.reset)):
        if f and not any(Path(f).resolve().is_relative_to(d) for d in dirs):
            raise ParamError(
                f"factor_pack: {what} {f} is outside the factor pack directories "
                f"({', '.join(map(str, dirs)) or 'none set'}; the operator lists them in "
                f"{PACK_DIRS_ENV})"
            )


def split_pack_params(
    params: Mapping[str, Any],
) -> tuple[Mapping[str, Any], FactorPack | None, dict[str, Any]]:
    """(the Params without the pack's own words, the pack, its chosen levels checked): the words of
    the pack's factors join `pack_factors`; a level given both ways, levels without a pack, or an
    unknown or bad level is a ParamError naming it."""
    pack = load_params_pack(params.get("factor_pack"))
    rest = dict(params)
    given = rest.get("pack_factors") or {}
    if not isinstance(given, Mapping):
        raise ParamError(f"pack_factors: expected an object {{factor: level}}, got {given!r}")
    chosen = dict(given)
    for name in pack.names() if pack else ():
        if name in rest:
            if name in chosen:
                raise ParamError(f"{name}: given twice (as a parameter and in pack_factors)")
            chosen[name] = rest.pop(name)
    if pack is None:
        if chosen:
            raise ParamError(
                f"pack_factors: {', '.join(map(str, chosen))}: only with factor_pack (--factors "
                f"FILE), the file that declares them"
            )
        return rest, None, {}
    try:
        return rest, pack, pack.check_levels(chosen)
    except ValueError as e:
        raise ParamError(str(e)) from None
