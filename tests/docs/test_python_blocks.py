"""Every Python block of the docs runs as written, in a fresh interpreter, beside a copy
of ``scenarios/``, and exits 0. (The README's examples, shown in the docs through a
marker, are run by the README's own test.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.blocks import Block, all_blocks
from tests.docs.scratch import prepare

PYTHON_BLOCKS = all_blocks("python")


def test_there_are_python_examples() -> None:
    assert len(PYTHON_BLOCKS) >= 1


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.where)
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    env = prepare(tmp_path)
    (tmp_path / "example.py").write_text(block.text)
    done = subprocess.run(  # noqa: PLW1510 (the exit code is asserted)
        [sys.executable, "example.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{block.where}\n{done.stdout}\n{done.stderr}"
