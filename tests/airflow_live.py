"""A real, throw-away Airflow 3.3 deployment for integration tests (no mocks).

`LiveAirflow` configures an AIRFLOW_HOME (SQLite + LocalExecutor, the repo's plugins/, SimpleAuthManager
with the users of scripts/airflow_auth.py, as ui.sh and celery-stack.sh: `admin` and a read-only
`viewer`, generated passwords in AIRFLOW_HOME/passwords.json, mode 0600), migrates the database, creates
the `workbench_sut` pool and starts scheduler, dag-processor, triggerer and api-server as separate
processes, each in its own process group with its log in AIRFLOW_HOME/<name>.log.  Leaving the
`with` block (or interpreter exit) stops all of them, also when the test failed.  The REST API
calls log in as admin (a JWT from POST /auth/token); `api(..., user="viewer")` calls as the viewer,
`user=None` without a token.

    with LiveAirflow(tmp_path / "airflow", dags_folder, extra_env={"WB_S3_ENDPOINT": ...}) as af:
        af.wait_ready("rate_peak")
        run_id = af.trigger("rate_peak", {"profile": "smoke"})
        assert af.wait_run("rate_peak", run_id, timeout_s=600) == "success"

Every DAG starts paused; wait_ready(dag_id) unpauses only that one.  Measured on this machine
(2 cores): `db migrate` + pool ≈ 6 s, the four processes up and rate_peak parsed ≈ 12 s more
(≈ 18 s in all; see `LiveAirflow.timings_s`).  After `kill_scheduler()` + `start_scheduler()` a
task instance that was running is detected as dead ≈ 17 s after the kill and retried.
"""
from __future__ import annotations

import atexit
import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import psutil  # an Airflow dependency

REPO = Path(__file__).resolve().parent.parent
# scripts/airflow_auth.py: the users, their passwords file and the token (shared with the scripts)
_spec = importlib.util.spec_from_file_location("airflow_auth", REPO / "scripts" / "airflow_auth.py")
airflow_auth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(airflow_auth)
PASSWORDS_FILE = "passwords.json"      # in AIRFLOW_HOME (LiveAirflow) and in the stack's --dir
VENV_BIN = Path(sys.executable).parent
POOL = "workbench_sut"
POOL_SLOTS = 2
FINAL_RUN_STATES = {"success", "failed"}
COMPONENTS = ("scheduler", "dag-processor", "triggerer", "api-server")

# The DAG files do not change during a test: parse each once per dag-processor (a restarted one
# parses them again), instead of every 30 s (Airflow's default min_file_process_interval).
PARSE_ONCE = {"DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600"}

FAST_RECOVERY = {
    # Crash recovery in seconds instead of minutes.  A task's supervisor heartbeats its
    # task instance through the execution API every `task_instance_heartbeat_sec`; when the
    # scheduler (and with it the LocalExecutor workers and their supervisors) is SIGKILLed
    # the heartbeats stop.  The restarted scheduler
    #  * adopts or resets the dead scheduler's queued/running task instances once that
    #    SchedulerJob's own heartbeat (`job_heartbeat_sec`) is older than
    #    `scheduler_health_check_threshold`; it looks every `orphaned_tasks_check_interval`;
    #  * fails - and, with retries left, reschedules - a running task instance whose
    #    heartbeat is older than `task_instance_heartbeat_timeout`, checked every
    #    `task_instance_heartbeat_timeout_detection_interval` (Airflow 2's "zombie"
    #    detection, renamed in 3.0).
    # Defaults are 30 s / 300 s / 300 s / 10 s; a slow trial must still heartbeat in time,
    # which the supervisor does every 2 s here regardless of what the task is doing.
    "SCHEDULER__JOB_HEARTBEAT_SEC": "2",
    "SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
    "SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": "10",
    "SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "5",
    "SCHEDULER__TASK_INSTANCE_HEARTBEAT_SEC": "2",
    "SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "15",
    "SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "2",
    "SCHEDULER__TASK_QUEUED_TIMEOUT": "120",
    "SCHEDULER__TASK_QUEUED_TIMEOUT_CHECK_INTERVAL": "10",
    "SCHEDULER__ENABLE_HEALTH_CHECK": "False",
    "TRIGGERER__JOB_HEARTBEAT_SEC": "2",
}


