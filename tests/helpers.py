"""Helpers shared by test modules: a fake ansible-runner, fstress JSON, rating files,
the integration slot, recorded nightly nights, the local SMTP and HTTP receivers of notifications."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Callable

from workbench.controller.spec import RatingSpec
from workbench.controller.trial import TrialResult
from workbench.measure.playbook import PlaybookRun

MAX_INVALID_PER_LOAD = RatingSpec.max_invalid_per_load   # the controller's re-runs of one load


REPO = Path(__file__).resolve().parent.parent


def fstress_json(**over):
    d = {"offered_rate": 500.0, "achieved_rate": 500.0, "duration_s": 5.0, "ops_total": 2500,
         "mean_ms": 3.5, "std_ms": 1.2, "p50_ms": 3.0, "p95_ms": 6.0, "p99_ms": 9.0, "max_ms": 20.0,
         "errors": 0, "timeouts": 0, "retransmits": 0, "generator_saturated": False,
         "saturation_reason": "", "send_lag_ms": {"mean": 0.01, "p99": 0.1, "max": 0.5}}
    d.update(over)
    return d


# `fstress probe --nfs-version 4.1` of Ganesha 4.3 on a slot (the session part; loadgen/README.md, Probe)
FAKE_PROBE_V41 = {"server": "10.251.1.1", "export": "/export", "nfs_port": 2049, "nfs_port_from": "given",
                  "mount_port": 0, "mount_port_from": "none", "rpc_programs": [],
                  "rpc_programs_error": "not asked: NFSv4.1 needs no portmapper", "nfs_version": "4.1",
                  "nfs4": {"max_slots": 64, "max_request_size": 67108864, "max_response_size": 67108864,
                           "max_response_size_cached": 0, "max_operations": 1024, "lease_time_s": 60}}


class FakeRunner:
    """Stands in for ansible-runner: records calls; run_trial writes `result` (or fails)."""

    def __init__(self, result="default", fail=None, rc=0):
        self.calls: list[tuple[str, dict]] = []
        self.timeouts_s: dict[str, float | None] = {}
        self.result = fstress_json() if result == "default" else result
        self.fail = fail
        self.rc = rc

    def __call__(self, playbook, extravars, *, inventory, private_data_dir, log_path, timeout_s=None):
        self.calls.append((Path(playbook).name, dict(extravars)))
        self.timeouts_s[Path(playbook).name] = timeout_s
        if "sysinfo_dest" in extravars:            # provision_sut.yml fetches the SUT's sysinfo
            Path(extravars["sysinfo_dest"]).write_text(json.dumps({"host": "fake"}))
        if "probe_dest" in extravars and Path(playbook).name == "provision_sut.yml":   # over NFSv4.1 a load
            # host's probe of it
            Path(extravars["probe_dest"]).write_text(json.dumps(FAKE_PROBE_V41))
        if Path(playbook).name == "run_trial.yml":
            res = self.result(extravars) if callable(self.result) else self.result
            if res is not None:
                Path(extravars["trial_out"]).write_text(json.dumps(res))
        if self.fail:
            return PlaybookRun(rc=2, status="failed", failures=[self.fail])
        return PlaybookRun(rc=self.rc, status="successful" if self.rc == 0 else "failed")


def rating_dir_of(results: Path) -> Path:
    """Where `workbench rate --results DIR` stores its rating (the LocalStore's layout, as in S3)."""
    return results / "ratings" / results.name


def _trial_records(rating: Path) -> list[dict]:
    return [json.loads(f.read_text()) for f in sorted((rating / "trials").glob("*.json"))]


def rating_files(results: Path) -> tuple[dict, list[dict], Path]:
    """(result, trial records in order, rating directory) of a `workbench rate --results DIR`."""
    rating = rating_dir_of(results)
    return json.loads((rating / "result.json").read_text()), _trial_records(rating), rating


def trial_table(results: Path) -> str:
    """One line per trial of a `workbench rate --results DIR` (load, runlength, valid, mean, p95,
    reason, decision), for a failing test's message; "" when the rating wrote none."""
    rows = _trial_records(rating_dir_of(results))
    return "\n".join(f"{t['load_ops_s']:8.1f} ops/s {t['runlength_s']:4g} s valid={t['valid']!s:5} "
                     f"mean {t.get('mean_ms') or 0:8.1f} p95 {t.get('p95_ms') or 0:8.1f} ms "
                     f"{(t.get('reason') or '')[:50]!r} → {str(t.get('decision') or '')[:70]}" for t in rows)


# what no output may show (issue 30): a latency bound below zero, a negative accuracy, a missing end
# of a converged rating's λ* interval
_BAD_FIGURES = (re.compile(r"CI[^\[\n]{0,20}\[\s*-\s*\d"), re.compile(r"accuracy\s*-\s*\d"),
                re.compile(r"ms, CI \[\s*—"))


def bad_figures(text: str) -> list[str]:
    """The lines of `text` that show a negative latency bound or accuracy, or a latency CI with no end."""
    return [ln for ln in text.splitlines() if any(p.search(ln) for p in _BAD_FIGURES)]


def result_bad_fields(res: dict) -> list[str]:
    """What a result (result.json, or one goal of it) claims that it must not: a negative or missing
    latency bound or accuracy outside [0, 1]; for a converged rating, an interval with an end not
    shown or not around λ*."""
    bad = []
    mci, acc = res.get("mean_ms_ci") or [None, None], res.get("accuracy")
    if mci[0] is not None and mci[0] < 0:
        bad.append(f"mean_ms_ci {mci}")
    if acc is not None and not 0 <= acc <= 1:
        bad.append(f"accuracy {acc}")
    ci = res.get("peak_rate_ci") or [None, None]
    if res.get("converged"):
        finite = all(isinstance(x, (int, float)) and 0 < x < float("inf") for x in ci)
        if not finite or not ci[0] <= res["peak_rate"] <= ci[1]:
            bad.append(f"converged with peak_rate_ci {ci} around λ* {res.get('peak_rate')}")
        if not 0 < (res.get("peak_rate_ci_level") or 0) < 1:
            bad.append(f"peak_rate_ci_level {res.get('peak_rate_ci_level')}")
    for g in (res.get("per_goal") or {}).values():
        bad += result_bad_fields({**g, "per_goal": None})
    return bad


INTEGRATION_SLOT = os.environ.get("WB_HARNESS_SLOT", "slot2")


STATE = Path("/tmp/workbench/hosts")


def send_lag_only(trial: dict) -> bool:
    """Invalid only because fstress's send-lag p99 passed its bound: the generator was late, as
    when this VM stalls (20-45 ms at times, tests/loadgen/test_fstress_integration.py LAG_BOUND)."""
    reason = str(trial.get("reason") or "")
    return (not trial.get("valid") and reason.startswith("generator saturated: ")
            and all(x.startswith("send-lag") for x in reason.removeprefix("generator saturated: ").split("; ")))


def load_host(slot: str) -> str:
    """The load host of a slot of the local inventory: slotK → loadK."""
    return "load" + slot.removeprefix("slot")


def cmdline(pid: int | str) -> str | None:
    """The process's command line, its arguments joined by spaces; None when it has gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None


def load_host_fstress(slot: str) -> list[str]:
    """fstress processes running in the slot's load-host namespace (wb-loadK), as "pid: command line"."""
    ns = f"wb-{load_host(slot)}"
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=10)
    return [f"{pid}: {cmd}" for pid in out.stdout.split() if "fstress" in (cmd := cmdline(pid) or "")]


