"""The work of `costart logs` (`costart.cli.logs_cmd`): which tasks a target names,
and their output printed as `Client.follow_log` reads it (ADR 0084).
"""

from __future__ import annotations

import os
import re
import sys
import threading
from typing import Final
from urllib.parse import quote

import typer

from costart.cli.backend import error_for
from costart.cli.commands import Target
from costart.cli.exits import UsageError, reported
from costart.cli.names import RESOURCE_TYPES
from costart.domain.errors import NotFound
from costart.domain.limits import NAME_PATTERN
from costart.projections import MemberView
from costart.rest.client import ApiError, Client

MAX_FOLLOWED: Final = 64  # tasks followed at once (one thread and connection each)


def print_logs(
    settings: Target, target: str, *, follow: bool, attempt: int | None, tail: int | None
) -> None:
    """Print the output of the tasks ``target`` names; an error is one line on stderr
    with its exit code (`costart.cli.exits`); a reader that closed the pipe
    (``| head``) ends it quietly, exit 0."""
    try:
        _print_logs(settings, target, follow=follow, attempt=attempt, tail=tail)
    except _PipeClosed:
        # Nothing more can be written; stdout's own flush at exit must not fail either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(0) from None


def _print_logs(
    settings: Target, target: str, *, follow: bool, attempt: int | None, tail: int | None
) -> None:
    with reported():
        group, member, task = parse_target(target)
        if settings.server is None:
            raise UsageError(
                "costart logs reads the output from the task's node through a server: "
                "give --server URL (and --token)"
            )
        client = _client(settings)
        try:
            tasks = _tasks(client, group, member, task)
            prefix = len(tasks) > 1
            if follow and len(tasks) > MAX_FOLLOWED:
                raise UsageError(
                    f"{group} has {len(tasks)} tasks; -f follows at most {MAX_FOLLOWED}: "
                    "name a member or a task"
                )
            printer = _Printer(prefix)
            if not follow or len(tasks) == 1:
                for one in tasks:
                    _print_task(client, printer, group, one, attempt, tail, follow)
                return
            _follow_each(client, printer, group, tasks, attempt, tail)
        finally:
            client.close()


def _follow_each(
    client: Client,
    printer: _Printer,
    group: str,
    tasks: list[tuple[str, int]],
    attempt: int | None,
    tail: int | None,
) -> None:
    """Follow every task at once, a thread each, until all end (their group ended) or
    one fails (its error is the command's; the others stop with the process)."""
    failures: list[BaseException] = []
    left = [len(tasks)]
    done = threading.Event()

    def run(one: tuple[str, int]) -> None:
        try:
            _print_task(client, printer, group, one, attempt, tail, follow=True)
        except BaseException as error:
            failures.append(error)
            done.set()
        finally:
            with printer.lock:
                left[0] -= 1
                if left[0] == 0:
                    done.set()

    for one in tasks:
        threading.Thread(target=run, args=(one,), daemon=True).start()
    done.wait()
    if failures:
        raise failures[0]


def parse_target(text: str) -> tuple[str, str | None, int | None]:
    """GROUP, GROUP/MEMBER or GROUP/MEMBER/TASK, matched whole; `UsageError` naming
    the part at fault. What ``-o name`` prints is taken back: a leading ``group/`` or
    ``member/`` (or plural) is the object's type, as in `costart.cli.names`."""
    kind, sep, rest = text.partition("/")
    if sep and RESOURCE_TYPES.get(kind) in ("group", "member"):
        text = rest
    parts = text.split("/")
    if len(parts) > 3:
        raise UsageError(f"{text!r}: expected GROUP, GROUP/MEMBER or GROUP/MEMBER/TASK")
    for noun, part in zip(("group", "member"), parts[:2], strict=False):
        if not re.fullmatch(NAME_PATTERN, part):
            raise UsageError(f"{text!r}: {part!r} is not a valid {noun} name")
    if len(parts) == 3 and not re.fullmatch(r"[0-9]{1,6}", parts[2]):
        raise UsageError(f"{text!r}: the task {parts[2]!r} is not an index (0, 1, ...)")
    member = parts[1] if len(parts) > 1 else None
    task = int(parts[2]) if len(parts) == 3 else None
    return parts[0], member, task


def _client(settings: Target) -> Client:
    try:
        return Client(settings.server or "", settings.token, ca_file=settings.ca_file)
    except ApiError as error:
        raise error_for(error) from None


def _tasks(
    client: Client, group: str, member: str | None, task: int | None
) -> list[tuple[str, int]]:
    """The (member, task) pairs to print, in the members' and tasks' order."""
    if member is not None and task is not None:
        return [(member, task)]
    try:
        rows = client.call_list(f"/v1/groups/{quote(group, safe='')}/members", MemberView)
    except ApiError as error:
        raise error_for(error) from None
    if member is not None:
        rows = [row for row in rows if row.name == member]
        if not rows:
            raise NotFound(f"group {group} has no member {member!r}")
    found = [(row.name, t.index) for row in rows for t in sorted(row.tasks, key=lambda t: t.index)]
    if not found:
        where = f"{group}/{member}" if member else group
        raise NotFound(f"{where} has no task placed yet: nothing has run")
    return found


class _PipeClosed(Exception):
    """The reader of stdout is gone (not an `OSError`: no error to report)."""


class _Printer:
    """Whole lines to stdout, one writer at a time; a task's cut last line is held
    until its end comes (or the attempt ends)."""

    def __init__(self, prefix: bool) -> None:
        self.prefix = prefix
        self.lock = threading.Lock()

    def write(self, name: str, text: str) -> None:
        if not text:
            return
        if self.prefix:
            lines = text.splitlines(keepends=True)
            text = "".join(f"[{name}] {line}" for line in lines)
        if not text.endswith("\n") and self.prefix:
            text += "\n"
        with self.lock:
            try:
                sys.stdout.write(text)
                sys.stdout.flush()
            except BrokenPipeError:
                raise _PipeClosed from None

    def note(self, message: str) -> None:
        with self.lock:
            typer.echo(message, err=True)


def _print_task(
    client: Client,
    printer: _Printer,
    group: str,
    which: tuple[str, int],
    attempt: int | None,
    tail: int | None,
    follow: bool,
) -> None:
    member, task = which
    name = f"{member}/{task}"
    shown: int | None = None
    held = ""  # a line cut by a chunk's end, when lines are prefixed
    try:
        for chunk in client.follow_log(
            group, member, task, attempt=attempt, tail=tail, follow=follow
        ):
            if shown is not None and chunk.attempt != shown:
                printer.write(name, held)
                held = ""
                printer.note(f"--- {group}/{name}: attempt {chunk.attempt} (node {chunk.node})")
            shown = chunk.attempt
            text = held + chunk.text
            if printer.prefix and not chunk.complete:
                cut = text.rfind("\n") + 1
                text, held = text[:cut], text[cut:]
            else:
                held = ""
            printer.write(name, text)
        printer.write(name, held)
    except ApiError as error:
        raise error_for(error) from None
