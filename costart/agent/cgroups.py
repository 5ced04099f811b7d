"""Per-task cgroup v2 directories (``costart agent --cgroup-root DIR``, a delegated
cgroup the agent may write): the kernel's OOM kills of a task are counted in its
``memory.events`` (``oom_kill N``), and ``cgroup.kill`` ends every process in it.

Without a cgroup root the agent cannot tell an OOM kill from another SIGKILL; it then
reads such an exit as a signal from outside (not charged to the workload)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from costart.agent.model import TaskKey


class TaskCgroups:
    def __init__(self, root: Path | None) -> None:
        if root is not None and not (root / "cgroup.procs").is_file():
            raise ValueError(f"--cgroup-root {root}: not a cgroup v2 directory (no cgroup.procs)")
        self.root = root

    def create(self, key: TaskKey) -> Path | None:
        """A fresh cgroup for one run of a task (None without a root)."""
        if self.root is None:
            return None
        path = self.root / f"costart-{key.group_id}-{key.member}-{key.task}-{key.attempt}"
        path.mkdir(exist_ok=True)
        return path

    @staticmethod
    def join_fd(path: Path | None) -> int | None:
        """An open ``cgroup.procs`` the child writes "0" to (itself) before it execs."""
        if path is None:
            return None
        return os.open(path / "cgroup.procs", os.O_WRONLY)

    @staticmethod
    def oom_kills(path: Path | None) -> int:
        """How many processes of the cgroup the OOM killer ended."""
        if path is None:
            return 0
        try:
            text = (path / "memory.events").read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
        return 0

    @staticmethod
    def kill(path: Path | None) -> None:
        """End every process left in the cgroup (kernel 5.14+ ``cgroup.kill``)."""
        if path is not None and (path / "cgroup.kill").exists():
            (path / "cgroup.kill").write_text("1")

    @staticmethod
    def remove(path: Path | None) -> None:
        if path is not None:
            # Still busy: the next teardown or a restart removes it.
            with contextlib.suppress(OSError):
                path.rmdir()
