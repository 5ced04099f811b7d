"""The Linux process table (``/proc``): process groups and descendants, so a teardown
reaches every process a task started, and start times, so a recorded pid is not
mistaken for a later process that reuses it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

PROC = Path("/proc")


class Proc(NamedTuple):
    pid: int
    ppid: int
    pgid: int
    start_ticks: int


def read_proc(pid: int) -> Proc | None:
    """One process's parent, group and start time (None: it is gone)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces or ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie runs nothing; its parent reaps it
        return None
    return Proc(pid, int(fields[1]), int(fields[2]), int(fields[19]))


def processes() -> Iterator[Proc]:
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            found = read_proc(int(entry.name))
            if found is not None:
                yield found


def tree(pid: int, pgid: int, table: list[Proc] | None = None) -> set[int]:
    """Every live process of the task: its process group, and the descendants of
    ``pid`` (a child that made its own group is still reached through its parent)."""
    table = list(processes()) if table is None else table
    found = {p.pid for p in table if p.pgid == pgid}
    if any(p.pid == pid for p in table):
        found.add(pid)
    children: dict[int, list[int]] = {}
    for p in table:
        children.setdefault(p.ppid, []).append(p.pid)
    frontier = list(found)
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child)
    found.discard(os.getpid())
    return found


def marked(marks: Mapping[str, str], table: list[Proc]) -> set[int]:
    """The processes whose environment holds every ``NAME=value`` of ``marks`` (none for
    no marks). A task's descendants inherit its identity, so one that left the task's
    session and was orphaned before the agent ever saw it is still found by this."""
    if not marks:
        return set()
    wanted = {f"{name}={value}".encode() for name, value in marks.items()}
    found = set()
    for p in table:
        try:
            environ = (PROC / str(p.pid) / "environ").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        if wanted <= set(environ.split(b"\0")):
            found.add(p.pid)
    found.discard(os.getpid())
    return found


def signal_all(pids: set[int], signum: int) -> None:
    for pid in sorted(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
