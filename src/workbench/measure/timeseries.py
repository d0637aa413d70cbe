"""fstress's per-interval time series (`series` in its JSON) → a compact form stored with a trial.

fstress (`--interval`, loadgen/internal/results/series.go) counts every call in the interval of its
intended send time k = ⌊(t_i − warm-up) / interval⌋ (k < 0: warm-up, t_s < 0); per interval:
calls sent, finished (`count`), errors, timeouts, the exact sums of the replies' latencies and an
HDR histogram (µs) in the whole run's encoding. Merging load hosts is exact: counts and sums add,
histograms add bucket by bucket, interval by interval (k). `fstress merge` does it; `merge_series`
does the same here for hosts' own results.

The compact form (`compact`), columns of equal length, one entry per interval:
  t_s      interval start, s from the start of the measured window (negative: warm-up)
  ops      calls finished (replies + errors + timeouts) of those intended in the interval
  mean_ms  Σ latency / replies (exact sums; None without replies)
  p95_ms   from the merged histogram, HDR's rule: the highest value equivalent to the bucket where
           the cumulative count first reaches ⌊0.95·n + 0.5⌋ (as fstress's p95_ms); None without
           replies
  errors   errors + timeouts
plus interval_s and outstanding_at_stop (calls in flight when sending stopped) with stop_replied,
stop_errors, stop_timeouts (how those ended).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

STOP_KEYS = ("outstanding_at_stop", "stop_replied", "stop_errors", "stop_timeouts")


class SeriesError(ValueError):
    """A series that cannot be merged (different intervals, inconsistent histogram)."""


def _decode(b64: str):
    from hdrh.histogram import HdrHistogram

    return HdrHistogram.decode(b64)


def _counts(h) -> np.ndarray:
    return np.array(h.counts[: h.counts_len], dtype=np.int64)


class _Acc:
    """One interval's merged totals: counts, exact sums and histogram bucket counts."""

    def __init__(self, k: int, t_s: float, len_s: float) -> None:
        self.k, self.t_s, self.len_s = k, t_s, len_s
        self.count = self.errors = self.timeouts = self.n = self.sum_ns = 0
        self.buckets: np.ndarray | None = None
        self.geometry: Any = None  # a decoded HdrHistogram (untyped): value of a bucket index

    def add(self, iv: Mapping[str, Any]) -> None:
        exact = iv.get("exact") or {}
        self.count += int(iv.get("count", 0))
        self.errors += int(iv.get("errors", 0))
        self.timeouts += int(iv.get("timeouts", 0))
        self.n += int(exact.get("n", 0))
        self.sum_ns += int(exact.get("sum_ns", 0))
        if not iv.get("histogram"):
            return
        h = _decode(iv["histogram"])
        if h.get_total_count() != int(exact.get("n", 0)):
            raise SeriesError(
                f"interval {self.k}: histogram holds {h.get_total_count()} values, "
                f"exact count {exact.get('n', 0)}"
            )
        c = _counts(h)
        self.buckets = c if self.buckets is None else self.buckets + c
        self.geometry = self.geometry or h

    def p95_ms(self) -> float | None:
        if self.buckets is None or self.geometry is None or self.n == 0:
            return None  # (buckets and geometry are set together)
        rank = max(int(0.95 * self.n + 0.5), 1)  # HDR: nearest rank, at least 1
        idx = int(np.searchsorted(np.cumsum(self.buckets), rank))
        g = self.geometry
        return g.get_highest_equivalent_value(g.get_value_from_index(idx)) / 1e3


def merge_series(series: Iterable[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """The exact merge of several hosts' `series` objects, as compact columns (see module doc);
    None when any host has none (an fstress without --interval)."""
    given = list(series)
    hosts = [s for s in given if s]
    if not hosts or len(hosts) < len(given):
        return None
    step = hosts[0].get("interval_s")
    accs: dict[int, _Acc] = {}
    stop = dict.fromkeys(STOP_KEYS, 0)
    for s in hosts:
        if s.get("interval_s") != step:
            raise SeriesError(f"interval_s {step} and {s.get('interval_s')} differ")
        for key in STOP_KEYS:
            stop[key] += int(s.get(key, 0))
        for iv in s.get("intervals") or []:
            k = int(iv["k"])
            acc = accs.setdefault(k, _Acc(k, float(iv["t_s"]), float(iv["len_s"])))
            acc.t_s = min(acc.t_s, float(iv["t_s"]))
            acc.add(iv)
    ordered = [accs[k] for k in sorted(accs)]
    return {
        "interval_s": step,
        **stop,
        "t_s": [a.t_s for a in ordered],
        "ops": [a.count for a in ordered],
        "mean_ms": [a.sum_ns / a.n / 1e6 if a.n else None for a in ordered],
        "p95_ms": [a.p95_ms() for a in ordered],
        "errors": [a.errors + a.timeouts for a in ordered],
    }


def compact(
    raw: Mapping[str, Any], parts: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any] | None:
    """The compact series of a trial: from the merged result's `series` (fstress merge), else the
    exact merge of the load hosts' own results `parts`; None when there is none."""
    if raw.get("series"):
        return merge_series([raw["series"]])
    if parts:
        return merge_series(p.get("series") for p in parts.values())
    return None