class AirflowError(RuntimeError):
    """A live Airflow did not do what a test needed (message names the component and its log).
    `status` is the HTTP status of a refused REST API call, else None."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _exit_on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def _transient(e: Exception) -> bool:
    """A stall (a timeout) or a server error: worth asking again; a 4xx or a refused connection is not."""
    if isinstance(e, AirflowError):
        return (e.status or 0) >= 500
    return isinstance(e, TimeoutError) or isinstance(getattr(e, "reason", None), TimeoutError)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class RestApi:
    """Airflow's public REST API (/api/v2) at `base_url`, for a deployment that knows whether its
    processes live (`check_alive`), where their logs are (`log_path`) and where the passwords of
    its users are (`passwords_file`)."""

    base_url: str
    passwords_file: Path
    _tokens: dict[str, str]

    def check_alive(self) -> None:
        raise NotImplementedError

    def log_path(self, name: str) -> Path:
        raise NotImplementedError

    def tail(self, name: str, n_chars: int = 3000) -> str:
        try:
            return self.log_path(name).read_text(errors="replace")[-n_chars:]
        except FileNotFoundError:
            return "(no log)"

    def token(self, user: str = "admin", fresh: bool = False) -> str:
        """A JWT for `user` (POST /auth/token with its password from `passwords_file`), cached."""
        if fresh or user not in self._tokens:
            try:
                self._tokens[user] = airflow_auth.token(self.base_url, self.passwords_file, user)
            except urllib.error.HTTPError as e:
                raise AirflowError(f"POST /auth/token as {user} -> {e.code}: {e.read()[:500]!r}",
                                   status=e.code) from e
        return self._tokens[user]

    def api(self, method: str, path: str, body: Any = None, timeout_s: float = 30,
            user: str | None = "admin", tries: int = 3) -> Any:
        """Call the public REST API as `user` (`Authorization: Bearer` its JWT; None: no token).
        A GET or PATCH that times out or gets a 5xx is asked again, `tries` times in all: under load
        the api-server stalled 30 s (the cause: see warm_execution_api) and SQLite then answered 500
        "Database error" (the suite at 9b43e67, CI of 25c7ac9). A POST (a trigger) is asked once."""
        for attempt in range(1, tries + 1):
            try:
                return self._request(method, path, body, timeout_s, user)
            except (TimeoutError, urllib.error.URLError, AirflowError) as e:
                if method not in ("GET", "PATCH") or attempt == tries or not _transient(e):
                    raise
                print(f"{method} /api/v2{path}: {e!r:.300}; asked again ({attempt + 1} of {tries})", flush=True)
                time.sleep(1)

    def _request(self, method: str, path: str, body: Any, timeout_s: float, user: str | None) -> Any:
        """One request; a 401 with a cached token (expired: 24 h) is tried once more with a fresh one."""
        data = None if body is None else json.dumps(body).encode()
        for fresh in (False, True):
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            if user is not None:
                headers["Authorization"] = f"Bearer {self.token(user, fresh)}"
            req = urllib.request.Request(f"{self.base_url}/api/v2{path}", data=data, method=method,
                                         headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                    raw = resp.read()
                return json.loads(raw) if raw else None
            except urllib.error.HTTPError as e:
                if e.code == 401 and user is not None and not fresh:
                    continue
                raise AirflowError(f"{method} /api/v2{path} -> {e.code}: {e.read()[:2000]!r}",
                                   status=e.code) from e

    def wait_ready(self, dag_id: str | None = None, timeout_s: float = 180) -> None:
        """Wait for the api-server, a healthy scheduler and triggerer, and (if given) the DAG
        parsed without import errors; then unpause that DAG (only that one)."""
        t0 = time.monotonic()
        deadline = t0 + timeout_s
        last = "api-server not answering"
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                health = self.api("GET", "/monitor/health", timeout_s=5, user=None, tries=1)   # public
                states = {k: (v or {}).get("status") for k, v in health.items()}
                if all(states.get(k) == "healthy" for k in ("metadatabase", "scheduler", "triggerer")):
                    if dag_id is None:
                        break
                    errors = self.api("GET", "/importErrors")
                    if errors.get("total_entries"):
                        raise AirflowError(f"DAG import errors: {errors['import_errors']}")
                    try:
                        self.api("GET", f"/dags/{dag_id}", timeout_s=5)
                        self.set_paused(dag_id, False)
                        break
                    except AirflowError as e:
                        last = f"DAG {dag_id} not parsed yet ({e})"
                else:
                    last = f"health {states}"
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
                last = f"api-server not answering ({e})"
            time.sleep(1)
        else:
            raise AirflowError(f"Airflow not ready after {timeout_s:.0f} s: {last}; "
                               f"dag-processor log:\n{self.tail('dag-processor')}")
        self.warm_execution_api()
        self.timings_s["ready"] = time.monotonic() - t0

    def warm_execution_api(self, timeout_s: float = 120) -> None:
        """The task-execution API (Cadwyn) builds its versioned routes at its first request, inside
        the api-server's event loop: 8-31 s on this machine with no other request answered (the
        first task's start stalled the tests' polls past their 30 s timeout). Pay it here, before a
        test triggers anything (as celery-stack.sh's wait_ready does)."""
        with urllib.request.urlopen(f"{self.base_url}/execution/health", timeout=timeout_s) as resp:
            resp.read()

    def get_page(self, path: str, user: str | None = "admin", timeout_s: float = 30) -> tuple[int, str]:
        """GET a page of the api-server outside /api/v2 (a plugin's, e.g. /workbench/runs/…) as `user`
        (None: without a token): its status and text, also for a refusal."""
        headers = {} if user is None else {"Authorization": f"Bearer {self.token(user)}"}
        req = urllib.request.Request(f"{self.base_url}{path}", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                return resp.status, resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8", "replace")

    def set_paused(self, dag_id: str, paused: bool) -> None:
        self.api("PATCH", f"/dags/{dag_id}", {"is_paused": paused})

    def trigger(self, dag_id: str, conf: dict | None = None) -> str:
        run = self.api("POST", f"/dags/{dag_id}/dagRuns",
                       {"logical_date": None, "conf": conf or {}})
        return run["dag_run_id"]

    def dag_run(self, dag_id: str, run_id: str) -> dict:
        return self.api("GET", f"/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id, safe='')}")

    def dag_runs(self, dag_id: str) -> list[dict]:
        return self.api("GET", f"/dags/{dag_id}/dagRuns?limit=100")["dag_runs"]

    def run_state(self, dag_id: str, run_id: str) -> str:
        return self.dag_run(dag_id, run_id)["state"]

    def wait_run(self, dag_id: str, run_id: str, timeout_s: float = 600) -> str:
        """Wait until the run is success/failed; return the state (AirflowError on timeout)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.check_alive()
            state = self.run_state(dag_id, run_id)
            if state in FINAL_RUN_STATES:
                return state
            time.sleep(2)
        raise AirflowError(f"run {dag_id}/{run_id} not finished after {timeout_s:.0f} s "
                           f"(tasks: {self.task_states(dag_id, run_id)})")

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]:
        """All task instances of the run (paged: rate_peak has ~90 tasks)."""
        out: list[dict] = []
        rid = urllib.parse.quote(run_id, safe="")
        while True:
            page = self.api("GET", f"/dags/{dag_id}/dagRuns/{rid}/taskInstances"
                                   f"?limit=100&offset={len(out)}")
            out += page["task_instances"]
            if not page["task_instances"] or len(out) >= page["total_entries"]:
                return out

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        return {ti["task_id"]: ti["state"] for ti in self.task_instances(dag_id, run_id)}

    def set_run_state(self, dag_id: str, run_id: str, state: str) -> dict:
        """PATCH the run to success/failed/queued (marking failed stops its running tasks)."""
        return self.api("PATCH", f"/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id, safe='')}",
                        {"state": state})


class LiveAirflow(RestApi):
    """Scheduler + dag-processor + triggerer + api-server on a temp AIRFLOW_HOME."""

    def __init__(
        self,
        home: Path,
        dags_folder: Path = REPO / "dags",
        extra_env: dict[str, str] | None = None,
        *,
        port: int | None = None,
        parallelism: int = 8,
    ) -> None:
        self.home = Path(home).resolve()
        self.dags_folder = Path(dags_folder).resolve()
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.passwords_file = self.home / PASSWORDS_FILE
        self._tokens = {}
        self.procs: dict[str, subprocess.Popen] = {}
        self.timings_s: dict[str, float] = {}
        self.env = self._make_env(extra_env or {}, parallelism)
        self._atexit_registered = False

    # ---------------------------------------------------------------- configuration
    def _make_env(self, extra: dict[str, str], parallelism: int) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        # Airflow starts `airflow`/python subprocesses by name: the venv must come first on PATH.
        env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO)])
        env["AIRFLOW_HOME"] = str(self.home)
        env["ANSIBLE_CONFIG"] = str(REPO / "ansible.cfg")
        cfg = {
            "CORE__DAGS_FOLDER": str(self.dags_folder),
            "CORE__PLUGINS_FOLDER": str(REPO / "plugins"),      # the "Why λ*" tab (plugins/workbench_ui.py)
            "CORE__EXECUTOR": "LocalExecutor",
            "CORE__LOAD_EXAMPLES": "False",
            # Every DAG of the folder starts paused; wait_ready(dag_id) unpauses only the DAG under
            # test (else the scheduler would start e.g. nightly_regression's cron run right away
            # and occupy the workbench slots).
            "CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            "CORE__PARALLELISM": str(parallelism),
            "CORE__DAGBAG_IMPORT_TIMEOUT": "120",
            "DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home / 'airflow.db'}",
            # One secret for every component: the scheduler signs the tasks' execution-API tokens,
            # the api-server checks them.
            "API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "API__HOST": "127.0.0.1",
            "API__PORT": str(self.port),
            "API__BASE_URL": self.base_url,
            "API__WORKERS": "1",
            "CORE__EXECUTION_API_SERVER_URL": f"{self.base_url}/execution/",
            # Private ports for the log servers, so two LiveAirflows (or a user's Airflow) coexist.
            "LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
            "LOGGING__BASE_LOG_FOLDER": str(self.home / "logs"),
            "DAG_PROCESSOR__DAG_BUNDLE_STORAGE_PATH": str(self.home / "bundles"),
            # Find the dags folder's files quickly (every 5 s) and parse each once: a parse costs
            # ~3 s of CPU, and reparsing 4 files every few seconds took a core from the other tests.
            "DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            **PARSE_ONCE,
            "DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT": "180",
        }
        env.update({f"AIRFLOW__{k}": v for k, v in {**cfg, **FAST_RECOVERY}.items()})
        env.update(airflow_auth.env(self.passwords_file))     # admin + viewer, no all-admins
        env.update(extra)
        return env

    # ---------------------------------------------------------------- life cycle
    def __enter__(self) -> "LiveAirflow":
        # SIGTERM/SIGHUP would end Python without running __exit__ and orphan the components:
        # turn them into SystemExit while the context is open (main thread only).
        self._old_handlers = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._old_handlers[sig] = signal.signal(sig, _exit_on_signal)
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.stop()
        finally:
            for sig, handler in self._old_handlers.items():
                signal.signal(sig, handler)

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        airflow_auth.ensure_passwords(self.passwords_file)   # before the api-server: it never prints one
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        t0 = time.monotonic()
        self.cli("db", "migrate", timeout_s=300)
        self.cli("pools", "set", POOL, str(POOL_SLOTS), "SUT slots of the local workbench")
        self.timings_s["migrate"] = time.monotonic() - t0
        for name in COMPONENTS:
            self._spawn(name)

    def cli(self, *args: str, timeout_s: float = 120) -> str:
        """Run `airflow <args>` against this home; raise AirflowError with its output on failure."""
        out = subprocess.run(
            [str(VENV_BIN / "airflow"), *args], env=self.env, cwd=self.home,
            capture_output=True, text=True, timeout=timeout_s,
        )
        if out.returncode != 0:
            raise AirflowError(f"`airflow {' '.join(args)}` failed ({out.returncode}): "
                               f"{out.stderr[-3000:]}{out.stdout[-1000:]}")
        return out.stdout

    def log_path(self, name: str) -> Path:
        return self.home / f"{name}.log"

    def _spawn(self, name: str) -> None:
        argv = [str(VENV_BIN / "airflow"), name]
        if name == "api-server":
            argv += ["--port", str(self.port), "--host", "127.0.0.1"]
        with open(self.log_path(name), "ab") as log:
            self.procs[name] = subprocess.Popen(
                argv, env=self.env, cwd=self.home, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,  # own session = own group
            )

    def _kill_tree(self, name: str, sig: int) -> None:
        """Send `sig` to the component's process group and to every descendant (some of
        Airflow's task processes start their own sessions)."""
        proc = self.procs.get(name)
        if proc is None:
            return
        try:
            tree = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            tree = []
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        for child in tree:
            try:
                child.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        if sig == signal.SIGKILL:
            proc.wait(timeout=30)
            psutil.wait_procs(tree, timeout=30)

    def _stop_component(self, name: str, grace_s: float = 10) -> None:
        proc = self.procs.get(name)
        if proc is None:
            return
        if proc.poll() is None:
            self._kill_tree(name, signal.SIGTERM)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                pass
        self._kill_tree(name, signal.SIGKILL)  # stragglers of the group/tree, if any
        del self.procs[name]

    def stop(self) -> None:
        for name in list(self.procs):
            self._stop_component(name)

    def kill_scheduler(self) -> list[int]:
        """SIGKILL the scheduler with its LocalExecutor workers and their task processes,
        like a crashed machine would; returns the pids that were killed."""
        proc = self.procs["scheduler"]
        pids = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
        self._kill_tree("scheduler", signal.SIGKILL)
        del self.procs["scheduler"]
        alive = [p for p in pids if _alive(p)]
        if alive:
            raise AirflowError(f"scheduler processes survived SIGKILL: {alive}")
        return pids

    def start_scheduler(self) -> None:
        if "scheduler" in self.procs and self.procs["scheduler"].poll() is None:
            raise AirflowError("scheduler already running")
        self._spawn("scheduler")

    def check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise AirflowError(f"airflow {name} exited with {proc.returncode}; log "
                                   f"{self.log_path(name)}:\n{self.tail(name)}")



class CeleryStack(RestApi):
    """scripts/celery-stack.sh around a test: Postgres, Redis, Airflow with the CeleryExecutor and
    `workers` Celery workers, in `home` (the script's --dir), with `extra_env` (WB_S3_*, WB_SLOTS …)
    and FAST_RECOVERY in every process's environment.  Leaving the `with` block runs `down --purge`.
    Its REST API calls log in as the script does: the admin password from `home`/passwords.json
    (generated by `up`), a JWT from POST /auth/token.

        with CeleryStack(tmp_dir, {"WB_S3_ENDPOINT": ...}) as stack:
            stack.wait_ready("map_surface")
            run_id = stack.trigger("map_surface", {...})
    """

    SCRIPT = REPO / "scripts" / "celery-stack.sh"

    def __init__(self, home: Path, extra_env: dict[str, str], *, workers: int = 2) -> None:
        self.home = Path(home)
        self.workers = workers
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.passwords_file = self.home / PASSWORDS_FILE
        self._tokens = {}
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        self.env = {**env, **{f"AIRFLOW__{k}": v for k, v in {**FAST_RECOVERY, **PARSE_ONCE}.items()}, **extra_env}
        # its own announcement of its lease store: the suite's other tests run beside it on this host
        self.env.setdefault("WB_HOST_STATE", str(self.home.parent / "host-state"))
        self.killed: set[str] = set()
        self.timings_s: dict[str, float] = {}

    def script(self, action: str, *args: str, timeout_s: float = 300) -> str:
        out = subprocess.run([str(self.SCRIPT), action, "--dir", str(self.home), *args], env=self.env,
                             capture_output=True, text=True, timeout=timeout_s)
        if out.returncode != 0:
            raise AirflowError(f"celery-stack.sh {action} failed ({out.returncode}): "
                               f"{out.stderr[-3000:]}{out.stdout[-2000:]}")
        return out.stdout + out.stderr

    def __enter__(self) -> "CeleryStack":
        try:
            self.script("up", "--api-port", str(self.port), "--workers", str(self.workers))
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def down(self) -> str:
        return self.script("down", "--purge", timeout_s=600) if self.home.exists() else ""

    def log_path(self, name: str) -> Path:
        return self.home / f"{name}.log"

    def pid(self, name: str) -> int:
        return int((self.home / f"{name}.pid").read_text().split()[0])

    def check_alive(self) -> None:
        for f in self.home.glob("*.pid"):
            name = f.stem
            if name not in self.killed and not _alive(self.pid(name)):
                raise AirflowError(f"{name} of the Celery stack is down; log:\n{self.tail(name)}")

    def kill_worker(self, name: str) -> list[int]:
        """SIGKILL a Celery worker with its pool and task processes (ansible, fstress), like a
        crashed worker host; returns the pids that were killed."""
        root = psutil.Process(self.pid(name))
        tree = [root, *root.children(recursive=True)]
        for p in tree:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        gone, alive = psutil.wait_procs(tree, timeout=30)
        if alive:
            raise AirflowError(f"{name}: processes survived SIGKILL: {[p.pid for p in alive]}")
        self.killed.add(name)
        return [p.pid for p in tree]
