"""The processes the live demo starts, and the guarantee that none outlives it.

Each one runs in its own session (so its process group can be signalled whole: SIGTERM,
then SIGKILL after a grace period), with its output in a log file. Every process the
demo starts -- and every process those start, the agents' tasks included, since they
inherit the environment -- carries one marker variable naming the run. `sweep` finds
whatever is still alive with that marker in the process table (``/proc``) and kills it,
so an agent killed before its tasks, or a task that escaped its group, is not left
behind. The same scan is how a test checks that a run left nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import structlog

log = structlog.get_logger("costart.demo.live")

MARKER: Final = "COSTART_DEMO_RUN"
"""The environment variable every process of one demo run carries (its value: the run)."""
PROC: Final = Path("/proc")
POLL_S: Final = 0.05


def marked_pids(run: str, proc: Path = PROC) -> list[int]:
    """Every live process (not a zombie) whose environment has ``MARKER=run``."""
    needle = f"{MARKER}={run}".encode()
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours to read
        if state != "Z" and needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return sorted(found)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        state = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


class Processes:
    """The demo's own processes, by name, each the leader of its process group."""

    def __init__(self, run: str, env: Mapping[str, str]) -> None:
        self.run = run
        self.env = {**env, MARKER: run}
        self.started: dict[str, subprocess.Popen[bytes]] = {}

    def start(
        self,
        name: str,
        argv: Sequence[str],
        log_file: Path,
        cwd: Path,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        if name in self.started:
            raise ValueError(f"a process named {name!r} was started already")
        with log_file.open("ab") as output:
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env={**self.env, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started[name] = process
        log.debug("started", process=name, pid=process.pid)
        return process

    def stop_all(self, grace_s: float, names: Sequence[str] | None = None) -> dict[str, int]:
        """SIGTERM every started process group (or those of ``names``) at once, wait for
        them for ``grace_s`` in all, SIGKILL what is left (a process and anything still
        in its group); the exit status of each."""
        chosen = {n: p for n, p in self.started.items() if names is None or n in names}
        for process in chosen.values():
            _signal_group(process.pid, signal.SIGTERM)
        until = time.monotonic() + grace_s
        codes = {}
        for name, process in chosen.items():
            try:
                process.wait(timeout=max(0.0, until - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("did not stop in time: killed", process=name, grace_s=grace_s)
            # Whatever is still in its group goes (a grandchild that ignored SIGTERM).
            _signal_group(process.pid, signal.SIGKILL)
            codes[name] = process.wait()
        return codes

    def sweep(self, deadline_s: float) -> list[int]:
        """Kill every process that still carries this run's marker; the pids found (a
        non-empty answer means something outlived the orderly stop). Waits, bounded,
        until none is left."""
        found: list[int] = []
        until = time.monotonic() + deadline_s
        while True:
            pids = [p for p in marked_pids(self.run) if p != os.getpid()]
            if not pids:
                return found
            found += [p for p in pids if p not in found]
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > until:
                raise RuntimeError(f"processes of this demo run survive SIGKILL: {pids}")
            time.sleep(POLL_S)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
        os.killpg(pgid, sig)
