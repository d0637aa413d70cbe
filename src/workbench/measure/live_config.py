"""The Prometheus configuration of the live view (issue 50): every second the slots' endpoints (job
workbench, measure/live.py), their fstress agents' (job fstress, measure/live_agents.py) and a node
exporter; scripts/celery-stack.sh and docker-compose.yml's Prometheus use what `main` prints."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import yaml

from workbench.measure import live

__all__ = ["prometheus_config", "main"]


def prometheus_config(
    targets_host: str, rule_files: Sequence[str], node_target: str | None = None
) -> dict[str, Any]:
    """A Prometheus configuration scraping every second the slots' endpoints on `targets_host`
    (slot1..slot5; job workbench), their fstress agents' there (job fstress: agents whose
    127.0.0.1 is the host's) and, when given, a node exporter (`node_target`, host:port), with
    `rule_files`."""
    base = live.port_base()
    slots = range(1, live.SCRAPED_SLOTS + 1)
    jobs: list[dict[str, Any]] = [
        {
            "job_name": name,
            "scrape_interval": "1s",
            "scrape_timeout": "1s",
            "static_configs": [{"targets": [f"{targets_host}:{base + offset + k}" for k in slots]}],
        }
        for name, offset in (("workbench", 0), ("fstress", live.AGENT_PORT_OFFSET))
    ]
    if node_target:
        jobs.append(
            {
                "job_name": "node",
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "static_configs": [{"targets": [node_target]}],
            }
        )
    return {
        "global": {"scrape_interval": "15s", "evaluation_interval": "15s"},
        "rule_files": list(rule_files),
        "scrape_configs": jobs,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m workbench.measure.live_config config ...`: the Prometheus configuration on
    stdout."""
    p = argparse.ArgumentParser(
        prog="python -m workbench.measure.live_config", description=main.__doc__
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("config", help="print a Prometheus configuration for the slots' endpoints")
    c.add_argument(
        "--targets-host", default=live.ADDR, help="where the endpoints listen (default %(default)s)"
    )
    c.add_argument("--rules", action="append", default=[], help="a rule file (repeatable)")
    c.add_argument("--node", default=None, help="a node exporter's host:port to scrape too")
    args = p.parse_args(argv)
    sys.stdout.write(
        yaml.safe_dump(prometheus_config(args.targets_host, args.rules, args.node), sort_keys=False)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
