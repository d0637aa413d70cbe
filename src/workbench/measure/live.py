"""The live view (issue 50): a running trial's server telemetry and figures in the Prometheus text
format, for a Prometheus server to scrape (scripts/celery-stack.sh and docker-compose.yml run
one; monitoring/prometheus/ holds its rules and the console page ``workbench.html``).

One endpoint per slot and process: ``http://ADDR:PORT/metrics`` with PORT = WB_METRICS_PORT_BASE
(default 9650) + the slot's number (slot1 → 9651, …; the trailing digits of the inventory group's
name, 0 without), ADDR = WB_METRICS_ADDR (default 127.0.0.1). It starts with the first trial of
that slot in the process (`trial`, around each trial of pipeline.steps.trial_step: the whole
rating under ``workbench rate``, one trial task under Airflow) and ends with the process. A port
already taken is logged once and the view goes without: it never fails a trial. WB_METRICS=off
publishes nothing and opens no port.

Gauges, labelled {slot, host, rating_id}: every series of measure/telemetry.py (`metric_name`:
``workbench_`` + the series in base units, e.g. server_cpu_cores → workbench_server_cpu_cores,
disk_read_iops → workbench_disk_read_ops_per_second, net_rx_Bps →
workbench_net_rx_bytes_per_second, server_mean_ms → workbench_server_mean_seconds), set as each
sample pair arrives (telemetry.Samplers' on_interval: `publisher`) and removed when the trial ends.
Labelled {slot, rating_id}: workbench_trial_number (-1: the warm-up), workbench_trial_running (1
while it runs), workbench_trial_offered_ops_per_second, and once it ended
workbench_trial_achieved_ops_per_second, workbench_trial_mean_seconds, workbench_trial_valid.

The slot's fstress agents (measure/agent.py) serve their own endpoint, `fstress agent
--metrics-addr` (loadgen/cmd/fstress/metrics.go), on 127.0.0.1 of their host, port `agent_port_for`
= the base + 10 + the slot's number (slot1 → 9661): fstress_trial_running,
fstress_offered_ops_per_second, fstress_calls_completed_total, fstress_calls_in_flight,
fstress_send_lag_seconds, … labelled {deployment, rating_id, slot} (`agent_labels`: what a run
request names); the job ``fstress``."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, start_http_server
from prometheus_client.core import CounterMetricFamily

__all__ = [
    "trial",
    "publisher",
    "port_for",
    "view_rating",
    "metric_name",
    "enabled",
    "TrialView",
]

log = logging.getLogger(__name__)

OFF_ENV, PORT_ENV, ADDR_ENV = "WB_METRICS", "WB_METRICS_PORT_BASE", "WB_METRICS_ADDR"
PORT_BASE, ADDR = 9650, "127.0.0.1"
SCRAPED_SLOTS = 5  # Prometheus scrapes slot1..slot5: PORT_BASE+1 .. PORT_BASE+5
AGENT_PORT_OFFSET = 10  # and their fstress agents: PORT_BASE+11 .. PORT_BASE+15
PREFIX = "workbench_"
FINAL_SCRAPE_S = 3.0  # at a trial's end, wait up to this for one more scrape (when one is scraping)
# telemetry's unit suffixes → Prometheus base units (name, factor)
_UNITS = (
    ("_iops", "_ops_per_second", 1.0),
    ("_Bps", "_bytes_per_second", 1.0),
    ("_ms", "_seconds", 1e-3),
    ("_frac", "_ratio", 1.0),
    ("_s", "_per_second", 1.0),
)
_NAME_OK = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
SERIES_LABELS = ("slot", "host", "rating_id")
TRIAL_LABELS = ("slot", "rating_id")
TRIAL_GAUGES = {
    "number": "the trial's number in the rating (-1: the warm-up)",
    "running": "1 while the trial runs, 0 after",
    "offered_ops_per_second": "the trial's offered load",
    "achieved_ops_per_second": "operations completed per second in the measured window "
    "(after the trial)",
    "mean_seconds": "the trial's mean response time (after the trial)",
    "valid": "1 when the trial counts, 0 when invalid (after the trial)",
}


def enabled() -> bool:
    return os.environ.get(OFF_ENV, "").strip().lower() != "off"


def port_base() -> int:
    raw = os.environ.get(PORT_ENV, "").strip()
    if raw.isdigit() and 1 <= int(raw) <= 65535 - 99:
        return int(raw)
    if raw:
        log.warning("live view: %s=%r is not a port number; using %d", PORT_ENV, raw, PORT_BASE)
    return PORT_BASE


def slot_number(slot: str) -> int:
    m = re.search(r"(\d+)$", slot)
    return int(m.group(1)) % 100 if m else 0


def port_for(slot: str) -> int:
    """The slot's endpoint port: the base + the slot's number (slot3 → 9653)."""
    return port_base() + slot_number(slot)


def view_rating(slot: str) -> str:
    """The rating of the slot's view in this process (`trial`); "" before any."""
    view = _views.get(slot)
    return view.rating_id if view is not None else ""


