"""`workbench compare A B` on recorded ratings (tests/data/nightly_store): the CI of the change and
the verdict computed here by hand (normal CI of a difference; Welch's test from scipy)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats

from workbench import cli
from analysis import compare

STORE = Path(__file__).resolve().parents[1] / "data" / "nightly_store"
A, B = "nightly__2026-11-01__web", "nightly__2026-11-03__web"


def _rating(rid):
    d = STORE / "ratings" / rid
    return (json.loads((d / "result.json").read_text()),
            [json.loads(p.read_text()) for p in sorted((d / "trials").glob("*.json"))])


def test_compare_gives_the_hand_computed_ci_and_verdict(tmp_path, capsys):
    (ra, ta), (rb, tb) = _rating(A), _rating(B)
    z = stats.norm.ppf(0.975)
    se = [(r["peak_rate_ci"][1] - r["peak_rate_ci"][0]) / 2 / z for r in (ra, rb)]   # se from a 95 % CI
    d = rb["peak_rate"] - ra["peak_rate"]
    lo, hi = d - z * math.hypot(*se), d + z * math.hypot(*se)     # k = 1: d ± z·√(se_A² + se_B²)
    ref = min((t["load_ops_s"] for t in ta if t["valid"]), key=lambda x: abs(x - ra["peak_rate"]))
    near = [[t["mean_ms"] for t in ts if t["valid"] and abs(t["load_ops_s"] - ref) <= 0.1 * ref] for ts in (tb, ta)]
    p = stats.ttest_ind(*near, equal_var=False, alternative="greater").pvalue   # H1: B slower at ref
    # B did not converge: a regression needs significance and its bracket top below 0.9·λ*_A
    assert p < 0.05 and rb["bracket"][1] < 0.9 * ra["peak_rate"] and not rb["converged"]

    out = tmp_path / "cmp.html"
    assert cli.main(["compare", A, B, "--results", str(STORE), "--out", str(out)]) == 1     # a regression
    text = capsys.readouterr().out
    assert text.splitlines()[2].startswith("REGRESSION: ")
    v = compare.compare_ratings(compare.load_rating(*compare.open_rating(A, STORE)),
                                compare.load_rating(*compare.open_rating(B, STORE)))["verdict"]
    assert v["diff"] == pytest.approx(d) and v["diff_ci"] == pytest.approx([lo, hi], rel=1e-9)
    assert v["welch_p"] == pytest.approx(p, rel=1e-9) and v["ref_load_ops_s"] == ref
    assert v["regression"] and v["test"] == "welch" and "B did not converge" in v["reason"]
    page = out.read_text()
    assert "Comparison: B against A" in page and "REGRESSION" in page and page.count("data:image/png") == 1


def test_compare_refuses_what_it_cannot_compare(tmp_path, capsys):
    # by directory path works as by id; a missing rating or a bad reference fails in one line (exit 2)
    assert cli.main(["compare", str(STORE / "ratings" / A), str(STORE / "ratings" / "nightly__2026-11-02__web"),
                     "--out", str(tmp_path / "c.html")]) == 0
    assert "NO SIGNIFICANT CHANGE" in capsys.readouterr().out
    for argv, msg in ((["compare", "nosuch", B, "--results", str(STORE)], "no result.json there"),
                      (["compare", "a/b", B, "--results", str(STORE)], "not a rating id"),
                      (["compare", "s3://Bad_Bucket/x", B], "s3://<bucket>/ratings/<rating id>/"),
                      (["compare", B, A, "--results", str(STORE)], "did not converge"),
                      (["compare", A, B, "--results", str(STORE), "--confidence", "1.5"], "confidence must be")):
        assert cli.main(argv) == 2, argv
        assert msg in capsys.readouterr().err, argv


def test_publish_stores_the_verdict_and_the_page(tmp_path):
    from workbench.store.local import LocalStore
    store = LocalStore(tmp_path)
    out = compare.compare_ratings(compare.load_rating(*compare.open_rating(A, STORE)),
                                  compare.load_rating(*compare.open_rating(B, STORE)))
    url = compare.publish(store, out)
    assert url.endswith(f"comparisons/{A}__vs__{B}/report.html")
    assert store.get_json(f"comparisons/{A}__vs__{B}/verdict.json")["word"] == "REGRESSION"


@pytest.mark.parametrize("verdict,code", [({"regression": True}, 1), ({"inconclusive": True}, 2),
                                          ({"improvement": True}, 0), ({}, 0)])
def test_compare_exit_code_gates_a_ci_job(verdict, code):
    assert cli.compare_exit_code(verdict) == code
