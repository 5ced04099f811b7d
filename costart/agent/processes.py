"""Running one task as a local process tree, and reading how it ended.

Each task runs in its own session (so its process group is its own), with its output
appended to its log file, dying with the agent's main thread (``PR_SET_PDEATHSIG``:
an agent that is killed leaves no supervised-less task behind; the restarted agent
reports the task lost), and in its own cgroup when the agent has a cgroup root. A stop
is SIGTERM to the whole tree, then SIGKILL to whatever is left after the grace period;
a process that exits on its own has what it left behind killed too, so nothing of a
task outlives it. "The whole tree" is the task's process group, its descendants, those
seen in it before, and every process carrying the task attempt's identity in its
environment (a descendant that made its own session and was orphaned before the agent
looked is found only by that).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import structlog

from costart.agent import proctable
from costart.agent.accounts import Account
from costart.agent.cgroups import TaskCgroups
from costart.agent.model import Exit, TaskKey

log = structlog.get_logger("costart.agent")
_PR_SET_PDEATHSIG = 1
_prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform == "linux" else None
# Signals that come from outside a program (a person, a script, the system): an exit by
# one of them is not the workload's fault. SIGSEGV, SIGABRT, SIGBUS... are its own.
OUTSIDE_SIGNALS = frozenset(
    {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT}
)
KILL_WAIT_S = 5.0
# What a task's processes carry in their environment (set by `taskenv`) that names the
# task attempt alone: a teardown also reaches a descendant the process tree lost.
IDENTITY = ("COSTART_GROUP_ID", "COSTART_MEMBER", "COSTART_TASK", "COSTART_ATTEMPT")


class Supervised:
    """One running task process: its key, its tree, and whether the agent stopped it."""

    def __init__(
        self,
        key: TaskKey,
        kind: str,
        popen: subprocess.Popen[bytes],
        cgroup: Path | None,
        marks: Mapping[str, str] | None = None,
    ) -> None:
        """``marks``: the task's identity in its environment (`IDENTITY`), if it has one."""
        self.key = key
        self.marks = dict(marks or {})
        self.kind = kind
        self.popen = popen
        self.pid = popen.pid
        self.pgid = popen.pid  # start_new_session: the leader's pid is its group's id
        self.cgroup = cgroup
        self.stopping = False
        self.exited = threading.Event()
        self.known: dict[int, int] = {}  # pid -> start ticks of every process seen in its tree
        # Until the leader is reaped its pid, and so its process group's id, cannot be
        # given to another process; after, an unrelated process may have either. So the
        # exit watcher waits without reaping, tears down, then reaps (under the lock).
        self.reaped = False
        self._lock = threading.Lock()

    def _tree(self, table: list[proctable.Proc]) -> set[int]:
        """The leader's group and descendants, while its pid still names it (the caller
        holds the lock)."""
        return set() if self.reaped else proctable.tree(self.pid, self.pgid, table)

    def reap(self) -> int:
        """Collect the leader's exit status; from now on its pid names nothing of ours."""
        with self._lock:
            code = self.popen.wait()
            self.reaped = True
        return code

    def track(self, table: list[proctable.Proc]) -> None:
        """Remember the tree as it is now: a descendant in a session of its own is
        orphaned when the task's leader exits, and is found again by this."""
        ticks = {p.pid: p.start_ticks for p in table}
        with self._lock:
            for pid in self._tree(table):
                self.known[pid] = ticks.get(pid, 0)

    def kill_tree(self, signum: int) -> set[int]:
        """Signal every process of the task: its tree while the leader's pid is still
        ours, what was seen in it (same pid and start time), what carries its identity."""
        with self._lock:
            table = list(proctable.processes())
            pids = self._tree(table)
            pids |= {p.pid for p in table if self.known.get(p.pid) == p.start_ticks}
            pids |= proctable.marked(self.marks, table)
            proctable.signal_all(pids, signum)
        if signum == signal.SIGKILL:
            TaskCgroups.kill(self.cgroup)
        return pids


