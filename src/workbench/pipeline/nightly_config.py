"""The nightly regression's configuration (config/nightly.yml): where a run may read it from, and
its tolerance, confidence, seed trials, canary and baselines checked before anything is rated."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from workbench.config.paths import REPO
from workbench.config.untrusted import load_yaml, unknown_keys
from workbench.params.plan import UNSAFE_ID_CHARS, ParamError, plan_from_params

# trials tonight's rating runs at its baseline's reference load: the sample of the nightly Welch
# test (findings.regression); with 2 (a smoke rating's cap per load) one warm-cache trial among
# overloaded ones decides it, with 4 the drop of tests/dags/test_dags.py's nightly test stays near p
# = 0.05
NIGHTLY_SEED_TRIALS = 6
NIGHTLY_KEYS = ("tolerance", "confidence", "seed_trials", "canary", "baselines")
MAX_CONFIG_BYTES = 1 << 20
MAX_BASELINES = 64
MAX_NAME = 64


# more directories a UI run may read, set by the operator (os.pathsep)
CONFIG_DIRS_ENV = "WB_NIGHTLY_CONFIG_DIRS"


def _in_repo(path: str | Path) -> Path:
    """A configuration path as the user gave it: absolute, or relative to the repository."""
    p = Path(path)
    return p if p.is_absolute() else REPO / p


def confined_config(path: str) -> str:
    """A config_path typed in the UI (the DAG runs as root): relative to the repository, and once
    resolved (symlinks followed) inside its config/ directory or one the operator listed in
    WB_NIGHTLY_CONFIG_DIRS — a Param must not make the night read any file of the host."""
    dirs = [REPO / "config"] + [
        Path(d) for d in os.environ.get(CONFIG_DIRS_ENV, "").split(os.pathsep) if d
    ]
    if not isinstance(path, str) or not path or "\0" in path:
        raise ParamError(f"config_path: {path!r} is not a path")
    real = _in_repo(path).resolve()
    if not any(real.is_relative_to(d.resolve()) for d in dirs):
        raise ParamError(
            f"config_path: {path} is outside the configuration directories "
            f"({', '.join(str(d) for d in dirs)}; more in {CONFIG_DIRS_ENV})"
        )
    return str(real)


def _read_config(p: Path) -> dict[str, Any]:
    """The YAML of a nightly configuration: a regular file of at most 1 MiB holding a mapping."""
    try:
        if not p.is_file():
            raise ParamError(
                f"config_path: {p} is not a regular file; want the YAML of the baselines"
            )
        if p.stat().st_size > MAX_CONFIG_BYTES:
            raise ParamError(
                f"config_path: {p} is {p.stat().st_size} bytes; at most {MAX_CONFIG_BYTES}"
            )
        cfg = load_yaml(p.read_text(), MAX_CONFIG_BYTES) or {}
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as e:
        raise ParamError(f"config_path: cannot read {p}: {' '.join(str(e).split())}") from None
    if not isinstance(cfg, dict):
        raise ParamError(
            f"config_path: {p} holds a {type(cfg).__name__}; want a mapping with baselines"
        )
    if unknown := unknown_keys(cfg, NIGHTLY_KEYS):
        raise ParamError(f"nightly config {p}: {unknown}")
    return cfg


def _baseline(i: int, b: Any, names: set[str]) -> None:
    """One baseline: a unique, store-safe name and rate_peak params that pass plan_from_params."""
    if not isinstance(b, dict) or not isinstance(b.get("name"), str) or not b["name"]:
        raise ParamError(f"baselines[{i}].name: every baseline needs a name, got {b!r}")
    name = b["name"]
    if len(name) > MAX_NAME or UNSAFE_ID_CHARS.search(name):
        raise ParamError(
            f"baselines[{i}].name: {name!r} is not store-safe; up to {MAX_NAME} letters, "
            f"digits, '.', '_' and '-'"
        )
    if name in names:
        raise ParamError(f"baselines[{i}].name: {name!r} is given twice; names must be unique")
    names.add(name)
    if unknown := unknown_keys(b, ("name", "params")):
        raise ParamError(f"baselines[{i}] ({name}): {unknown}")
    if not isinstance(b.get("params") or {}, dict):
        raise ParamError(
            f"baselines[{i}].params ({name}): {b['params']!r} is not an object of rate_peak params"
        )
    try:
        plan_from_params(b.get("params") or {}, "check")  # fail at load, naming the field
    except ParamError as e:
        raise ParamError(f"{e} (baseline {name})") from None


def _fraction(name: str, v: Any, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v < hi:
        raise ParamError(f"{name}: {v!r} is not allowed; a number in [{lo:g}, {hi:g})")
    return float(v)


def load_nightly_config(path: str | Path) -> dict[str, Any]:
    """config/nightly.yml: tolerance, confidence and the baselines (name + rate_peak params)."""
    p = _in_repo(path)
    cfg = _read_config(p)
    base = cfg.get("baselines")
    if not isinstance(base, list) or not base or len(base) > MAX_BASELINES:
        raise ParamError(f"baselines: {p} must list 1 to {MAX_BASELINES} baselines")
    names: set[str] = set()
    for i, b in enumerate(base):
        _baseline(i, b, names)
    tol = _fraction("tolerance", cfg.get("tolerance", 0.10), 0, 1)
    conf = _fraction("confidence", cfg.get("confidence", 0.95), 0.5, 1)
    seed_trials = cfg.get("seed_trials", NIGHTLY_SEED_TRIALS)
    if (
        not isinstance(seed_trials, int)
        or isinstance(seed_trials, bool)
        or not 2 <= seed_trials <= 20
    ):
        raise ParamError(
            f"nightly config {p}: seed_trials must be an integer in [2, 20], got {seed_trials!r}"
        )
    canary = cfg.get("canary")
    if canary is not None and canary not in names:
        raise ParamError(
            f"canary: {canary!r} is not one of the baselines ({', '.join(sorted(names))})"
        )
    return {
        "path": str(p),
        "tolerance": tol,
        "confidence": conf,
        "seed_trials": seed_trials,
        "canary": canary,
        "baselines": base,
    }
