#!/usr/bin/env python3
"""Trigger `rate_peak` on the Compose stack through the Airflow REST API v2 and wait for it.

Used by scripts/test-compose.sh: a JWT from the api-server's /auth/token (SimpleAuthManager
admin; the password is read from a file, never from argv), wait until the dag-processor has
parsed the DAG, unpause it, POST a run with the given conf, poll its state (printing changes), and
on failure print the tail of each failed task's log. Exit 0 and print `dag_run_id=<id>` when the
run succeeded; 1 otherwise. Every wait is bounded. Standard library only.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S', time.gmtime())}] {msg}", flush=True)


class Api:
    def __init__(self, url: str, user: str, password: str) -> None:
        self.url, self.user, self.password, self.token = url.rstrip("/"), user, password, ""

    def _call(self, method: str, path: str, body=None, auth: bool = True, timeout: float = 30):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json")
        if auth:
            req.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            return json.loads(raw) if raw else None

    def login(self) -> None:
        out = self._call("POST", "/auth/token", {"username": self.user, "password": self.password}, auth=False)
        self.token = out["access_token"]

    def call(self, method: str, path: str, body=None):
        try:
            return self._call(method, path, body)
        except urllib.error.HTTPError as e:
            if e.code != 401:
                raise
            self.login()                       # expired token: once more with a fresh one
            return self._call(method, path, body)


def task_instances(api: Api, path: str) -> list[dict]:
    """Every task instance of a run (the API pages at [api] maximum_page_limit, 100 by default)."""
    out: list[dict] = []
    while True:
        page = api.call("GET", f"{path}?limit=100&offset={len(out)}")
        out += page["task_instances"]
        if not page["task_instances"] or len(out) >= page["total_entries"]:
            return out


def wait_for(what: str, timeout_s: float, probe, every_s: float = 5):
    """probe() until it returns a truthy value (exceptions count as "not yet"); bounded."""
    end, last_err = time.monotonic() + timeout_s, None
    while time.monotonic() < end:
        try:
            got = probe()
            if got:
                return got
        except (urllib.error.URLError, OSError, KeyError, ValueError) as e:
            last_err = e
        time.sleep(every_s)
    raise SystemExit(f"compose-rate-peak: {what} not within {timeout_s:.0f} s (last error: {last_err})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="api-server base URL, e.g. http://127.0.0.1:18080")
    ap.add_argument("--user", default="admin")
    ap.add_argument("--password-file", required=True)
    ap.add_argument("--dag", default="rate_peak")
    ap.add_argument("--conf", default='{"profile": "smoke"}')
    ap.add_argument("--ready-timeout-s", type=float, default=600)
    ap.add_argument("--run-timeout-s", type=float, default=2400)
    a = ap.parse_args()
    with open(a.password_file) as f:
        api = Api(a.url, a.user, f.read().strip())

    wait_for("the api-server's /auth/token", a.ready_timeout_s, lambda: api.login() or True)
    log(f"REST API: token for {a.user}")
    dag = urllib.parse.quote(a.dag, safe="")
    wait_for(f"DAG {a.dag} parsed", a.ready_timeout_s, lambda: api.call("GET", f"/api/v2/dags/{dag}")["dag_id"])
    api.call("PATCH", f"/api/v2/dags/{dag}", {"is_paused": False})
    log(f"REST API: {a.dag} parsed and unpaused")
    run = api.call("POST", f"/api/v2/dags/{dag}/dagRuns", {"logical_date": None, "conf": json.loads(a.conf)})
    run_id = run["dag_run_id"]
    log(f"REST API: triggered {a.dag} run {run_id} with conf {a.conf}")
    rid = urllib.parse.quote(run_id, safe="")

    end, shown, state = time.monotonic() + a.run_timeout_s, None, run["state"]
    while time.monotonic() < end:
        try:
            state = api.call("GET", f"/api/v2/dags/{dag}/dagRuns/{rid}")["state"]
            tis = task_instances(api, f"/api/v2/dags/{dag}/dagRuns/{rid}/taskInstances")
        except (urllib.error.URLError, OSError) as e:
            log(f"REST API: poll failed ({e}); retrying")
            time.sleep(10)
            continue
        counts: dict[str, int] = {}
        for ti in tis:
            counts[str(ti["state"])] = counts.get(str(ti["state"]), 0) + 1
        active = sorted(ti["task_id"] for ti in tis if ti["state"] in ("running", "queued", "scheduled"))
        done = sorted((ti for ti in tis if ti["state"] == "success" and ti.get("end_date")),
                      key=lambda t: t["end_date"])
        line = (f"run {state}; tasks " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                + (f"; active: {' '.join(active)}" if active else "")
                + (f"; last done: {done[-1]['task_id']}" if done else ""))
        if line != shown:
            log(line)
            shown = line
        if state in ("success", "failed"):
            break
        time.sleep(10)
    else:
        log(f"run {run_id} still {state} after {a.run_timeout_s:.0f} s")
        return 1
    if state != "success":
        for ti in tis:
            if ti["state"] not in ("failed", "upstream_failed", "up_for_retry"):
                continue
            tid, tries = ti["task_id"], max(1, int(ti.get("try_number") or 1))
            log(f"failed task {tid} (state {ti['state']}, try {tries}); log tail:")
            try:
                out = api.call("GET", f"/api/v2/dags/{dag}/dagRuns/{rid}/taskInstances/{tid}/logs/{tries}"
                               "?full_content=true")
                lines = [e.get("event", str(e)) if isinstance(e, dict) else str(e) for e in out.get("content", [])]
                print("\n".join("    " + ln for ln in lines[-40:]), flush=True)
            except (urllib.error.URLError, OSError, ValueError) as e:
                print(f"    (log not readable: {e})", flush=True)
        return 1
    print(f"dag_run_id={run_id}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
