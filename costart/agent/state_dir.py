"""Where the agent keeps its launch ledger (``--state-dir``), and the checks that keep
it the agent's own (docs/design.md §11, issue 29).

A restarted agent kills the processes its ledger names, so whoever can write the
ledger can have the agent kill a process. The directory is therefore outside the work
directory (tasks write there), and it is a real directory owned by the agent's
effective uid that no one else may enter: ``/var/lib/costart-agent/NODES`` for root,
else ``$XDG_STATE_HOME/costart-agent/NODES`` (``~/.local/state`` by default).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from costart.agent.owner_only import owner_only_problem

ROOT_STATE: Final = Path("/var/lib/costart-agent")
STATE_MODE: Final = 0o700


class StateDirRefused(Exception):
    """The agent will not keep its state here (the message names the path and why)."""


def default_state_dir(
    nodes: Sequence[str],
    euid: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """The state directory of an agent running ``nodes`` when ``--state-dir`` is not
    given (``nodes`` sorted and joined by ``+``, so the same nodes find the same one)."""
    euid = os.geteuid() if euid is None else euid
    environ = os.environ if environ is None else environ
    name = "+".join(sorted(nodes))
    if euid == 0:
        return ROOT_STATE / name
    xdg = environ.get("XDG_STATE_HOME", "")
    # The XDG base directory spec: a relative value is invalid and is ignored.
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "state"
    return base / "costart-agent" / name


def prepare_state_dir(path: Path, work_dir: Path) -> Path:
    """``path``, absolute, created (mode 0700) if missing, and checked: not inside
    ``work_dir``, not a symbolic link, a directory owned by this process's effective
    uid with no group or other permission bits. Raises `StateDirRefused`."""
    path = Path(os.path.abspath(path))
    _outside(path, work_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=STATE_MODE)
    except FileExistsError:
        pass
    except OSError as error:
        raise StateDirRefused(f"--state-dir {path}: cannot create it ({error.strerror})") from None
    try:
        info = path.lstat()
    except OSError as error:
        raise StateDirRefused(f"--state-dir {path}: cannot read it ({error.strerror})") from None
    problem = owner_only_problem(info, directory=True)
    if problem:
        raise StateDirRefused(
            f"--state-dir {path}: {problem} (mode {info.st_mode & 0o7777:04o}, owner uid "
            f"{info.st_uid}); it must be a directory owned by uid {os.geteuid()} that no one "
            f"else may enter (chmod 700)"
        )
    _outside(path, work_dir)  # again: a link on the way may have been made meanwhile
    return path


def _outside(path: Path, work_dir: Path) -> None:
    real, work = path.resolve(), work_dir.resolve()
    if real == work or work in real.parents:
        raise StateDirRefused(
            f"--state-dir {path}: inside the work directory {work} (tasks write there); "
            "keep the agent's state elsewhere"
        )
