"""Run a script in a fresh interpreter under a given ``PYTHONHASHSEED``: the way the
determinism tests show that bytes do not depend on hash order."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def stdout_lines(script: str, hash_seed: str, timeout: float = 120) -> list[str]:
    """The lines the script prints, run from the repository root (it fails the test
    with the script's stderr if the script fails)."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", script],
        check=False,  # a failure is reported with the script's stderr below
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()
