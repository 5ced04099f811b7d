"""Every shell block of the docs runs (``bash -euo pipefail``), a page at a time in one
scratch directory, so a page's blocks build on each other; a block marked
``<!-- not-run: WHY -->`` is left out, and says why. A page's TOML blocks with a
``title="FILE"`` are written to FILE first."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.docs.blocks import Block, blocks_of, pages
from tests.docs.scratch import prepare

SHELLS = ("sh", "bash", "shell")


def runnable(page: Path) -> list[Block]:
    return [b for b in blocks_of(page) if b.lang in SHELLS and b.marker != "not-run"]


PAGES = [p for p in pages() if runnable(p)]


def test_every_shell_block_runs_or_says_why_not() -> None:
    shell = [b for p in pages() for b in blocks_of(p) if b.lang in SHELLS]
    skipped = [b for b in shell if b.marker == "not-run"]
    assert all(b.why for b in skipped)
    assert len(shell) - len(skipped) >= 10  # most of them run
    # Every other language is known: nothing executable hides under another name.
    langs = {b.lang for p in pages() for b in blocks_of(p)}
    assert langs <= {*SHELLS, "toml", "python", "text", ""}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_shell_blocks_of_a_page_run(page: Path, tmp_path: Path) -> None:
    env = prepare(tmp_path)
    for block in blocks_of(page):
        if block.lang == "toml" and block.title:
            (tmp_path / block.title).write_text(block.text)
    for block in runnable(page):
        done = subprocess.run(  # noqa: PLW1510 (the exit code is asserted)
            ["bash", "-euo", "pipefail", "-c", block.text],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{block.where}\n{block.text}\n{done.stdout}\n{done.stderr}"
