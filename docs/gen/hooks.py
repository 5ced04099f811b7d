"""MkDocs hooks: the generated reference pages join the site as files of their own, and
each ``<!-- gen: NAME -->`` marker in a written page is replaced by its fragment."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # `docs.gen` and `costart` from this checkout

from mkdocs.structure.files import File, Files  # noqa: E402

from docs.gen import fragment, generated_pages  # noqa: E402

MARKER = re.compile(r"^<!-- gen: (?P<name>[^>]+?) -->$", re.MULTILINE)


def expand(markdown: str) -> str:
    """``markdown`` with every marker replaced by its fragment (`KeyError`: unknown)."""
    return MARKER.sub(lambda m: fragment(m["name"]), markdown)


def on_files(files: Files, config: Any) -> Files:
    for path, text in generated_pages().items():
        files.append(File.generated(config, path, content=text))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    return expand(markdown)
