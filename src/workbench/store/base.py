"""The results store: what a rating, a sweep and a night keep, under keys the store builds.

Layout: keys follow from validated ids, so a retried task rewrites the same object; the methods of
`store.layout.StoreLayout`, the base of `Store`, build every one: nothing outside the store spells
an object name.

`Store` holds the layout and everything built on six primitives (put_bytes, create_bytes,
get_bytes, exists, list_keys, delete_prefix) that each backend implements: `ResultsStore` on
S3/MinIO (``store.s3``, transient failures retried for a bounded time) and `LocalStore` on
a directory (``store.local``).

Trial objects are written once (`put_trial`): a retry that writes the same record again is a no-op,
a different second record for the same trial is refused (`TrialConflict`) — the stored one may
already have been read by the controller's next decision.
"""

from __future__ import annotations

import io
import json
import logging
import mimetypes
import posixpath
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.config.external import server_key
from workbench.controller.trial import steady_verdict
from workbench.store.layout import StoreLayout, check_key

JSON_TYPE = "application/json"
PARQUET_TYPE = "application/vnd.apache.parquet"
CSV_TYPE = "text/csv; charset=utf-8"
_TYPES = {
    ".parquet": PARQUET_TYPE,
    ".jsonl": "application/x-ndjson",
    ".json": JSON_TYPE,
    ".csv": CSV_TYPE,
}
_TRIAL = re.compile(r"(\d{5,})\.json")

log = logging.getLogger("workbench.store")


class StoreError(RuntimeError):
    """The store cannot be reached or refuses us; the message names endpoint and bucket."""


