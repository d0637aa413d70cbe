"""The `workbench` command line's grammar: the flags of its commands (rate, plan, compare), the
one-line usage errors, and the --r-sat-ms goal list (the commands: cli.py)."""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path
from typing import Any

from workbench.config import tenants, workloads
from workbench.config.external import EXTERNAL_PARAMS
from workbench.config.factors import add_cli_flags
from workbench.config.paths import DEFAULT_INVENTORY
from workbench.config.profiles import PROFILES
from workbench.config.settings import add_flags, bounds_of
from workbench.config.vocabulary import CANNED_WORKLOADS, MAX_GOALS
from workbench.controller.policy import POLICY_CLASSES
from workbench.controller.spec import RatingSpec

# The spec's flags (declared in controller.spec with flag=True) that are Params too; first_load is
# the command line's own (with_settings)
SPEC_OPTIONS = (
    "policy",
    *(n for n, b in bounds_of(RatingSpec).items() if b.flag and n != "first_load"),
)


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse's errors in one line (its usage of `rate` runs to a screen): `--help` shows the
    rest."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {' '.join(message.split())} (--help lists the flags)\n")


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of the parser's subcommands."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {
        o for sp in (subs[0].choices.values() if subs else ()) for o in sp._option_string_actions
    }


# Params fields the command line sets through another flag (--r-sat-ms 40/1000,20: R_sat/L_sat)
FIELD_FLAGS = {"goals_ms": "--r-sat-ms", "l_sat_ms": "--r-sat-ms", "goals_l_sat_ms": "--r-sat-ms"}


def one_line(message: str, flags: set[str]) -> str:
    """A usage error in one line; a message that starts with a setting's name (`memory_mb must be
    …`, `fs: 'zfs' is not …`) names its flag instead (`--memory-mb must be …`)."""
    text = " ".join(str(message).split())
    m = re.match(r"(?:factor |setting )?([a-z][a-z0-9_]*)\b", text)
    if not m or text.startswith("--"):
        return text
    flag = f"--{m[1].replace('_', '-')}"
    flag = flag if flag in flags else FIELD_FLAGS.get(m[1], "")
    return f"{flag}{text[m.end() :]}" if flag in flags else text


def _common(sp: argparse.ArgumentParser) -> None:
    """The flags `rate` and `plan` share: the workload, the profile, the spec and the factors."""
    sp.add_argument(
        "--workload",
        default="web_server",
        help=f"canned fstress workload ({', '.join(CANNED_WORKLOADS)}) or a workload file",
    )
    sp.add_argument("--profile", choices=sorted(PROFILES), default="quick")
    sp.add_argument(
        "--policy", choices=tuple(POLICY_CLASSES), help="search policy (default: the profile's)"
    )
    sp.add_argument(
        "--r-sat-ms",
        metavar="MS[,MS...]",
        help="R_sat: mean response time threshold (ms); several goals comma-separated, "
        "e.g. 40,20,80: one search rates them all, the first is the headline λ*; "
        "/L_sat after a goal gives its own p95 threshold (ms), e.g. 40,20/500",
    )
    add_flags(sp, RatingSpec)
    add_cli_flags(sp)
    workloads.add_cli_flags(sp)


def rate_parser(sub: Any) -> None:
    """`workbench rate`."""
    r = sub.add_parser("rate", help="rate one sample end to end on a slot")
    _common(r)
    r.add_argument("--slot", default="slot1")
    r.add_argument("--inventory", type=Path, default=DEFAULT_INVENTORY)
    r.add_argument(
        "--load-hosts", type=int, help="the slot's first N load hosts share the load (default: all)"
    )
    tenants.add_cli_flags(r)
    r.add_argument(
        "--results",
        "--out",
        dest="results",
        help="results directory (default results/<time>-<workload>-<slot>); re-use it to resume",
    )
    r.add_argument("--warmup-s", type=float)
    r.add_argument("--fileset-rate", type=float)
    r.add_argument(
        "--fstress-cpus",
        default=None,
        help='taskset CPU list for fstress (default: the inventory\'s; local "1", real hosts none)',
    )
    _external_flags(r)
    _pack_flags(r)
    r.add_argument("--check", action="store_true", help="check every input, touch no host, exit")
    r.add_argument(
        "--no-teardown", action="store_true", help="leave the slot provisioned (and leased)"
    )
    r.add_argument(
        "--agent",
        choices=("on", "off"),
        default=None,
        help="trials through a resident `fstress agent` per load host instead of an Ansible run "
        "per trial (default: WB_FSTRESS_AGENT=1/0, else on)",
    )
    r.add_argument("--quiet", action="store_true", help="no per-trial progress")
    r.add_argument(
        "--verbose",
        action="store_true",
        help="each trial's reason and decision whole (the line is cut to 120 columns otherwise)",
    )


