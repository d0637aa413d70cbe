"""great_expectations suite for one rating's batch of trial records (issue 5, point 5).

`validate_trials(records)` builds one DataFrame row per trial record (the shape in the issue-5
contract: ``TrialResult.to_dict()`` + ``n`` + ``decision``) and checks it with a GX 1.x
expectation suite on an ephemeral context:

* trial id ``n`` present, unique and ≥ 0;
* ``mean_ms`` and ``p95_ms`` ≥ 0;
* on trials the harness accepted (``valid``): achieved / offered rate ≥ ``min_achieved_fraction``
  (SPEC SFS's rule), mix error ≤ ``max_mix_error_pp`` percentage points
  (100·max_op |mix_actual − mix_target|), error rate ≤ ``max_error_rate``.

A trial whose only failed check is the achieved fraction is not excluded but listed in ``short``: it
measured the server past its capacity, the controller's evidence of saturation (its completions
test, controller/certify.py, allows for Poisson noise); excluding it would take back the upper end
of the λ* interval the rating stopped on.

Trials the harness already marked invalid are excluded with the harness's own reason (verbatim) and
are not re-judged on rate, mix or errors. A failing trial is excluded with a reason naming each
failed check; ``excluded`` maps trial n → reason. A record without a usable n gets the key
−(position+1).

Harness failures (``harness_failure`` / ``outcome`` "harness": the trial measured nothing of the
server) are no server trial: never judged, never counted as excluded; ``harness`` maps their n →
reason and ``n_checked`` counts the server's trials only. Their ids still take part in the id
checks.

Error rate = errors / ops_total. Timeouts in a trial the harness accepted as "overloaded" (a
server above its peak, see workbench.measure.trialjson.result_from_json) are not counted, only NFS
errors.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import pandas as pd

from workbench.controller.trial import record_outcome

__all__ = ["TrialValidation", "validate_trials", "trials_frame", "is_harness_failure"]

logging.getLogger("great_expectations").setLevel(logging.WARNING)

_SHORT = "gx: achieved "  # the reason of a trial that completed fewer operations than offered
_VALID_ONLY = "harness_valid == True"  # the GX row_condition below, as shown in the summary


def is_harness_failure(rec: Mapping[str, Any]) -> bool:
    """A trial record of a harness failure (TrialResult.harness_failure): no sample of the
    server."""
    return record_outcome(rec) == "harness"


@dataclass(frozen=True)
class TrialValidation:
    success: bool
    excluded: dict[int, str]  # trial n → human reason (the server's trials)
    n_checked: int  # the server's trials (harness failures not counted)
    gx: dict[str, Any] = field(default_factory=dict)  # JSON-serialisable summary of the GX result
    elapsed_s: float = 0.0
    # harness failures: n → reason, not judged
    harness: dict[int, str] = field(default_factory=dict)
    short: dict[int, str] = field(default_factory=dict)  # failed only the achieved fraction: kept

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "excluded": {str(k): v for k, v in self.excluded.items()},
            "n_checked": self.n_checked,
            "gx": self.gx,
            "elapsed_s": self.elapsed_s,
            "harness": {str(k): v for k, v in self.harness.items()},
            "short": {str(k): v for k, v in self.short.items()},
        }


# ----------------------------------------------------------------------------- the frame


def _num(x: Any) -> float:
    """A finite float or NaN (None, strings, bools and infinities → NaN)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return math.nan
    return float(x) if math.isfinite(x) else math.nan


def _trial_id(x: Any) -> float:
    """The trial id as a float for GX (NaN unless an integral number)."""
    v = _num(x)
    return v if math.isnan(v) or v.is_integer() else math.nan


def _mix_error_pp(raw: Mapping[str, Any] | None) -> float:
    """100 · max over ops of |mix_actual − mix_target| (an op missing on one side counts as 0)."""
    if not raw or not raw.get("mix_target") or raw.get("mix_actual") is None:
        return math.nan
    target, actual = raw["mix_target"], raw["mix_actual"]
    ops = set(target) | set(actual)
    return 100.0 * max(abs(float(actual.get(op, 0.0)) - float(target.get(op, 0.0))) for op in ops)


def _error_rate(rec: Mapping[str, Any]) -> float:
    raw = rec.get("raw") or {}
    errors = _num(rec.get("errors"))
    if str(rec.get("reason") or "").startswith("overloaded") and "errors" in raw:
        errors = _num(raw.get("errors"))  # harness-accepted timeouts of an overloaded server
    errors = 0.0 if math.isnan(errors) else errors
    ops = _num(rec.get("ops_total"))
    if math.isnan(ops):
        ops = _num(raw.get("ops_total"))
    if not ops or math.isnan(ops):
        return 0.0 if errors == 0 else 1.0  # errors but no operation counted: all failed
    return errors / ops


