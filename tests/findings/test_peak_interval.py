"""No console line, result field or report cell shows a latency bound below zero, a negative
accuracy, or an end missing from a converged rating's λ* interval (issue 30). Simulated ratings of
every validity family and the recorded rating of tests/data; the real smoke rating is scanned in
tests/test_cli.py."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from helpers import bad_figures, result_bad_fields
from analysis.report import rating_report_html
from workbench.controller.decide import find_peak
from workbench.controller.spec import RatingSpec
from workbench.measure.families import FAMILY_NAMES, family_servers
from workbench.output.console import Progress, result_block
from workbench.params.plan import strict_json

DATA = Path(__file__).resolve().parent.parent / "data"


def _outputs(res: dict, records: list[dict]) -> str:
    out = io.StringIO()
    progress = Progress(10_000.0, 0.0, out, compact=True)
    for r in records:
        progress.trial(r)
    html = rating_report_html({"workload": "sim", "spec": {}}, res, records, plots={})
    return "\n".join([out.getvalue(), result_block(res), html])


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_simulated_ratings_print_no_negative_bound_and_no_open_converged_interval(family):
    spec = RatingSpec(runlength_s=60.0)
    for server in family_servers(family, 6, seed=4242):
        peak = find_peak(spec, server.measure)
        res = strict_json(peak.to_dict())
        records = [{**t.to_dict(), "n": i, "decision": ""} for i, t in enumerate(peak.trials)]
        assert result_bad_fields(res) == [], (family, res["reason"])
        assert bad_figures(_outputs(res, records)) == [], family


def test_the_scan_finds_what_it_looks_for():
    assert bad_figures("potential peak: CI [-116.8, 181.6] ms, accuracy -3.602")
    assert bad_figures("R̄ at 4000 ops/s  501.71 ms, CI [—, —] (R_sat 40 ms)")
    assert result_bad_fields({"converged": True, "peak_rate": 3906.0, "peak_rate_ci": [3600.0, None],
                              "peak_rate_ci_level": 0.9, "mean_ms_ci": [-1.0, 3.0], "accuracy": -0.2}) == [
        "mean_ms_ci [-1.0, 3.0]", "accuracy -0.2", "converged with peak_rate_ci [3600.0, None] around λ* 3906.0"]


def test_the_recorded_rating_prints_honest_figures_as_the_code_renders_it_now():
    """A rating stored before issue 30 (accuracy −0.813 at its nearest load): what the code computes
    when it shows it is clipped to what a mean can be; the trials' decision texts are quoted as
    recorded (they carry the old reason lines), so they are left out of the scan."""
    load = lambda name: json.loads((DATA / f"report_{name}.json").read_text())     # noqa: E731
    res, trials = load("result"), load("trials")
    assert res["accuracy"] < 0 and bad_figures("\n".join(t["decision"] for t in trials))    # the old figures
    assert bad_figures(_outputs(res, [{**t, "decision": ""} for t in trials])) == []
