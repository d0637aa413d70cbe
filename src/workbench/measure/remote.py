"""A command on an inventory host, as the roles describe the host in the specs they write for the
controller (the fstress agents' and the server telemetry's): over the local connection as it is,
else through ``ssh -T`` with the inventory's user, port, key and ssh arguments; and the end of such
a command's process group."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["host_argv", "end_group"]


def host_argv(spec: Mapping[str, Any], cmd: Sequence[str]) -> list[str]:
    """`cmd` on the spec's host: as it is over the local connection, else through `ssh -T` with the
    inventory's user, port, key and ssh arguments (the role writes them into the spec)."""
    cmd = list(cmd)
    if spec.get("connection", "ssh") == "local":
        return cmd
    ssh = [
        "ssh",
        "-T",
        "-o",
        "BatchMode=yes",
        "-o",
        "ServerAliveInterval=5",
        "-o",
        "ServerAliveCountMax=3",
    ]
    ssh += shlex.split(str(spec.get("ssh_args") or ""))  # ansible_ssh_common_args / _extra_args
    if spec.get("ssh_port"):
        ssh += ["-p", str(spec["ssh_port"])]
    if spec.get("ssh_key"):
        ssh += ["-i", str(spec["ssh_key"])]
    target = spec.get("ssh_host") or spec["host"]
    if spec.get("ssh_user"):
        target = f"{spec['ssh_user']}@{target}"
    return [*ssh, target, shlex.join(cmd)]


def end_group(proc: subprocess.Popen, wait_s: float, kill_wait_s: float) -> None:
    """Wait up to `wait_s` for `proc` to exit (its stdin closed by the caller: the end of its input
    ends it), then SIGKILL its process group (started with start_new_session) and wait up to
    `kill_wait_s`; never raises."""
    try:
        proc.wait(timeout=wait_s)
        return
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=kill_wait_s)
