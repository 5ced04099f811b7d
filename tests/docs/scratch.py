"""A scratch directory to run the docs' examples in: beside a copy of ``scenarios/``,
with a ``costart`` on PATH that runs this checkout (not whatever is installed)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from tests.docs.blocks import ROOT


def prepare(where: Path) -> dict[str, str]:
    """Lay out ``where`` and return the environment the examples run with."""
    shutil.copytree(ROOT / "scenarios", where / "scenarios")
    bin_dir = where / ".bin"
    bin_dir.mkdir()
    shim = bin_dir / "costart"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m costart.cli.main "$@"\n')
    shim.chmod(0o755)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("COSTART_") or k == "COSTART_PROFILE"
    }
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    env["HOME"] = str(where)
    return env
