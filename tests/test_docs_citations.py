"""Every citation of ``docs/`` in the code names a section that exists.

Docstrings cite ``docs/algorithms.md Sec. N`` (the numbered sections of that
page) and ``docs/architecture.md, "Heading"``; a renamed or renumbered section
must take its citations along.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("learners", "service", "evaluation", "bench")

ALGORITHMS_CITATION = re.compile(r"docs/algorithms\.md,?\s+(?:Sec\.|§)\s?(\d+(?:\.\d+)?)")
ARCHITECTURE_CITATION = re.compile(r'docs/architecture\.md,\s+"([^"]+)"')
HEADING = re.compile(r"^#{2,4}\s+(.*?)\s*$", re.M)


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _citations(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    found = []
    for path in _sources():
        text = path.read_text()
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{path.relative_to(ROOT)}:{line}", match.group(1)))
    return found


def _algorithm_sections() -> set[str]:
    numbers = set()
    for heading in HEADING.findall((ROOT / "docs" / "algorithms.md").read_text()):
        number = re.match(r"(\d+(?:\.\d+)?)[.\s]", heading + " ")
        if number:
            numbers.add(number.group(1).rstrip("."))
    return numbers


def _architecture_headings() -> set[str]:
    return set(HEADING.findall((ROOT / "docs" / "architecture.md").read_text()))


def test_the_code_cites_the_docs() -> None:
    assert len(_citations(ALGORITHMS_CITATION)) > 50
    assert _citations(ARCHITECTURE_CITATION)


def test_no_citation_of_files_outside_the_repository() -> None:
    stale = re.compile(r"(?<!docs/)\b(?:algorithms\.md|DESIGN\.md)")
    offenders = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in _sources()
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if stale.search(line)
    ]
    assert offenders == []


@pytest.mark.parametrize(("where", "section"), _citations(ALGORITHMS_CITATION))
def test_algorithms_section_exists(where: str, section: str) -> None:
    assert section in _algorithm_sections(), f"{where} cites docs/algorithms.md Sec. {section}"


@pytest.mark.parametrize(("where", "heading"), _citations(ARCHITECTURE_CITATION))
def test_architecture_heading_exists(where: str, heading: str) -> None:
    assert heading in _architecture_headings(), f'{where} cites "{heading}"'
