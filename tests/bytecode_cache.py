"""Compiled modules kept between the test run's Python processes.

A run starts hundreds of Python processes (the CLI, `serve`, agents, helpers), each of
which imports the package and its libraries anew. Where the environment forbids writing
bytecode (``PYTHONDONTWRITEBYTECODE``, which keeps ``__pycache__`` out of source trees),
every one of them compiled every module it imported from source again: about a third of
a `costart` command's start-up. The tests keep bytecode in one cache inside the virtual
environment instead (``PYTHONPYCACHEPREFIX``), so the source tree stays clean and each
module is compiled once. Python checks each cached file against its source's size and
modification time, as it does beside the sources.
"""

from __future__ import annotations

import sys
from collections.abc import MutableMapping
from pathlib import Path


def cache_bytecode(environ: MutableMapping[str, str]) -> str | None:
    """If ``environ`` turns bytecode writing off and names no cache prefix, make it name
    ``sys.prefix/pycache`` and allow writing there; the prefix it now names, or None
    when it already decided where bytecode goes (then it is left as it is)."""
    if not environ.get("PYTHONDONTWRITEBYTECODE") or environ.get("PYTHONPYCACHEPREFIX"):
        return None
    cache = str(Path(sys.prefix) / "pycache")
    del environ["PYTHONDONTWRITEBYTECODE"]
    environ["PYTHONPYCACHEPREFIX"] = cache
    return cache
