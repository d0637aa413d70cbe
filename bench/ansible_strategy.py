#!/usr/bin/env python3
"""A slot's playbooks under Mitogen's strategy against Ansible's linear one, side by side.

    PYTHONPATH=src .venv/bin/python bench/ansible_strategy.py [--slot slot1] [--inventory FILE] [--rounds 3]

Each round runs what a rating runs outside its trials — provision_sut, deploy_loadgen, teardown
(AnsibleHarness, the smoke profile's server and file set) — once per strategy, the order alternating
between rounds. Per playbook: wall seconds and CPU seconds (user + sys of ansible-runner's children,
from getrusage: ansible-playbook, its workers and every module's interpreter), medians over the rounds
and mitogen ÷ linear. Each arm sets ANSIBLE_STRATEGY for all three playbooks; the harness itself
runs only provision_sut.yml under Mitogen (measure.playbook.MITOGEN_PLAYBOOKS).
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
from workbench.config.profiles import PROFILES  # noqa: E402
from workbench.measure.ansible import AnsibleHarness  # noqa: E402
from workbench.measure.playbook import strategy_env  # noqa: E402

STRATEGIES = ("mitogen_linear", "linear")
STEPS = ("provision", "deploy", "teardown")


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def one_round(strategy: str, slot: str, inventory: Path | None, out: Path) -> dict[str, tuple[float, float]]:
    """(wall s, CPU s) per step of one provision → deploy → teardown under `strategy`."""
    # the user's ANSIBLE_STRATEGY wins over the harness's choice (which is Mitogen for provisioning only):
    # set here, it puts all three playbooks under the one strategy
    os.environ.update(strategy_env("provision_sut.yml", {}) if strategy == "mitogen_linear"
                      else {"ANSIBLE_STRATEGY": "linear"})
    smoke = PROFILES["smoke"]
    h = AnsibleHarness(slot=slot, inventory=inventory, factors=smoke["factors"], workload="web_server",
                       results_dir=out, fileset_rate=smoke["fileset_rate"], extravars=smoke["extravars"])
    figures = {}
    for step in STEPS:
        t0, c0 = time.monotonic(), _children_cpu_s()
        run = getattr(h, step)()
        if not run.ok:
            raise SystemExit(f"{step} under {strategy} failed: {run.message()}")
        figures[step] = (time.monotonic() - t0, _children_cpu_s() - c0)
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--slot", default="slot1")
    ap.add_argument("--inventory", type=Path, default=None, help="default: inventory/local/hosts.yml")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    rows: dict[str, list[dict[str, tuple[float, float]]]] = {s: [] for s in STRATEGIES}
    with tempfile.TemporaryDirectory(prefix="wb-strategy-") as tmp:
        for r in range(a.rounds):
            for s in (STRATEGIES if r % 2 == 0 else STRATEGIES[::-1]):
                rows[s].append(one_round(s, a.slot, a.inventory, Path(tmp) / f"{s}-{r}"))
                print(f"round {r} {s:14s} " + "  ".join(f"{k} {w:5.1f} s wall {c:5.1f} s CPU"
                                                       for k, (w, c) in rows[s][-1].items()), flush=True)
    print(f"\nmedians over {a.rounds} rounds, slot {a.slot}:")
    print(f"{'step':10s} {'mitogen wall/CPU s':>20s} {'linear wall/CPU s':>20s} {'ratio wall/CPU':>16s}")
    for step in (*STEPS, "all"):
        med = {}
        for s in STRATEGIES:
            pairs = [(sum(w for w, _ in r.values()), sum(c for _, c in r.values())) if step == "all" else r[step]
                     for r in rows[s]]
            med[s] = (statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs))
        (mw, mc), (lw, lc) = med["mitogen_linear"], med["linear"]
        print(f"{step:10s} {mw:9.1f} / {mc:8.1f} {lw:9.1f} / {lc:8.1f} {mw / lw:8.2f} / {mc / lc:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