def renumbered_inventory(dst: Path, new_numbers: dict[int, int], source: str = "local") -> Path:
    """inventory/<source>/hosts.yml with slot K renamed slot new_numbers[K]: groups, hosts, namespaces,
    bridges and addresses (10.251.K.x local, 10.252.K.x tenants); every other setting as in the original."""
    text = (REPO / "inventory" / source / "hosts.yml").read_text()
    net = {"local": "10.251", "tenants": "10.252"}[source]
    for old, k in new_numbers.items():
        text = re.sub(rf"\b(slot|t?sut|t?load|wbt){old}(b?)\b", rf"\g<1>{k}\g<2>", text)
        text = text.replace(f"{net}.{old}.", f"{net}.{k}.")
    dst.write_text(text)
    return dst


def slot_leftovers(slot: str) -> list[str]:
    """What a local slot leaves on this host while it is provisioned or leased: its network
    namespaces, its Ganesha, its export's mount and its loop devices (their paths under
    /tmp/workbench/hosts/sut<N>/), every other process of its hosts (an fstress agent or generator
    under /tmp/workbench/hosts/load<N>/ that outlived its namespace) and its lease (issue 53)."""
    from workbench.lease import leases
    n = slot.removeprefix("slot")
    host_dir, load_dir = f"/hosts/sut{n}/", f"/hosts/load{n}/"
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout.split()
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, timeout=30).stdout.splitlines()
    mounts = Path("/proc/mounts").read_text().splitlines()
    procs = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True, timeout=30).stdout
    mine = [ln.strip() for ln in procs.splitlines() if (host_dir in ln or load_dir in ln) and " ps -eo" not in ln]
    lease = leases.read_lease(slot)
    return ([f"netns {ns}" for ns in netns if ns in (f"wb-sut{n}", f"wb-load{n}")]
            + [f"loop {ln}" for ln in loops if host_dir in ln]
            + [f"mount {ln}" for ln in mounts if host_dir in ln]
            + [f"{'ganesha' if 'ganesha.nfsd' in ln else 'process'} {ln}" for ln in mine]
            + ([f"lease {slot} of rating {lease.get('rating_id')}"] if lease else []))


