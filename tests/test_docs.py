"""The README and the figures page stay short and their links resolve (issue 32): README ≤ 150 lines
with the two set-up commands on its first screen, docs/performance.md ≤ 300 lines, and every
relative link of README.md and docs/*.md names a file that exists (and, with a #anchor, a heading
of that file)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces → '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_anchor(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")}


def test_readme_fits_a_screen_and_starts_with_the_two_commands():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 150, len(lines)
    first_screen = "\n".join(lines[:25])
    assert "make run" in first_screen and "make test" in first_screen


def test_the_figures_page_stays_a_reference():
    assert len((REPO / "docs/performance.md").read_text().splitlines()) <= 300


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(doc: Path):
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue                                     # http:, https:, mailto:
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(target)
    assert not broken, f"{doc.name}: {broken}"
