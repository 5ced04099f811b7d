"""Secret values for a task, read on its node (``costart agent --secrets-dir DIR``).

A run table names secrets (``env_secrets = { API_KEY = "team-a/openai" }``, stored as
references only, ADR 0065). The agent reads ``DIR/OWNER/team-a/openai`` for a task of
``OWNER``'s group: an owner can name only its own secrets. Each file holds one value
(one trailing newline is dropped). The walk refuses symlinks (`costart.agent.confine`),
so a secret is what the operator put in the owner's directory and nothing else.

The values go into the task's environment only: never into a report, a log line or
the agent's state.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from costart.agent.confine import Escape, open_file
from costart.agent.model import Refused

MAX_SECRET_BYTES: Final = 64 * 1024


class SecretsError(ValueError):
    """The secrets directory cannot be used (names it and why)."""


class Secrets:
    def __init__(self, directory: Path | None) -> None:
        """``directory`` must be a real directory no one but its owner may write."""
        if directory is not None:
            try:
                info = os.lstat(directory)
            except OSError as error:
                raise SecretsError(f"--secrets-dir {directory}: {error.strerror}") from None
            if not stat.S_ISDIR(info.st_mode):
                raise SecretsError(f"--secrets-dir {directory}: not a directory")
            if info.st_mode & 0o022:
                raise SecretsError(
                    f"--secrets-dir {directory}: writable by group or others "
                    f"(mode {stat.S_IMODE(info.st_mode):o})"
                )
        self.directory = directory

    def resolve(self, owner: str, wanted: Sequence[tuple[str, str]]) -> dict[str, str]:
        """``{name: value}`` for each (name, reference); `Refused` naming the first one
        that cannot be read."""
        if not wanted:
            return {}
        if self.directory is None:
            names = ", ".join(name for name, _ in wanted)
            raise Refused(
                f"the run table names secrets ({names}) and this node has no secrets source"
            )
        values = {}
        for name, reference in wanted:
            try:
                data = open_file(self.directory / owner, reference, MAX_SECRET_BYTES)
            except Escape as error:
                raise Refused(
                    f"secret {reference!r} for {name} of owner {owner!r}: {error}"
                ) from None
            try:
                text = data.decode()
            except UnicodeDecodeError:
                raise Refused(f"secret {reference!r} for {name}: not UTF-8 text") from None
            if "\0" in text:
                raise Refused(f"secret {reference!r} for {name}: holds a NUL byte")
            values[name] = text[:-1] if text.endswith("\n") else text
        return values
