"""The rating report in a real browser (headless Chromium, as the UI tests use): the verdict, the latency
split and the load curve are on the page a person opens, every figure decodes, the CSV link resolves."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import chromium

from analysis import report
from workbench.findings.bottleneck import verdict
from workbench.findings.latency_split import rating_split
from workbench.findings.load_curve import curve_csv, curve_rows, rating_ort_ms

DATA = Path(__file__).resolve().parents[1] / "data"


def _why_result():
    """The recorded default rating (tests/data/report_*.json) with a verdict from the read_iops construction's
    trials and a split over its valid trials (server, server queue, NULL and send-lag parts set by hand)."""
    result = json.loads((DATA / "report_result.json").read_text())
    trials = json.loads((DATA / "report_trials.json").read_text())
    case = json.loads((DATA / "bottleneck" / "read_iops.json").read_text())
    result["bottleneck"] = verdict(case["result"], case["records"])
    for t in trials:
        raw = t.setdefault("raw", {})
        raw["null_rtt_ms"] = {"n": 90, "mean": 0.12}
        raw["telemetry"] = {"hosts": {"sut1": {"server_ops": {"v3": {
            op.upper(): {"n": int(o["count"]), "mean_ms": 0.7 * float(o["mean_ms"])}
            for op, o in (raw.get("ops") or {}).items() if o.get("count") and o.get("mean_ms") is not None}},
            "rpc_queue": {"wait_ms": 0.01, "mean_bytes": 4.0, "rx_bytes": 4e5}}}}
    result["latency_split"] = rating_split(result, trials)
    result["overall_response_time_ms"] = rating_ort_ms(result, trials)
    return json.loads((DATA / "report_spec.json").read_text()), result, trials


@pytest.mark.timeout(120)
def test_the_report_reads_why_in_a_browser(tmp_path):
    spec, result, trials = _why_result()
    (tmp_path / "load_curve.csv").write_text(curve_csv(curve_rows(result, trials)))
    page = report.rating_report_html(spec, result, trials, curve_href="load_curve.csv")
    (tmp_path / "report.html").write_text(page)
    with chromium() as drv:
        drv.get((tmp_path / "report.html").as_uri())
        text = drv.find_element("tag name", "body").text
        assert result["bottleneck"]["line"] in text and "latency split" in text, text[:2000]
        assert "Latency split: client mean = server + server queue + network + client queueing" in text
        assert "overall response time (ORT)" in text
        sizes = drv.execute_script("return Array.from(document.images).map(i => [i.naturalWidth, i.complete])")
        assert len(sizes) >= 7 and all(w > 0 and done for w, done in sizes), sizes
        link = drv.find_element("link text", "load_curve.csv")
        assert Path(link.get_attribute("href").removeprefix("file://")).is_file()
