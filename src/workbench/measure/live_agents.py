"""The live view of the fstress agents (issue 50): where each agent of a slot serves its /metrics
(loadgen/cmd/fstress/metrics.go) and the labels its run requests carry. Prometheus scrapes them as
the job fstress (live_config), beside the rating loop's endpoints (live)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
from collections.abc import Iterator

from workbench.measure import live

__all__ = ["agent_port_for", "agent_endpoint", "agent_labels"]

log = logging.getLogger(__name__)


def agent_port_for(slot: str | None) -> int | None:
    """The port of the slot's fstress agents' endpoints, each on its own host's 127.0.0.1: the base
    + 10 + the slot's number (slot3 → 9663); None for a slot without a number (or none): no
    endpoint."""
    if not slot or not re.search(r"\d$", slot):
        return None
    port = live.port_base() + live.AGENT_PORT_OFFSET + live.slot_number(slot)
    return port if port <= 65535 else None


@contextlib.contextmanager
def agent_endpoint(
    connection: str | None, port: int | None
) -> Iterator[tuple[str | None, tuple[int, ...]]]:
    """(the agent's --metrics-addr, the descriptors to pass it) while it starts: none without a
    port; an SSH host's agent serves on its own 127.0.0.1; a local one lives in a network
    namespace of its own (the slot's), so it gets a listening socket made here (fd:N; a socket
    keeps the namespace it was made in), on WB_METRICS_ADDR, where this host's Prometheus
    scrapes. A port taken: logged, none."""
    if port is None:
        yield None, ()
        return
    if connection not in ("local", None):
        yield f"127.0.0.1:{port}", ()
        return
    addr = os.environ.get(live.ADDR_ENV, "").strip() or live.ADDR
    try:
        sock = socket.create_server((addr, port))
    except OSError as e:
        log.warning(
            "live view: no agent endpoint on %s:%d (%s); the trials go on without it",
            addr,
            port,
            e.strerror or e,
        )
        yield None, ()
        return
    with sock:
        yield f"fd:{sock.fileno()}", (sock.fileno(),)  # the agent has its copy once started


def agent_labels(slot: str | None) -> dict[str, str]:
    """The labels a run request gives the slot's agents' series: the slot and the rating of its
    view in this process (`trial`; "" before any); {} without a slot."""
    if not slot:
        return {}
    return {"rating_id": live.view_rating(slot), "slot": slot}
