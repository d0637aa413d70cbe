"""The load curve's figure and caption (analysis.load_curve_plot) on the synthetic log of the curve's
own tests (helpers.curve_log)."""
from __future__ import annotations

import io

import matplotlib.image as mpimg

from analysis.load_curve_plot import curve_caption_html, load_curve_png
from helpers import curve_log


def test_the_figure_and_its_caption():
    result, trials = curve_log()
    for png in (load_curve_png(trials, result), load_curve_png([], {})):
        assert mpimg.imread(io.BytesIO(png), format="png").shape == (500, 800, 4)
    cap = curve_caption_html('"x/load_curve.csv')
    assert "mean of its valid trials" in cap and '<a href="&quot;x/load_curve.csv">load_curve.csv</a>' in cap
    assert "<a " not in curve_caption_html(None)