NIGHTLY_STORE = Path(__file__).resolve().parent / "data" / "nightly_store"
RECORDED_BASELINE = "web"           # the recorded nights' baseline (scripts/record-nightly-sample.py)


def load_recorded_nights(store, *nights: str, as_name: str | None = None) -> None:
    """Put the recorded nights (tests/data/nightly_store, scripts/record-nightly-sample.py) into `store`;
    with `as_name`, their baseline's records and ratings under that name instead (a second baseline with
    the same history, e.g. a canary), the nights' config.json left out."""
    for path in sorted(NIGHTLY_STORE.rglob("*.json")):
        key = path.relative_to(NIGHTLY_STORE).as_posix()
        if not any(f"/{n}/" in key or f"__{n}__" in key for n in nights):
            continue
        if as_name is None:
            store.put_bytes(key, path.read_bytes(), "application/json")
        elif not key.endswith("/config.json"):
            new_key = key.replace(f"/{RECORDED_BASELINE}.json", f"/{as_name}.json").replace(
                f"__{RECORDED_BASELINE}/", f"__{as_name}/")
            store.put_json(new_key, _renamed(json.loads(path.read_text()), as_name))


def _renamed(obj, name: str):
    """A recorded object with its baseline's name and rating ids (nightly__<night>__<name>) renamed."""
    if isinstance(obj, dict):
        return {k: name if k == "name" and v == RECORDED_BASELINE else _renamed(v, name) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_renamed(v, name) for v in obj]
    if isinstance(obj, str):
        return re.sub(rf"^(nightly__\d{{4}}-\d\d-\d\d__){RECORDED_BASELINE}\b", rf"\g<1>{name}", obj)
    return obj


def mm1(capacity=1000.0, base=2.0):
    """Deterministic M/M/1-like fake measurer: R = base / (1 − λ/cap); overload grows without bound."""
    def measure(load, r):
        rho = load / capacity
        m = base / (1 - rho) if rho < 0.999 else 1e4 * rho
        return TrialResult(mean_ms=m, p95_ms=3 * m, achieved_rate=min(load, capacity))
    return measure


def smtp_conn_env(port: int, to: str = "storage-team@example.org") -> str:
    """AIRFLOW_CONN_<ID>'s JSON for plain SMTP (SSL and STARTTLS off) on 127.0.0.1:port."""
    return json.dumps({"conn_type": "smtp", "host": "127.0.0.1", "port": port,
                       "extra": {"to": to, "from_email": "workbench@example.org", "disable_ssl": True,
                                 "disable_tls": True, "timeout": 10, "retry_limit": 0}})


