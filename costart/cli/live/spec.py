"""The live scenario's spec made ready for this machine and this run.

``scenarios/live-rl.toml`` is written for a repository checkout: its ``run.cwd`` is a
path of the repository, its probes' files live under ``var/`` of that directory and its
services name fixed ports. A demo run must not depend on where it was started, nor
collide with another run or another program on the machine, and an agent runs tasks
only inside its work root (the run's directory, ADR 0066). So:

- `install_programs` copies each member's ``run.cwd`` from the repository into the run's
  directory (paths in the spec stay relative, as a user's would),
- `localize` sends the task logs to ``task-logs`` of the run's directory, gives each
  member that serves (``run.port``) a free block of ports, and adds ``LIVE_STARTS_DIR``
  to every member's ``run.env`` (where the programs record their starts),
- `probe_files` says where, under the run's directory, each ``file`` probe looks.

The answer is still a plain spec document; the controller validates it as any other.
"""

from __future__ import annotations

import copy
import shutil
import socket
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, Final

PORT_LOW: Final = 20_000
PORT_HIGH: Final = 60_000
PORT_TRIES: Final = 200
TASK_LOGS: Final = "task-logs"  # under the work root

Doc = dict[str, Any]


def members_with_run(doc: Doc) -> list[Doc]:
    return [m for m in doc.get("members", []) if isinstance(m.get("run"), dict)]


def task_count(member: Doc) -> int:
    count: int = member.get("tasks") or member.get("replicas") or 1
    return count


def probe_files(doc: Doc) -> list[str]:
    """The files the spec's ``file`` probes wait for, relative to the work root (a
    probe's file is relative to its task's ``cwd``), sorted, each once."""
    files = {
        str(PurePosixPath(member["run"].get("cwd", ".")) / str(probe["file"]))
        for member in members_with_run(doc)
        for probe in member["run"].get("probes", {}).values()
        if "file" in probe
    }
    return sorted(files)


def program_dirs(doc: Doc) -> list[str]:
    """Each member's ``run.cwd`` (relative to the work root), sorted, each once."""
    return sorted({str(m["run"]["cwd"]) for m in members_with_run(doc) if "cwd" in m["run"]})


def install_programs(doc: Doc, repository: Path, run_dir: Path) -> None:
    """Copy each member's working directory from the repository into the run's
    directory (what the probes wait for under it, ``var/``, is left behind)."""
    for directory in program_dirs(doc):
        shutil.copytree(
            repository / directory,
            run_dir / directory,
            ignore=shutil.ignore_patterns("var", "__pycache__"),
            dirs_exist_ok=True,
        )


def localize(
    doc: Doc,
    run_dir: Path,
    free_ports: Callable[[int], int],
) -> Doc:
    """A copy of ``doc`` for a run in ``run_dir`` (see the module's docstring);
    ``free_ports(n)`` answers the first of ``n`` free consecutive ports."""
    local = copy.deepcopy(doc)
    for member in members_with_run(local):
        run = member["run"]
        run["log_dir"] = TASK_LOGS
        env = run.setdefault("env", {})
        env["LIVE_STARTS_DIR"] = str(run_dir / "starts")
        if "port" in run:
            run["port"] = free_ports(task_count(member))
    return local


def free_port_block(count: int, taken: set[int], start: int) -> int:
    """The first of ``count`` consecutive ports at or after ``start`` that nothing on
    127.0.0.1 listens on and that ``taken`` (blocks handed out already) does not hold.
    Free now is not free for ever: a run that loses such a race fails its rendezvous
    and says so, it does not hang."""
    port = max(start, PORT_LOW)
    for _ in range(PORT_TRIES):
        block = range(port, port + count)
        if block.stop <= PORT_HIGH and all(p not in taken and _free(p) for p in block):
            taken.update(block)
            return port
        port = block.stop if block.stop < PORT_HIGH else PORT_LOW
    raise RuntimeError(f"no {count} free consecutive ports on 127.0.0.1")


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
