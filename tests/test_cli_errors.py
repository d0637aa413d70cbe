"""The CLI's error path: an unexpected error is one line on the console, its trace in a file (issue 53)."""
from __future__ import annotations

from pathlib import Path

from workbench import cli


def test_an_unexpected_error_is_one_line_naming_the_file_with_its_trace(monkeypatch, capsys):
    def broken(args):
        raise KeyError("no such thing\nsecond line")

    monkeypatch.setattr(cli, "cmd_compare", broken)
    rc = cli.main(["compare", "a", "b"])
    err = capsys.readouterr().err
    assert rc == 1 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("workbench: unexpected KeyError: 'no such thing\\nsecond line' (full trace: "), err
    trace = Path(err.rsplit("(full trace: ", 1)[1].strip().rstrip(")"))
    try:
        text = trace.read_text()
        assert text.startswith("Traceback") and "in broken" in text and "KeyError" in text
    finally:
        trace.unlink()