def spawn(
    key: TaskKey,
    kind: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd_fd: int,
    log_fd: int,
    cgroup: Path | None,
    account: Account,
) -> Supervised:
    """Start the task's process as ``account`` (raises OSError if it cannot be started,
    `subprocess.SubprocessError` if the account cannot enter ``cwd_fd``).

    ``cwd_fd`` and ``log_fd`` are descriptors the agent opened beneath its work root
    (`costart.agent.confine`): the child changes into ``cwd_fd`` after it has become the
    task's account, so the directory is entered with the task's permissions, and its
    output goes to ``log_fd``. Neither descriptor, nor any other of the agent's, is left
    open in the program."""
    join_fd = TaskCgroups.join_fd(cgroup)

    def in_child() -> None:
        # Between fork and exec, after the switch to the task's account (Popen's user,
        # group and extra_groups come first): a few system calls, no locks taken. The
        # parent-death signal is set here because a credential change clears it.
        os.fchdir(cwd_fd)
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if join_fd is not None:
            # The descriptor was opened by the agent: the kernel checks the opener.
            os.write(join_fd, b"0")

    # No pass_fds: preexec_fn runs before the child closes what it does not keep, and
    # the program gets neither descriptor.
    try:
        popen = subprocess.Popen(
            list(argv),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=in_child,  # noqa: PLW1509 - see in_child
            **account.popen_kwargs(),
        )
    finally:
        if join_fd is not None:
            os.close(join_fd)
    marks = {name: env[name] for name in IDENTITY if name in env}
    return Supervised(key, kind, popen, cgroup, marks if len(marks) == len(IDENTITY) else None)


def watch_exit(process: Supervised, on_exit: Callable[[Supervised, int], None]) -> None:
    """Wait for the process in a thread; then end what it left behind and call back."""

    def wait() -> None:
        # Exited, not yet reaped: the leader's pid and group stay ours while we tear down.
        try:
            os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            # Already collected by another wait on it (its status is then the Popen's):
            # the teardown and the callback still run, or the task would never end.
            log.warning("task's exit was collected elsewhere", task=str(process.key))
        leftovers = process.kill_tree(signal.SIGKILL)
        code = process.reap()
        if leftovers:
            log.info("killed what the task left behind", task=str(process.key), pids=len(leftovers))
        process.exited.set()
        on_exit(process, code)

    threading.Thread(target=wait, name=f"wait-{process.pid}", daemon=True).start()


def stop(process: Supervised, grace_s: float) -> None:
    """SIGTERM to the tree, SIGKILL after ``grace_s`` (in a thread; the exit watcher
    sees the end). The agent's own signals are never reported as the task's failure."""
    process.stopping = True

    def run() -> None:
        process.kill_tree(signal.SIGTERM)
        if not process.exited.wait(grace_s):
            pids = process.kill_tree(signal.SIGKILL)
            log.info("grace period over: killed", task=str(process.key), pids=len(pids))
        process.exited.wait(KILL_WAIT_S)

    threading.Thread(target=run, name=f"stop-{process.pid}", daemon=True).start()


def classify(kind: str, returncode: int, oom_kills: int) -> Exit:
    """How an exit that the agent did not cause reads to the controller."""
    if returncode == 0:
        if kind == "job":
            return Exit("succeeded")
        return Exit("exited", 0, "error", "a service exited (code 0)")
    if returncode > 0:
        return Exit("exited", returncode, "error")
    signum = -returncode
    name = signal.Signals(signum).name if signum in signal.valid_signals() else str(signum)
    code = 128 + signum
    if oom_kills:
        return Exit("exited", code, "oom", f"{name}: the kernel's OOM killer ({oom_kills} kills)")
    if signum in OUTSIDE_SIGNALS:
        return Exit(
            "exited",
            code,
            "preempted",
            f"ended by {name} from outside the program (not charged to the workload)",
        )
    return Exit("exited", code, "error", f"ended by {name}")
