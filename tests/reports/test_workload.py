"""The workload section of a rating's report."""
from __future__ import annotations

from analysis.workload import workload_html


def test_the_workload_section_shows_factors_and_the_escaped_text():
    html = workload_html({"workload": "custom", "workload_factors": {"zipf_alpha": 0.6},
                          "workload_text": "name = a<b>\nmix = read:1\n"})
    assert html == ("<p><b>custom</b>; workload factors: zipf_alpha = 0.6</p>"
                    "<pre>name = a&lt;b&gt;\nmix = read:1\n</pre>")
    assert "not recorded" in workload_html({"workload": "web_server"})