def metric_name(series: str) -> tuple[str, float] | None:
    """(Prometheus name, factor to base units) of a telemetry series; None for a name it cannot
    carry."""
    if not _NAME_OK.fullmatch(series):
        return None
    stem, limit = (
        (series[: -len("_limit")], "_limit") if series.endswith("_limit") else (series, "")
    )
    unit, factor = "", 1.0
    for old, new, f in _UNITS:
        if stem.endswith(old):
            stem, unit, factor = stem[: -len(old)], new, f
            break
    return f"{PREFIX}{stem}{limit}{unit}", factor


class _Scrapes:
    """A collector counting the scrapes of its registry (workbench_live_scrapes_total): a trial's
    end waits for one more, so its last figures reach Prometheus before the process may end."""

    def __init__(self) -> None:
        self.n, self.at = 0, [0.0, 0.0]  # scrapes so far, the times of the last two
        self.cond = threading.Condition()

    def collect(self) -> Iterator[CounterMetricFamily]:
        with self.cond:
            self.n += 1
            self.at = [self.at[1], time.monotonic()]
            self.cond.notify_all()
        yield CounterMetricFamily(
            "workbench_live_scrapes", "scrapes of this endpoint", value=self.n
        )

    def describe(self) -> list[CounterMetricFamily]:  # for the registry: not a scrape
        return [CounterMetricFamily("workbench_live_scrapes", "scrapes of this endpoint")]

    def await_next(self, since: int) -> None:
        """When scraped at least twice since scrape `since` (something scrapes regularly), wait for
        the next scrape: at most twice the last interval, and FINAL_SCRAPE_S."""
        with self.cond:
            n = self.n
            if n - since >= 2:
                bound = min(FINAL_SCRAPE_S, 2 * (self.at[1] - self.at[0]))
                self.cond.wait_for(lambda: self.n > n, bound)


class TrialView:
    """One slot's gauges in this process (its own registry, served on the slot's port)."""

    def __init__(self, slot: str) -> None:
        self.slot, self.rating_id, self.active = slot, "", False
        self.registry = CollectorRegistry(auto_describe=True)
        self.scrapes = _Scrapes()
        self.registry.register(self.scrapes)
        self.trial = {
            k: Gauge(f"{PREFIX}trial_{k}", doc, TRIAL_LABELS, registry=self.registry)
            for k, doc in TRIAL_GAUGES.items()
        }
        self.series: dict[str, tuple[Gauge, float]] = {}
        self.shown: set[tuple[str, str]] = set()  # (series, host) with a value now
        self.lock = threading.Lock()
        self._scrapes_at_begin = 0

    def begin(self, rating_id: str, n: int, load_ops_s: float) -> None:
        with self.lock:
            if rating_id != self.rating_id:  # another rating in this process: its figures go
                for g in self.trial.values():
                    g.clear()
            self.rating_id, self.active = rating_id, True
            self._set("number", n)
            self._set("running", 1)
            self._set("offered_ops_per_second", load_ops_s)
            for k in ("achieved_ops_per_second", "mean_seconds", "valid"):
                with contextlib.suppress(KeyError):
                    self.trial[k].remove(self.slot, self.rating_id)
        self._scrapes_at_begin = self.scrapes.n

    def _set(self, key: str, value: float) -> None:
        self.trial[key].labels(self.slot, self.rating_id).set(float(value))

    def publish(self, host: str, row: Mapping[str, Any]) -> None:
        """One interval's series (telemetry's names and units) as gauges of `host`."""
        with self.lock:
            if not self.active:
                return
            for key, value in row.items():
                gauge = self._gauge(key)
                if gauge is None:
                    continue
                g, factor = gauge
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    g.labels(self.slot, host, self.rating_id).set(float(value) * factor)
                    self.shown.add((key, host))
                elif (key, host) in self.shown:  # no value this interval (e.g. no limit)
                    g.remove(self.slot, host, self.rating_id)
                    self.shown.discard((key, host))

    def _gauge(self, key: str) -> tuple[Gauge, float] | None:
        if key not in self.series:
            named = metric_name(key) if key != "t_s" else None
            if named is None:
                return None
            name, factor = named
            self.series[key] = (
                Gauge(
                    name,
                    f"telemetry series {key} (measure/telemetry.py) per interval, in base units",
                    SERIES_LABELS,
                    registry=self.registry,
                ),
                factor,
            )
        return self.series[key]

    def done(self, achieved_ops_s: float, mean_ms: float, valid: bool) -> None:
        """The trial's result, published at once (before its end waits for a scrape)."""
        with self.lock:
            self._set("achieved_ops_per_second", achieved_ops_s)
            self._set("mean_seconds", mean_ms / 1000.0)
            self._set("valid", 1 if valid else 0)
            self._set("running", 0)

    def end(self) -> None:
        """running 0; when Prometheus scraped during the trial, one more scrape awaited (bounded:
        `_Scrapes.await_next`); then the interval series removed (the next trial starts afresh)."""
        with self.lock:
            self._set("running", 0)
        self.scrapes.await_next(self._scrapes_at_begin)
        with self.lock:
            self.active = False
            for key, host in self.shown:
                self.series[key][0].remove(self.slot, host, self.rating_id)
            self.shown.clear()


