"""What the agent has launched, on disk (``--state-dir``): one JSON file per run of a
task, written before the process starts and kept until the task leaves the node. A
restarted agent reads it to kill what its previous run left and to never start the same
run twice; before any kill, `costart.agent.leftovers` checks that a record still names
the task's process."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

import msgspec
import structlog

from costart.agent.model import TaskKey

log = structlog.get_logger("costart.agent")
MAX_RECORD_BYTES: Final = 64 * 1024  # a record is a few hundred bytes


class LaunchRecord(msgspec.Struct, frozen=True):
    """One run of a task the agent launched: written with no ``pid`` before the start,
    then again with the process's ``pid``, ``start_ticks`` (proc(5) ``starttime``) and
    the ``uid`` it runs as."""

    group_id: str
    member: str
    index: int
    attempt: int
    ref: str
    pid: int | None = None
    start_ticks: int | None = None
    uid: int | None = None  # the account the task runs as (None: not recorded)

    @property
    def key(self) -> TaskKey:
        return TaskKey(self.group_id, self.member, self.index, self.attempt)


class Ledger:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.directory = directory

    def write(self, record: LaunchRecord) -> None:
        """Durably, and atomically (a crash leaves the old file or the new one)."""
        path = self.directory / record.key.file_name()
        temporary = path.with_suffix(".tmp")
        with temporary.open("wb") as out:
            out.write(msgspec.json.encode(record))
            out.flush()
            os.fsync(out.fileno())
        temporary.replace(path)

    def remove(self, key: TaskKey) -> None:
        (self.directory / key.file_name()).unlink(missing_ok=True)

    def records(self) -> list[LaunchRecord]:
        """Every record, in file name order. A file that is not a regular file owned by
        the agent's effective uid, or that cannot be read as a record, is skipped with a
        warning: it was not written by this agent, and the agent runs on."""
        found = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                found.append(msgspec.json.decode(_read_own_file(path), type=LaunchRecord))
            except OSError as error:
                log.warning("skipped an agent state record", path=str(path), why=error.strerror)
            except msgspec.DecodeError as error:
                why = f"not a record ({error})"
                log.warning("skipped an agent state record", path=str(path), why=why)
        return found


def _read_own_file(path: Path) -> bytes:
    try:  # O_NOFOLLOW: a link named like a record is refused, not followed
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise OSError(error.errno, "a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file")
        if info.st_uid != os.geteuid():
            raise OSError(0, f"owned by uid {info.st_uid}, not the agent's {os.geteuid()}")
        data = os.read(fd, MAX_RECORD_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_RECORD_BYTES:
        raise OSError(0, f"longer than {MAX_RECORD_BYTES} bytes")
    return data
