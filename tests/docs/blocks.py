"""The fenced code blocks of the docs' written pages, with the marker line before each.

A block is ```` ```LANG ATTRS ```` ... ```` ``` ````. The line right before its fence may be
a marker: ``<!-- not-a-spec: WHY -->`` (a TOML block that is no spec or cluster file)
or ``<!-- not-run: WHY -->`` (a shell block that cannot run here). ``title="FILE"`` in
the attributes names the file a TOML block is written to for the page's shell blocks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(?P<lang>[A-Za-z0-9_+-]*)(?P<attrs>[^\n]*)$")
MARKER = re.compile(r"^<!-- (?P<kind>not-a-spec|not-run): (?P<why>.+) -->$")
TITLE = re.compile(r'title="(?P<title>[^"]+)"')


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    attrs: str
    text: str
    marker: str | None
    """``not-a-spec`` or ``not-run`` when the line before the fence says so."""
    why: str | None

    @property
    def title(self) -> str | None:
        found = TITLE.search(self.attrs)
        return found["title"] if found else None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path, text: str | None = None) -> list[Block]:
    """The fenced blocks of ``page`` (its ``text`` when given), in order. Raises
    `ValueError` for a fence left open or a marker not followed by a fence."""
    lines = (page.read_text(encoding="utf-8") if text is None else text).splitlines()
    found = []
    i = 0
    while i < len(lines):
        marker = MARKER.match(lines[i])
        if marker and not (i + 1 < len(lines) and FENCE.match(lines[i + 1])):
            raise ValueError(f"{page}:{i + 1}: a marker must be right before a fence")
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j] == "```"), None)
        if end is None:
            raise ValueError(f"{page}:{i + 1}: fence never closed")
        before = MARKER.match(lines[i - 1]) if i > 0 else None
        found.append(
            Block(
                page=page,
                line=i + 1,
                lang=opening["lang"],
                attrs=opening["attrs"].strip(),
                text="\n".join(lines[i + 1 : end]) + "\n",
                marker=before["kind"] if before else None,
                why=before["why"] if before else None,
            )
        )
        i = end + 1
    return found


def pages() -> list[Path]:
    """The written pages (the generated ones are not in the tree)."""
    return sorted(p for p in DOCS.rglob("*.md"))


def all_blocks(lang: str | tuple[str, ...]) -> list[Block]:
    langs = (lang,) if isinstance(lang, str) else lang
    return [b for page in pages() for b in blocks_of(page) if b.lang in langs]