class NotFound(StoreError, KeyError):
    """No object under that key."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class TrialConflict(StoreError):
    """A different record is already stored for this trial: the write was refused. `stored` is the
    record in the store (the one to use), `record` the refused one."""

    def __init__(self, message: str, key: str, stored: dict, record: dict) -> None:
        super().__init__(message)
        self.key, self.stored, self.record = key, stored, record


MISSING: Any = object()


def _json_default(o: Any) -> Any:
    if hasattr(o, "tolist"):  # numpy arrays and scalars
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


def encode_json(obj: Any) -> bytes:
    """The one JSON encoding of the store (sorted keys, UTF-8): equal records, equal bytes."""
    return json.dumps(
        obj, sort_keys=True, indent=1, ensure_ascii=False, default=_json_default
    ).encode("utf-8")


class Store(StoreLayout, ABC):
    """The layout and the JSON/Parquet views over a backend's five primitives."""

    @abstractmethod
    def put_bytes(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> str:
        """Write (or overwrite) one object; returns the key."""

    @abstractmethod
    def create_bytes(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> bool:
        """Write one object only if no object has that key (atomically: of two writers exactly one
        creates it). True if this call created it, False if an object was there already."""

    @abstractmethod
    def get_bytes(self, key: str, default: Any = MISSING) -> bytes:
        """The object's content; NotFound (a KeyError) if absent and no default is given."""

    @abstractmethod
    def exists(self, key: str) -> bool: ...

    @abstractmethod
    def list_keys(self, prefix: str = "") -> list[str]:
        """All keys under `prefix`, sorted."""

    @abstractmethod
    def delete_prefix(self, prefix: str) -> int:
        """Delete every object under `prefix` (not empty); returns how many."""

    @abstractmethod
    def url(self, key: str) -> str:
        """Where a person finds the object (s3://bucket/key, or a file path)."""

    def ensure_bucket(self) -> None:  # noqa: B027 (a hook: a store with nothing to make keeps it)
        """Make the store usable (create the bucket or directory); fails naming where."""

    @staticmethod
    def link(from_key: str, to_key: str) -> str:
        """The href from the object `from_key` (a report) to `to_key`: relative, so it resolves
        wherever the bucket is served or mirrored (`mc mirror`, a MinIO browser path, a local
        copy)."""
        return posixpath.relpath(check_key(to_key), posixpath.dirname(check_key(from_key)) or ".")

    # -- JSON ----------------------------------------------------------------------------
    def put_json(self, key: str, obj: Any) -> str:
        return self.put_bytes(key, encode_json(obj), JSON_TYPE)

    def put_file(self, key: str, path: str | Path, content_type: str | None = None) -> str:
        ctype = (
            content_type
            or _TYPES.get(Path(path).suffix)
            or mimetypes.guess_type(str(path))[0]
            or "application/octet-stream"
        )
        return self.put_bytes(key, Path(path).read_bytes(), ctype)

    def get_json(self, key: str, default: Any = MISSING) -> Any:
        data = self.get_bytes(key, default=None if default is not MISSING else MISSING)
        if data is None:
            return default
        try:
            return json.loads(data.decode("utf-8"))
        except ValueError as e:
            raise StoreError(f"{self.url(key)} is not valid JSON: {e}") from None

    # -- listings of the layout's objects
    def sample_keys(self, sweep_id: str) -> list[str]:
        """The sweep's rated samples, in key order."""
        return [
            k for k in self.list_keys(self.surface_key(sweep_id, "samples/")) if k.endswith(".json")
        ]

    def round_keys(self, sweep_id: str) -> list[str]:
        """The sweep's round decisions, in key order."""
        return sorted(
            k for k in self.list_keys(self.surface_key(sweep_id, "rounds/")) if k.endswith(".json")
        )

    def baseline_nights(self, name: str) -> list[tuple[str, str]]:
        """(night, key) of every night that stored baseline `name`'s record, in key order."""
        out = []
        for key in sorted(self.list_keys("nightly/")):
            parts = key.split("/")
            if len(parts) == 3 and parts[2] == f"{name}.json":
                out.append((parts[1], key))
        return out

    def put_trial(self, rating_id: str, n: int, record: Mapping[str, Any]) -> str:
        """Store trial n of a rating, once. Returns the key.

        The object is created only if absent. If it exists with the same record (every field
        compared: a retry after a write whose answer was lost) that is success; a different
        record is refused — logged in one line and raised as TrialConflict carrying the stored
        record, which the caller must use instead."""
        key = self.trial_key(rating_id, n)
        if record.get("n", n) != n:
            raise ValueError(f"trial record says n={record['n']} but is stored as trial {n}")
        data = encode_json({**record, "n": n})
        if self.create_bytes(key, data, JSON_TYPE):
            return key
        stored_bytes = self.get_bytes(key)
        if stored_bytes == data:
            return key
        new = json.loads(data)
        try:
            stored = json.loads(stored_bytes.decode("utf-8"))
        except ValueError as e:
            raise StoreError(f"{self.url(key)} is not valid JSON: {e}") from None
        if encode_json(stored) == data:  # the same record, encoded by another version
            return key
        if not isinstance(stored, dict):
            stored = {"(stored)": stored}
        fields = sorted(
            k for k in set(stored) | set(new) if stored.get(k, MISSING) != new.get(k, MISSING)
        )
        msg = (
            f"trial {n} of {rating_id}: refused a second, different record for {self.url(key)} "
            f"(differs in {', '.join(fields) or 'encoding'}); the stored record stands"
        )
        log.error(msg)
        raise TrialConflict(msg, key, stored, new)

    def trials(self, rating_id: str) -> list[dict]:
        """The rating's trial records ordered by n."""
        prefix = self.trials_prefix(rating_id)
        found = [
            (int(m.group(1)), k)
            for k in self.list_keys(prefix)
            if (m := _TRIAL.fullmatch(k[len(prefix) :]))
        ]
        return [self.get_json(k) for _, k in sorted(found)]

    def trials_df(self, rating_id: str, ops: bool = False):
        """One row per trial: the scalar fields (n, decision, mean_ms, ...), `raw` dropped.

        host_steal_pct is fstress's steal share of the load host's CPU time in the measured window
        (the worst load host; None where unknown). timeseries is raw["timeseries"]
        (measure.timeseries, the compact per-interval series) as a JSON string, outstanding_at_stop
        its backlog when sending stopped (None for trials without a series), steady the trial's
        steady-state verdict (stats.steady), drain_s the server's drain before the trial
        (TrialResult.drain_s; None when not probed or recorded before the probe). With ops=True,
        per-operation scalars of raw["ops"] become columns op_<op>_<field>."""
        import pandas as pd

        rows = []
        for rec in self.trials(rating_id):
            row = {k: v for k, v in rec.items() if k != "raw" and not isinstance(v, (dict, list))}
            raw = rec.get("raw") or {}
            row["host_steal_pct"] = raw.get("host_steal_pct")
            ts = raw.get("timeseries")
            row["outstanding_at_stop"] = ts.get("outstanding_at_stop") if ts else None
            row["timeseries"] = json.dumps(ts, sort_keys=True) if ts else None
            row["steady"] = steady_verdict(rec)
            row["drain_s"] = rec.get("drain_s")
            raw_ops = raw.get("ops") or {}
            if ops:
                for op, stats in sorted(raw_ops.items()):
                    row.update(
                        {
                            f"op_{op}_{f}": v
                            for f, v in stats.items()
                            if not isinstance(v, (dict, list)) and f != "histogram"
                        }
                    )
            rows.append(row)
        df = pd.DataFrame(rows)
        first = [c for c in ("n", "decision") if c in df.columns]
        return df[first + [c for c in df.columns if c not in first]]

    def write_trials_parquet(self, rating_id: str) -> str:
        """trials_df as ratings/<id>/trials.parquet; returns the key."""
        buf = io.BytesIO()
        self.trials_df(rating_id).to_parquet(buf, index=False, engine="pyarrow")
        return self.put_bytes(self.trials_parquet_key(rating_id), buf.getvalue(), PARQUET_TYPE)

    def ratings_df(self, prefix: str = "ratings/"):
        """One row per rating with a result.json: its result, workload and spec factors."""
        import pandas as pd

        rows = []
        for key in self.list_keys(prefix):
            rest = key[len(prefix) :].split("/")
            if len(rest) != 2 or rest[1] != "result.json":
                continue
            rid = rest[0]
            res = self.get_json(key)
            spec = self.get_json(f"{prefix}{rid}/spec.json", default={}) or {}
            lo, hi = (res.get("bracket") or [None, None])[:2]
            ci_lo, ci_hi = (res.get("peak_rate_ci") or [None, None])[:2]
            row = {
                "rating_id": rid,
                "peak_rate": res.get("peak_rate"),
                "converged": res.get("converged"),
                "bracket_lo": lo,
                "bracket_hi": hi,
                "ci_lo": ci_lo,
                "ci_hi": ci_hi,
                "n_trials": res.get("n_trials"),
                "cost_s": res.get("cost_s"),
                "mean_ms_at_peak": res.get("mean_ms_at_peak"),
                "r_sat_ms": res.get("r_sat_ms"),
                "reason": res.get("reason"),
                "workload": spec.get("workload"),
                "workload_text": spec.get("workload_text") or "",
                "profile": spec.get("profile"),
                "server": server_key(spec.get("external")),
            }
            for f, v in {
                **(spec.get("factors") or {}),
                **(spec.get("workload_factors") or {}),
            }.items():
                row.setdefault(f, v)
            rows.append(row)
        return pd.DataFrame(rows)