def _offered_ops_s(rec: Mapping[str, Any]) -> float:
    raw = rec.get("raw") or {}
    offered = _num(raw.get("offered_rate"))
    return offered if offered > 0 else _num(rec.get("load_ops_s"))


def trials_frame(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per trial record: the columns the suite checks (plus ``row`` = position)."""
    rows = []
    for row, rec in enumerate(records):
        offered = _offered_ops_s(rec)
        achieved = _num(rec.get("achieved_rate"))
        rows.append(
            {
                "row": row,
                "n": _trial_id(rec.get("n")),
                "load_ops_s": _num(rec.get("load_ops_s")),
                "achieved_rate": achieved,
                "mean_ms": _num(rec.get("mean_ms")),
                "p95_ms": _num(rec.get("p95_ms")),
                "errors": _num(rec.get("errors")),
                "ops_total": _num(rec.get("ops_total")),
                "error_rate": _error_rate(rec),
                "achieved_fraction": achieved / offered if offered and offered > 0 else math.nan,
                "mix_error_pp": _mix_error_pp(rec.get("raw")),
                "harness_valid": bool(rec.get("valid", True)),
            }
        )
    cols = [
        "row",
        "n",
        "load_ops_s",
        "achieved_rate",
        "mean_ms",
        "p95_ms",
        "errors",
        "ops_total",
        "error_rate",
        "achieved_fraction",
        "mix_error_pp",
        "harness_valid",
    ]
    return pd.DataFrame(rows, columns=cols)


# ----------------------------------------------------------------------------- the GX objects


@lru_cache(maxsize=1)
def _batch_definition():
    """Ephemeral context → pandas datasource → dataframe asset → whole-frame batch definition
    (cached: one per process)."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    asset = ctx.data_sources.add_pandas("workbench_trials").add_dataframe_asset("trials")
    return asset.add_batch_definition_whole_dataframe("batch")


@lru_cache(maxsize=16)
def _suite(min_achieved_fraction: float, max_mix_error_pp: float, max_error_rate: float):
    import great_expectations as gx
    from great_expectations.expectations.row_conditions import Column

    _batch_definition()  # a suite needs an active context
    E = gx.expectations
    valid = Column("harness_valid") == True  # noqa: E712 (builds a GX condition)
    suite = gx.ExpectationSuite(name="workbench_trials")
    for e in (
        E.ExpectColumnValuesToNotBeNull(column="n"),
        E.ExpectColumnValuesToBeUnique(column="n"),
        E.ExpectColumnValuesToBeBetween(column="n", min_value=0),
        E.ExpectColumnValuesToBeBetween(column="mean_ms", min_value=0),
        E.ExpectColumnValuesToBeBetween(column="p95_ms", min_value=0),
        E.ExpectColumnValuesToNotBeNull(column="mean_ms", row_condition=valid),
        E.ExpectColumnValuesToNotBeNull(column="achieved_fraction", row_condition=valid),
        E.ExpectColumnValuesToBeBetween(
            column="achieved_fraction", min_value=min_achieved_fraction, row_condition=valid
        ),
        E.ExpectColumnValuesToBeBetween(
            column="mix_error_pp", max_value=max_mix_error_pp, row_condition=valid
        ),
        E.ExpectColumnValuesToBeBetween(
            column="error_rate", max_value=max_error_rate, row_condition=valid
        ),
    ):
        suite.add_expectation(e)
    return suite


# ----------------------------------------------------------------------------- reasons


def _fmt(v: Any) -> str:
    return "missing" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4g}"


def _reason(etype: str, column: str | None, value: Any, kw: Mapping[str, Any], row: int) -> str:
    """One human sentence fragment for a failed expectation on one row (record `row` of the
    batch)."""
    if column == "n":
        if etype == "expect_column_values_to_not_be_null":
            return f"gx: trial id n missing or not a number (record {row} of the batch)"
        if etype == "expect_column_values_to_be_unique":
            return f"gx: duplicate trial id n={_fmt(value)}"
        return f"gx: trial id n={_fmt(value)} is negative (record {row} of the batch)"
    if etype == "expect_column_values_to_not_be_null":
        return f"gx: {column} missing"
    if column == "achieved_fraction":
        return f"{_SHORT}{_fmt(value)} of offered < {kw['min_value']:g}"
    if column == "mix_error_pp":
        return f"gx: op mix off target by {_fmt(value)} pp > {kw['max_value']:g} pp"
    if column == "error_rate":
        return f"gx: error rate {_fmt(value)} > {kw['max_value']:g}"
    return f"gx: {column} {_fmt(value)} < 0"


