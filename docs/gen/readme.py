"""A fenced block of the README, by the heading of its section: the README keeps the
text (it is executed by the tests as written); the docs include it."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


def readme_section(heading: str) -> str:
    """The README's text under ``## heading`` (or ``###``), up to the next heading of
    that level or higher. `KeyError` if there is no such heading."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^(?P<level>#{{2,3}}) {re.escape(heading)}\n", text, re.MULTILINE)
    if match is None:
        raise KeyError(f"README.md has no section {heading!r}")
    level = len(match["level"])
    rest = text[match.end() :]
    end = re.search(rf"^#{{2,{level}}} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def readme_block(heading: str) -> str:
    """The first fenced block of the README's section ``heading``, fence included."""
    found = FENCE.search(readme_section(heading))
    if found is None:
        raise KeyError(f"README.md section {heading!r} has no fenced block")
    return found.group(0)