_views: dict[str, TrialView] = {}
_servers: dict[
    tuple[int, str], Any
] = {}  # (pid, slot) → the HTTP server, or None: its port was taken
_lock = threading.Lock()


def _view(slot: str) -> TrialView:
    """The slot's view, its endpoint started on first use in this process."""
    with _lock:
        view = _views.get(slot)
        if view is None:
            view = _views[slot] = TrialView(slot)
        key = (os.getpid(), slot)  # a forked process serves its own endpoint
        if key not in _servers:
            addr, port = os.environ.get(ADDR_ENV, "").strip() or ADDR, port_for(slot)
            try:
                _servers[key] = start_http_server(port, addr, registry=view.registry)[0]
            except OSError as e:
                _servers[key] = None
                log.warning(
                    "live view: no endpoint for %s on %s:%d (%s); the trials go on without it",
                    slot,
                    addr,
                    port,
                    e.strerror or e,
                )
        return view


class _Done:
    """What `trial` yields: `done(achieved_ops_s, mean_ms, valid)` publishes the trial's result, if
    anywhere (WB_METRICS=off or a failed view: nowhere); it never raises."""

    def __init__(self, view: TrialView | None) -> None:
        self.view = view

    def done(self, achieved_ops_s: float, mean_ms: float, valid: bool) -> None:
        if self.view is not None:
            try:
                self.view.done(achieved_ops_s, mean_ms, valid)
            except Exception as e:  # noqa: BLE001 — the live view never fails a trial
                log.warning("live view: %s: %s: %s", self.view.slot, type(e).__name__, e)


@contextlib.contextmanager
def trial(slot: str, rating_id: str, n: int, load_ops_s: float) -> Iterator[_Done]:
    """Around one trial: its figures published on the slot's endpoint (nowhere when WB_METRICS=off).
    Nothing here raises into the trial (a failure is logged)."""
    view = None
    if enabled():
        try:
            view = _view(slot)
            view.begin(rating_id, n, load_ops_s)
        except Exception as e:  # noqa: BLE001 — the live view never fails a trial
            log.warning("live view: %s: %s: %s", slot, type(e).__name__, e)
            view = None
    try:
        yield _Done(view)
    finally:
        if view is not None:
            try:
                view.end()
            except Exception as e:  # noqa: BLE001
                log.warning("live view: %s: %s: %s", slot, type(e).__name__, e)


def publisher(slot: str) -> Callable[[str, Mapping[str, Any]], None] | None:
    """telemetry.Samplers' on_interval for a trial on `slot`: its series onto the slot's view while
    a `trial` runs there (None when WB_METRICS=off)."""
    if not enabled():
        return None

    def on_interval(host: str, row: Mapping[str, Any]) -> None:
        view = _views.get(slot)
        if view is not None:
            try:
                view.publish(host, row)
            except Exception as e:  # noqa: BLE001 — logged, never raised into the sampler's reader
                log.warning("live view: %s/%s: %s: %s", slot, host, type(e).__name__, e)

    return on_interval


def stop_endpoints() -> None:
    """Close this process's endpoints and forget the views (tests)."""
    with _lock:
        for (pid, _), server in list(_servers.items()):
            if server is not None and pid == os.getpid():
                server.shutdown()
                server.server_close()
        _servers.clear()
        _views.clear()
