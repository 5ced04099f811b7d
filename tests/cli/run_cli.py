"""The CLI run as a real process through its entry point, from this checkout (``cwd``:
the repository root unless a test needs another), its output captured as text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def costart(*args: str, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``costart ARGS`` run to its end (killed after ``timeout`` seconds), not checked."""
    return subprocess.run(
        [sys.executable, "-m", "costart.cli.main", *args],
        cwd=cwd,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