def _external_flags(r: argparse.ArgumentParser) -> None:
    ext = r.add_argument_group(
        "external server (rate an NFS server Workbench does not provision; "
        "use a slot of load hosts only, e.g. --inventory inventory/external/hosts.yml)"
    )
    for name, (_, text) in EXTERNAL_PARAMS.items():
        ext.add_argument(
            "--" + name.replace("_", "-"), type=int if name.endswith("_port") else str, help=text
        )


def _pack_flags(r: argparse.ArgumentParser) -> None:
    pack = r.add_argument_group(
        "factor pack (a filer's knobs as factors, declared in a YAML file: README, Factor packs)"
    )
    pack.add_argument(
        "--factors",
        dest="factor_pack",
        metavar="FILE",
        help="the factor pack: its factors and the Ansible tasks that apply their levels",
    )
    pack.add_argument(
        "--set",
        dest="pack_factors",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="a level of one of the pack's factors (repeat for more), e.g. --set nb_worker=64",
    )


def pack_levels(items: list[str]) -> dict[str, str]:
    """--set NAME=VALUE ... → {NAME: "VALUE"} (the pack converts each to its factor's type)."""
    out: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"--set: {item!r} is not NAME=VALUE, e.g. --set nb_worker=64")
        if name.strip() in out:
            raise UsageError(f"--set: {name.strip()} is given twice")
        out[name.strip()] = value.strip()
    return out


def plan_parser(sub: Any) -> None:
    """`workbench plan`."""
    pl = sub.add_parser(
        "plan", help="dry-run planner: expected cost of a rating (simulated server)"
    )
    _common(pl)
    pl.add_argument(
        "--capacity", type=float, help="simulated capacity (ops/s) instead of the family model"
    )
    pl.add_argument("--reps", type=int, default=20)
    pl.add_argument("--seed", type=int, default=0)


def compare_parser(sub: Any) -> None:
    """`workbench compare A B`."""
    c = sub.add_parser(
        "compare", help="B's peak rate against A's: change, CI, test, verdict, HTML page"
    )
    c.add_argument(
        "a",
        help="rating A (before): an id, s3://bucket/ratings/<id>/ or a …/ratings/<id> directory",
    )
    c.add_argument("b", help="rating B (after), as A")
    c.add_argument(
        "--results",
        help="local results directory holding ratings given by id (default: the S3 store)",
    )
    c.add_argument(
        "--tolerance", type=float, default=0.10, help="relative change that matters (default 0.10)"
    )
    c.add_argument("--confidence", type=float, default=0.95)
    c.add_argument("--out", help="the HTML page (default compare-<A>-vs-<B>.html here)")
    c.add_argument(
        "--publish", action="store_true", help="also store it under comparisons/ in B's store"
    )


def _goal_ms(text: str, part: str, i: int, what: str) -> float:
    try:
        g = float(part)
    except ValueError:
        raise UsageError(
            f"--r-sat-ms: {part.strip()!r} (goal {i} of {text!r}) is not a number; give R_sat "
            f"in ms, several comma-separated, each with an optional /L_sat, e.g. 40,20/500"
        ) from None
    if not (math.isfinite(g) and g > 0):
        raise UsageError(
            f"--r-sat-ms: goal {i} of {text!r} is {g:g}; r_sat_ms must be a number of ms > 0"
            if what == "R_sat"
            else f"--r-sat-ms: goal {i} of {text!r} has L_sat {g:g}; it must be a number of ms > 0"
        )
    return g


def r_sat_goals(text: str | None) -> dict[str, Any]:
    """--r-sat-ms "40", "40,20,80" or "40/1000,20/500,80" (R_sat[/L_sat] per goal) → {"r_sat_ms":
    40.0, "goals_ms": [20.0, 80.0] or None} plus l_sat_ms / goals_l_sat_ms where an L_sat is given
    ({} when not given); a bad list fails in one line naming what is wrong."""
    if text is None:
        return {}
    goals: list[float] = []
    l_sats: list[float | None] = []
    for i, part in enumerate(text.split(","), 1):
        r, _, l_sat = part.partition("/")
        g = _goal_ms(text, r, i, "R_sat")
        if g in goals:
            raise UsageError(f"--r-sat-ms: {g:g} ms is given twice in {text!r}; each goal once")
        goals.append(g)
        l_sats.append(_goal_ms(text, l_sat, i, "L_sat") if l_sat.strip() else None)
    if len(goals) > MAX_GOALS:
        raise UsageError(f"--r-sat-ms: {len(goals)} goals in {text!r}; at most {MAX_GOALS}")
    out: dict[str, Any] = {"r_sat_ms": goals[0], "goals_ms": goals[1:] or None}
    if l_sats[0] is not None:
        out["l_sat_ms"] = l_sats[0]
    if any(x is not None for x in l_sats[1:]):
        out["goals_l_sat_ms"] = l_sats[1:]
    return out
