"""The habits of the source (issue 51): ruff's linter and formatter and mypy over src/, analysis/ and dags/,
each clean, with the settings of pyproject.toml ([tool.ruff]: 100 columns; [tool.mypy]). The tools
come with requirements-test.lock, into the venv that runs the tests.

Fix a finding with `.venv/bin/ruff format src analysis dags`, `.venv/bin/ruff check --fix src
analysis dags` or by hand; mypy's findings by hand (a `# type: ignore[code]` only where a library's types are wrong, with
the reason beside it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS = ("src", "analysis", "dags")


def _run(*args: str, timeout_s: float = 600.0) -> subprocess.CompletedProcess[str]:
    """`python -m <tool> ...` of this venv in the repository (mypy keeps its cache in .mypy_cache:
    a second run reads only what changed)."""
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout_s
    )


def _says(p: subprocess.CompletedProcess[str]) -> str:
    return f"exit {p.returncode}:\n{p.stdout}{p.stderr}"


def test_ruff_finds_nothing():
    p = _run("ruff", "check", "--no-cache", *TARGETS)
    assert p.returncode == 0, _says(p)


def test_ruff_format_changes_nothing():
    p = _run("ruff", "format", "--check", "--no-cache", *TARGETS)
    assert p.returncode == 0, _says(p)


def test_mypy_finds_nothing():
    p = _run("mypy")  # files, stubs and settings: [tool.mypy] in pyproject.toml
    assert p.returncode == 0, _says(p)