class SmtpReceiver:
    """A local SMTP server (aiosmtpd, in a thread) on 127.0.0.1 at a port the kernel picks; the
    messages it received (email.message.Message) in `messages`. No TLS, no AUTH."""

    def __init__(self) -> None:
        import logging

        from aiosmtpd.controller import Controller
        logging.getLogger("mail.log").setLevel(logging.WARNING)       # aiosmtpd logs every command

        class _Handler:
            async def handle_DATA(handler, server, session, envelope):
                import email
                self.messages.append(email.message_from_bytes(envelope.original_content))
                self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
                return "250 OK"

        class _Controller(Controller):
            def _trigger_server(ctl):               # port 0: learn the port the kernel gave
                ctl.port = ctl.server.sockets[0].getsockname()[1]
                super()._trigger_server()

        self.messages: list = []
        self.envelopes: list = []
        self._controller = _Controller(_Handler(), hostname="127.0.0.1", port=0, ready_timeout=10)

    @property
    def port(self) -> int:
        return self._controller.port

    def conn_env(self) -> str:
        return smtp_conn_env(self.port)

    def __enter__(self) -> "SmtpReceiver":
        self._controller.start()
        return self

    def __exit__(self, *exc) -> None:
        self._controller.stop()


class WebhookReceiver:
    """A local HTTP server (http.server, in a thread) on 127.0.0.1 at a port the kernel picks; the
    POSTs it received as (path, headers, JSON body) in `posts`; answers `status`."""

    def __init__(self, status: int = 200) -> None:
        import http.server
        receiver = self
        self.posts: list[tuple[str, dict, dict]] = []
        self.status = status

        class _Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.posts.append((self.path, dict(self.headers), json.loads(body)))
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def conn_env(self, path: str = "hooks/workbench", **extra_fields) -> str:
        return json.dumps({"conn_type": "http", "host": "127.0.0.1", "port": self.port, "schema": path,
                           **extra_fields})

    def __enter__(self) -> "WebhookReceiver":
        import threading
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def web_surface_ratings(rated: list) -> Callable:
    """A stand-in for `sweep.run_rating` answering λ* from the simulated server's web family at the
    sample's threads and disks (workbench.measure.factor_model.family_capacity); cost 50 s or the
    rating's budget in the controller's account (30 s more measured); the plans it rated are
    appended to `rated`."""
    from workbench.measure.factor_model import family_capacity

    def rating(plan, store, log=print, report=None):
        lam = family_capacity("web", {"threads": plan.factors["threads"], "disks": plan.factors["disks"]})[0]
        rated.append(plan)
        spec_s = min(50.0, plan.spec["budget_s"])     # the controller's account; the wall time is longer
        return {"peak_rate": lam, "converged": True, "n_trials": 5, "cost_s": spec_s + 30.0, "cost_spec_s": spec_s,
                "bracket": [lam, lam], "peak_rate_ci": [lam, lam], "reason": "converged"}
    return rating


def curve_trial(n, load, achieved, mean, valid=True, p95=None, p99=None, **more):
    return {"n": n, "load_ops_s": load, "achieved_rate": achieved, "mean_ms": mean, "p95_ms": p95 or 2 * mean,
            "p99_ms": p99, "valid": valid, "runlength_s": 10.0, **more}


def curve_log():
    """A synthetic trial log for the load curve (tests/findings/test_load_curve.py) and its figure:
    100: two valid trials; 200: one valid, one invalid, one harness failure (no trial of the server);
    300: one excluded as not steady, one excluded by great_expectations (invalid as decide read it),
    one valid; 400: valid, mean past R_sat 40 ms; 500: short of offered, past the peak throughput."""
    trials = [curve_trial(0, 100, 100.0, 1.0, p99=3.0), curve_trial(1, 100, 98.0, 2.0, p99=5.0),
              curve_trial(2, 200, 150.0, 9.0, valid=False, reason="errors"),
              curve_trial(3, 200, 0.0, 0.0, valid=False, harness_failure=True, outcome="harness"),
              curve_trial(4, 200, 199.0, 3.0),
              curve_trial(5, 300, 300.0, 99.0), curve_trial(6, 300, 300.0, 88.0), curve_trial(7, 300, 296.0, 5.0),
              curve_trial(8, 400, 390.0, 80.0), curve_trial(9, 500, 280.0, 30.0)]
    logged = [{"valid": t["valid"]} for t in trials]
    logged[6]["valid"] = False
    result = {"peak_rate": 350.0, "r_sat_ms": 40.0, "l_sat_ms": 2000.0, "trials": logged,
              "not_steady": {"5": "not steady: trend up"}}
    return result, trials
