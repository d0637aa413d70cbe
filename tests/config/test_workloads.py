"""Workload factors and custom workload texts: rendering, checks, and the bounds against fstress."""
from __future__ import annotations

import json
import subprocess

import pytest

from workbench.config import workloads
from workbench.config.paths import FSTRESS
from workbench.config.workloads import WORKLOAD_FACTORS, check_workload_text, render_workload


def test_a_canned_base_with_factors_renders_as_base_plus_keys():
    text = render_workload("web_server", None, {"zipf_alpha": 0.5, "read_size_kb": 32, "mix_read_pct": 40.0,
                                                "mix_write_pct": None})
    assert text == ("base = web_server\n"
                    "# workload factors: zipf_alpha=0.5, read_size_kb=32, mix_read_pct=40.0\n"
                    "file_popularity = zipf:0.5\nread_size = 32K\nmix_share = read:40\n")
    assert render_workload("web_server", None, {"zipf_alpha": None}) == ""          # the canned workload itself


def test_factors_replace_the_lines_of_a_custom_text_and_merge_its_shares():
    own = "base = mail\nname = mine\nfile_popularity = zipf:1.3  # heavy\nmix_share = write:10, read:5\n"
    text = render_workload("web_server", own, {"zipf_alpha": 0.9, "mix_read_pct": 30.0})
    lines = text.splitlines()
    assert lines[:2] == ["base = mail", "name = mine"] and "zipf:1.3" not in text
    assert "file_popularity = zipf:0.9" in lines and lines[-1] == "mix_share = write:10, read:30"
    assert render_workload("web_server", own, {}) == own


def test_mix_shares_above_100_percent_are_refused_naming_the_factors():
    with pytest.raises(ValueError, match=r"mix_read_pct \+ mix_getattr_pct: the shares sum to 110 %"):
        workloads.workload_overrides({"mix_read_pct": 60.0, "mix_getattr_pct": 50.0})
    with pytest.raises(ValueError, match=r"read_size_kb: 1.5 is not allowed; a whole number in \[1, 16384\]"):
        workloads.workload_overrides({"read_size_kb": 1.5})


@pytest.mark.parametrize("text,match", [
    ("", "give the text of a workload file"),
    ("base = /etc/passwd\n", r"line 1: base '/etc/passwd' is not allowed; a canned workload"),
    ("mix = read:1\nfile_size = @/dev/zero\n", r"line 2: '@/dev/zero' names a file; only @canned:NAME"),
    ("mix = @ops.mix\n", "names a file"),
    ("mix = read:1\n" + "# pad\n" * 20000, r"bytes; at most 65536"),
])
def test_a_custom_text_must_stand_alone(text, match):
    with pytest.raises(ValueError, match=match):
        check_workload_text(text)


def test_canned_references_are_allowed_and_line_ends_made_unix():
    text = "base = web_server\nfile_size = @canned:web_sizes.dist # sizes\ndescription = a@b\n"
    assert check_workload_text(text) == text == check_workload_text(text.replace("\n", "\r\n"))


def test_params_schema_has_the_multiline_text_and_every_factor_in_its_section():
    s = workloads.params_schema()
    assert s["workload_text"]["format"] == "multiline" and s["workload_text"]["type"] == ["null", "string"]
    for f in WORKLOAD_FACTORS:
        assert s[f.name]["section"] == workloads.SECTION
        assert (s[f.name]["minimum"], s[f.name]["maximum"]) == (f.minimum, f.maximum)


@pytest.mark.skipif(not FSTRESS.is_file(), reason="needs bin/fstress (make fstress)")
@pytest.mark.parametrize("factor", WORKLOAD_FACTORS, ids=lambda f: f.name)
def test_fstress_accepts_every_factor_at_both_bounds(tmp_path, factor):
    """The table's bounds are fstress's: each end renders into a workload `fstress check` accepts."""
    for v in (factor.minimum, factor.maximum):
        wl = tmp_path / "w.wl"
        wl.write_text(render_workload("web_server", None, {factor.name: factor.kind(v)}))
        out = subprocess.run([str(FSTRESS), "check", "--workload", str(wl), "--fileset-rate", "1", "--json"],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, (v, wl.read_text(), out.stderr)
        assert json.loads(out.stdout)["ok"]
