"""The README's example for a controller that embeds costart ("## Using it from a
controller") runs as written, twice in a row, in an empty directory, and prints on stdout
exactly what its own ``print`` calls print: the library writes no log line there (the
host chooses where logging goes, `costart.logging_setup.library_logger`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Using it from a controller"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# What the example's print calls say, in order (the comments beside them say the same).
PRINTED = [
    "RUNNING",
    "applied",
    "repeated",
    "rollout restarts: 1",
    "reconciled: 0 events, 0 to stop",
]


def example() -> str:
    """The one python block of the README's section, verbatim."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index(f"\n{SECTION}\n")
    end = readme.find("\n## ", start + 1)
    blocks = BLOCK.findall(readme[start : end if end != -1 else len(readme)])
    assert len(blocks) == 1, f"{SECTION}: expected one python block, found {len(blocks)}"
    return str(blocks[0])


def run_example(cwd: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("COSTART_")},
        "PYTHONPATH": str(ROOT),
        "TMPDIR": str(cwd),
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_readme_example_runs_as_written_twice_and_prints_only_its_own_lines(tmp_path):
    code = example()
    for run in (1, 2):  # a second run is no Conflict: each makes a new store
        done = run_example(tmp_path, code)
        assert done.returncode == 0, f"run {run}:\n{done.stderr}"
        assert done.stdout.splitlines() == PRINTED, f"run {run} stdout:\n{done.stdout}"
        assert "Traceback" not in done.stderr


def test_the_check_sees_a_library_line_on_stdout(tmp_path):
    """The stdout check can fail: structlog as left unconfigured prints to stdout."""
    code = "import structlog\nstructlog.get_logger('costart.x').info('group submitted')\n"
    code += example()
    done = run_example(tmp_path, code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() != PRINTED
    assert "group submitted" in done.stdout
