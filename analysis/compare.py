"""Compare two ratings (before/after a setting change): B's λ* against A's — the change with its CI,
Welch's test on the trials at a common load, the verdict in words and an HTML page.

The statistics are the nightly job's (findings.regression.compare_to_history) with A as the baseline
(one rating): d = λ*_B − λ*_A, CI d ± q·√(se_A² + se_B²) with se from each λ* CI; Welch's
one-sided test on the per-trial means within 10 % of A's measured load nearest its λ*.

A rating is named by its id (in a local results directory, else in the S3 store of the
environment), by `s3://bucket/ratings/<id>/`, or by a local directory `…/ratings/<id>`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analysis.comparison import compare_png, comparison_html
from workbench.findings.regression import compare_to_history
from workbench.params.plan import ParamError
from workbench.pipeline.nightly import nightly_rating
from workbench.store.base import Store
from workbench.store.local import LocalStore, rating_in_dir
from workbench.store.s3 import ResultsStore, S3Config, open_store, rating_at_url


def open_rating(ref: str, results: str | Path | None = None) -> tuple[Store, str]:
    """(store, rating id) of a rating reference (see the module docstring)."""
    if ref.startswith("s3://"):
        at = rating_at_url(ref)
        if at is None:
            raise ParamError(f"{ref}: an S3 rating is s3://<bucket>/ratings/<rating id>/")
        return ResultsStore(dataclasses.replace(S3Config.resolve(), bucket=at[0])), at[1]
    local = rating_in_dir(ref)
    if local is not None:
        return local
    if "/" in ref or not ref:
        raise ParamError(
            f"{ref!r}: not a rating id, an s3://<bucket>/ratings/<id>/ URL "
            f"or an existing …/ratings/<id> directory"
        )
    return (LocalStore(results) if results is not None else open_store()), ref


def load_rating(store: Store, rating_id: str) -> dict[str, Any]:
    """The finished rating as findings.regression and the page want it."""
    result = store.get_json(store.result_key(rating_id), None)
    if result is None:
        raise ParamError(
            f"{store.url(store.rating_prefix(rating_id))}: no result.json there "
            f"(no such rating, or it has not finished)"
        )
    return {
        **nightly_rating(store, rating_id, result),
        "rating_id": rating_id,
        "report_url": store.url(store.rating_report_key(rating_id)),
    }


def compare_ratings(
    a: Mapping[str, Any], b: Mapping[str, Any], tolerance: float = 0.10, confidence: float = 0.95
) -> dict[str, Any]:
    """The verdict of B against A and the comparison page."""
    if not (0.0 < confidence < 1.0) or not (0.0 <= tolerance < 1.0):
        raise ParamError(
            f"confidence must be in (0, 1) and tolerance in [0, 1); got {confidence!r}, "
            f"{tolerance!r}"
        )
    if not a["result"].get("converged"):
        raise ParamError(
            f"A ({a['rating_id']}) did not converge ({a['result'].get('reason')}): "
            f"it has no λ* to compare against"
        )
    v = compare_to_history(
        b, [a], tolerance=tolerance, confidence=confidence, current_name="B"
    ).to_dict()
    v.update(a=a["rating_id"], b=b["rating_id"], word=verdict_word(v))
    html = comparison_html(a, b, v, {"latency_vs_load_A_B.png": compare_png(a, b, confidence)})
    return {"verdict": v, "html": html}


def verdict_word(v: Mapping[str, Any]) -> str:
    if v.get("regression"):
        return "REGRESSION"
    if v.get("improvement"):
        return "IMPROVEMENT"
    return "NO VERDICT" if v.get("inconclusive") else "NO SIGNIFICANT CHANGE"


def publish(store: Store, comparison: Mapping[str, Any]) -> str:
    """verdict.json and report.html under comparisons/<A>__vs__<B>/; returns the report's URL."""
    v = comparison["verdict"]
    store.put_json(store.comparison_verdict_key(v["a"], v["b"]), v)
    key = store.comparison_report_key(v["a"], v["b"])
    store.put_bytes(key, comparison["html"].encode(), "text/html; charset=utf-8")
    return store.url(key)
