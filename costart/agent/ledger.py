"""What the agent has launched, on disk (``--state-dir``): one JSON file per run of a
task, written before the process starts and kept until the task leaves the node. A
restarted agent reads it to kill what its previous run left and to never start the same
run twice."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from costart.agent.model import TaskKey


class Record(msgspec.Struct, frozen=True):
    group_id: str
    member: str
    index: int
    attempt: int
    ref: str
    pid: int | None = None
    start_ticks: int | None = None

    @property
    def key(self) -> TaskKey:
        return TaskKey(self.group_id, self.member, self.index, self.attempt)


class Ledger:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory

    def write(self, record: Record) -> None:
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

    def records(self) -> list[Record]:
        found = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                found.append(msgspec.json.decode(path.read_bytes(), type=Record))
            except (OSError, msgspec.DecodeError) as error:
                raise ValueError(f"agent state {path}: unreadable ({error})") from error
        return found