def _plain(v: Any) -> Any:
    """numpy scalars / NaN → JSON-safe Python values."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float):
        if not math.isfinite(v):
            return None
        return int(v) if v.is_integer() else v
    return v


def _exception_message(info: Any) -> str | None:
    """GX's exception_info is {raised_exception, exception_message, ...} or a dict of those."""
    if not isinstance(info, dict):
        return None
    if "raised_exception" in info:
        return str(info.get("exception_message")) if info.get("raised_exception") else None
    msgs = [m for m in (_exception_message(v) for v in info.values()) if m]
    return "; ".join(msgs) or None


def _marked_by_harness(
    records: Sequence[Mapping[str, Any]], keys: Mapping[int, int]
) -> tuple[dict[int, list[str]], dict[int, str]]:
    """What the harness already said, by trial key: the reasons of the trials it marked invalid
    (excluded with its own reason, not re-judged), and its failures (no trial of the server)."""
    reasons: dict[int, list[str]] = {}
    harness: dict[int, str] = {}
    for row, rec in enumerate(records):
        if is_harness_failure(rec):
            harness[keys[row]] = str(rec.get("reason") or "harness failure")
        elif not rec.get("valid", True):
            reason = str(rec.get("reason") or "harness marked the trial invalid")
            reasons.setdefault(keys[row], []).append(reason)
    return reasons, harness


def _expectation(r: Any, keys: Mapping[int, int], reasons: dict[int, list[str]]) -> dict[str, Any]:
    """One expectation's result (GX's ExpectationValidationResult) as a plain record; the reason of
    each row it failed goes to `reasons` under the row's trial key."""
    cfg = r.expectation_config
    kw = {k: v for k, v in cfg.kwargs.items() if k not in ("batch_id", "result_format")}
    if "row_condition" in kw:
        kw["row_condition"] = _VALID_ONLY
    column = kw.get("column")
    idx = (r.result or {}).get("unexpected_index_list") or []
    bad_n = []
    for item in idx:
        row = int(item["row"])
        bad_n.append(keys[row])
        reasons.setdefault(keys[row], []).append(
            _reason(cfg.type, column, item.get(column), kw, row)
        )
    return {
        "type": cfg.type,
        "kwargs": {k: _plain(v) for k, v in kw.items()},
        "success": bool(r.success),
        "unexpected_count": int((r.result or {}).get("unexpected_count") or 0),
        "unexpected_n": bad_n,
        "exception": _exception_message(r.exception_info),
    }


# ----------------------------------------------------------------------------- entry point


def validate_trials(
    records: Iterable[Mapping[str, Any]],
    *,
    min_achieved_fraction: float = 0.95,
    max_mix_error_pp: float = 2.0,
    max_error_rate: float = 0.0,
) -> TrialValidation:
    """Run the suite on a batch of trial records; see the module docstring."""
    t0 = time.perf_counter()
    records = list(records)
    df = trials_frame(records)
    keys = {
        row: (int(n) if math.isfinite(n) and float(n).is_integer() else -(row + 1))
        for row, n in zip(df["row"], df["n"])
    }
    reasons, harness = _marked_by_harness(records, keys)
    expectations: list[dict[str, Any]] = []
    success = True
    if len(df):
        suite = _suite(float(min_achieved_fraction), float(max_mix_error_pp), float(max_error_rate))
        batch = _batch_definition().get_batch(batch_parameters={"dataframe": df})
        res = batch.validate(
            suite,
            result_format={
                "result_format": "COMPLETE",
                "unexpected_index_column_names": ["row", "n"],
            },
        )
        success = bool(res.success)
        expectations = [_expectation(r, keys, reasons) for r in res.results]
    excluded = {k: "; ".join(dict.fromkeys(v)) for k, v in sorted(reasons.items())}
    short = {k: v for k, v in excluded.items() if all(r.startswith(_SHORT) for r in reasons[k])}
    gx_summary = {
        "suite": "workbench_trials",
        "success": success,
        "n_trials": int(len(df)),
        "n_harness": len(harness),
        "thresholds": {
            "min_achieved_fraction": float(min_achieved_fraction),
            "max_mix_error_pp": float(max_mix_error_pp),
            "max_error_rate": float(max_error_rate),
        },
        "expectations": expectations,
    }
    return TrialValidation(
        success=success,
        excluded={k: v for k, v in excluded.items() if k not in short},
        short=short,
        n_checked=int(len(df)) - len(harness),
        gx=gx_summary,
        elapsed_s=round(time.perf_counter() - t0, 4),
        harness=dict(sorted(harness.items())),
    )
