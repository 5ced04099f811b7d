"""The design is `docs/design.md`; every reference to it names a section it has.

References are written ``docs/design.md §3.4`` (more sections may follow: ``§3.2, §5``).
The old form (the word DESIGN, then the section sign) pointed at a file the repository never had: none may remain.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
SEARCHED = ("costart", "tests", "ADR", "docs", "bench", "scripts", "README.md")
HEADING = re.compile(r"^#{2,3} (?P<number>\d+(?:\.\d+)?)\.? ", re.MULTILINE)
CITATION = re.compile(r"docs/design\.md (?P<sections>§[\d.]*\d(?:(?:, | and )§[\d.]*\d)*)")
SECTION = re.compile(r"§([\d.]*\d)")
OLD_FORM = "DESIGN" + " §"  # split so this file does not cite the old form itself


def _texts() -> list[tuple[Path, str]]:
    found = []
    for name in SEARCHED:
        base = ROOT / name
        files = [base] if base.is_file() else sorted(base.rglob("*"))
        for path in files:
            if path.is_file() and path.suffix in {".py", ".md", ".toml", ".sh", ".txt"}:
                found.append((path, path.read_text(encoding="utf-8", errors="replace")))
    return found


def sections() -> set[str]:
    return {m["number"] for m in HEADING.finditer(DESIGN.read_text(encoding="utf-8"))}


def cited(text: str) -> list[str]:
    return [s for m in CITATION.finditer(text) for s in SECTION.findall(m["sections"])]


def test_the_design_keeps_sections_1_to_12() -> None:
    assert {str(n) for n in range(1, 13)} <= sections()
    assert {"3.1", "3.2", "3.3", "3.4", "3.5"} <= sections()


def test_no_reference_to_the_old_design_file_remains() -> None:
    stale = [str(p.relative_to(ROOT)) for p, text in _texts() if OLD_FORM in text]
    assert stale == []


def test_every_cited_section_exists() -> None:
    known = sections()
    citations = [
        (p.relative_to(ROOT), s)
        for p, text in _texts()
        if p != Path(__file__).resolve()  # its own examples cite a missing section on purpose
        for s in cited(text)
    ]
    assert len(citations) > 70  # the code, tests and ADRs cite it throughout
    missing = [f"{p}: §{s}" for p, s in citations if s not in known]
    assert missing == []


def test_citation_parsing_reads_lists() -> None:
    assert cited("(docs/design.md §3.2, §5): x; docs/design.md §8 and §9") == ["3.2", "5", "8", "9"]
    assert cited("docs/design.md §13") == ["13"]
    assert "13" not in sections()
