"""One resident fstress agent (issue 34): the `fstress agent` process of a load host, its command
line and the `fstress run` flags of a trial, and its JSON-lines protocol (loadgen/README.md,
"Agent"): a hello, run requests and their replies, quit. measure/agent.py runs a slot's agents
together (`Fleet`)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.config.child_env import child_env
from workbench.measure.remote import end_group, host_argv

__all__ = ["AgentError", "Agent", "trial_seed", "trial_args", "agent_argv", "PROTOCOL", "PROTOCOLS"]


PROTOCOL, PROTOCOLS, EXIT_USAGE = (
    2,
    (1, 2),
    2,
)  # hello.protocol: this one, those accepted; exit at an unknown flag
HELLO_TIMEOUT_S = 30.0
QUIT_TIMEOUT_S = 5.0
MAX_REPLY_BYTES = 64 << 20  # a reply line: a trial's JSON with its series is a few MB at most
# Seeds apart per client: playbooks/run_trial.yml's fstress_trial_seed (one definition, two
# languages;
# tests/measure/test_agent.py checks the playbook's expression still reads this way)
SEED_CLIENT_STRIDE = 1000003


def _reply(line: bytes, out: Any, limit: int) -> dict[str, Any]:
    """One reply line as a message; a line cut at `limit` bytes is read past, a failed reply."""
    if len(line) == limit and not line.endswith(b"\n"):
        while (rest := out.readline(limit)) and not rest.endswith(b"\n"):
            pass
        return {"ok": False, "error": f"reply line over {limit} bytes"}
    try:
        msg = json.loads(line)
    except ValueError:
        return {"ok": False, "error": f"unreadable reply line: {line[:200]!r}"}
    return msg if isinstance(msg, dict) else {"ok": False, "error": "reply is not an object"}


class AgentError(RuntimeError):
    """An agent failed: it did not start, its output ended, it replied ok:false, or it did not
    reply in time."""


def trial_seed(trial_id: int, client_id: int, warmup_trial: bool = False) -> int:
    """run_trial.yml's fstress_trial_seed: (0 for the warm-up, else trial_id + 1) + 1000003 x
    client_id."""
    return (0 if warmup_trial else int(trial_id) + 1) + SEED_CLIENT_STRIDE * int(client_id)


def trial_args(
    spec: Mapping[str, Any],
    *,
    rate: float,
    runlength_s: float,
    warmup_s: float,
    client_id: int,
    seed: int,
    start_at: float,
) -> list[str]:
    """The `fstress run` flags (without --json) that roles/fstress/tasks/run.yml passes for this
    trial."""
    return [
        *spec["run_args"],
        "--rate",
        f"{float(rate):.6f}",
        "--duration",
        str(float(runlength_s)),
        "--warmup",
        str(float(warmup_s)),
        "--client-id",
        str(int(client_id)),
        "--seed",
        str(int(seed)),
        "--start-at",
        f"{float(start_at):.3f}",
    ]


def agent_argv(
    spec: Mapping[str, Any], deployment: str, metrics_addr: str | None = None
) -> list[str]:
    """The command that starts the host's agent: the role's prefix (netns, taskset, chrt, binary)
    with `agent` (`--metrics-addr` if given: live_agents.agent_endpoint), locally (the local
    connection) or through `ssh -T`."""
    cmd = [*spec["prefix"], "agent", "--deployment", deployment, "--pid-file", spec["pid_file"]]
    return host_argv(spec, cmd + (["--metrics-addr", metrics_addr] if metrics_addr else []))


class Agent:
    """One load host's agent: a child process speaking JSON lines; a reader thread queues its
    replies."""

    def __init__(
        self,
        host: str,
        argv: Sequence[str],
        log_path: Path | None = None,
        pass_fds: Sequence[int] = (),
    ) -> None:
        self.host = host
        self.argv = list(argv)
        # kept open for the agent's life, closed by close(): not a with-block
        self._log = open(log_path, "ab") if log_path is not None else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                start_new_session=True,
                pass_fds=tuple(pass_fds),
                env=child_env(),  # an agent needs no credential of this process
            )
        except OSError as e:
            self._close_log()
            raise AgentError(f"{host}: cannot start the agent ({self.argv[0]}): {e}") from e
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name=f"agent-{host}", daemon=True)
        self._reader.start()
        self.hello: dict[str, Any] = {}
        self._n = 0

    def _read(self) -> None:
        """Queue each reply line (at most MAX_REPLY_BYTES: a longer one is read past and queued
        as a failed reply, so a broken agent cannot fill this process's memory)."""
        assert self.proc.stdout is not None
        out, limit = self.proc.stdout, MAX_REPLY_BYTES
        while line := out.readline(limit):
            self._replies.put(_reply(line, out, limit))
        self._replies.put(None)  # end of output: the agent is gone

    def _close_log(self) -> None:
        getattr(self._log, "close", lambda: None)()

    @property
    def pid(self) -> int:
        return int(self.hello.get("pid") or self.proc.pid)

    protocol = property(lambda self: int(self.hello.get("protocol") or 1))

    def _next(self, deadline: float) -> dict[str, Any]:
        left = deadline - time.monotonic()
        try:
            msg = self._replies.get(timeout=max(left, 0.0))
        except queue.Empty:
            raise AgentError(f"{self.host}: no reply from the agent within its bound") from None
        if msg is None:
            self._replies.put(None)  # stays ended
            try:
                rc: int | None = self.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                rc = None
            why = "" if rc is None else f" (killed by signal {-rc})" if rc < 0 else f" (exit {rc})"
            raise AgentError(f"{self.host}: the agent's output ended{why}")
        return msg

    def wait_hello(self, timeout_s: float = HELLO_TIMEOUT_S) -> dict[str, Any]:
        msg = self._next(time.monotonic() + timeout_s)
        if msg.get("event") != "hello" or not msg.get("ok"):
            raise AgentError(f"{self.host}: no hello from the agent: {json.dumps(msg)[:300]}")
        if msg.get("protocol") not in PROTOCOLS:
            raise AgentError(
                f"{self.host}: agent protocol {msg.get('protocol')!r}, expected one of {PROTOCOLS}"
            )
        self.hello = msg
        return msg

    def send(self, op: str, **fields: Any) -> str:
        self._n += 1
        rid = f"{op}-{self._n}"
        line = json.dumps({"id": rid, "op": op, **fields}) + "\n"
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except (OSError, ValueError) as e:
            raise AgentError(f"{self.host}: cannot write to the agent: {e}") from e
        return rid

    def reply(self, rid: str, deadline: float) -> dict[str, Any]:
        """The reply to request `rid` (replies to earlier requests are skipped)."""
        while True:
            msg = self._next(deadline)
            if msg.get("id") == rid:
                return msg

    def close(self, timeout_s: float = QUIT_TIMEOUT_S, send_quit: bool = True) -> None:
        """quit (if send_quit), the end of stdin, then SIGKILL of its process group; never
        raises."""
        if self.proc.poll() is None:
            try:
                if send_quit:
                    self.send("quit")
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except (AgentError, OSError, ValueError):
                pass
            end_group(self.proc, timeout_s, QUIT_TIMEOUT_S)
        self._close_log()

    def kill(self) -> None:
        self.close(timeout_s=0.0, send_quit=False)  # the end of stdin, then SIGKILL
