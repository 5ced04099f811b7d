"""A task's process tree: started in its own session with its log, stopped with
SIGTERM then SIGKILL after the grace period, nothing of it left behind; exits read as
the controller should see them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from costart.agent import TaskKey, confine
from costart.agent.accounts import Accounts
from costart.agent.cgroups import TaskCgroups
from costart.agent.model import Exit
from costart.agent.processes import Supervised, classify, spawn, stop, watch_exit
from costart.agent.proctable import processes, read_proc
from tests.agent.harness import wait_until

KEY = TaskKey("gid", "m", 0, 1)
# A program that starts a grandchild in a session of its own, prints both pids, and
# (with "stubborn") ignores SIGTERM.
PARENT = """
import os, signal, subprocess, sys, time
if "stubborn" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
print(os.getpid(), child.pid, flush=True)
if "exit" in sys.argv:
    time.sleep(0.5)
    sys.exit(5)
time.sleep(600)
"""


def launch(
    key: TaskKey, kind: str, argv: list[str], env: dict[str, str], cwd: Path, log: Path
) -> Supervised:
    """`spawn` on the agent's own account, in ``cwd``, its output appended to ``log``
    (opened as the agent opens a task's log: beneath a root, no link followed)."""
    account = Accounts.agents_own(["o"], allow_root=True).resolve("o")
    cwd_fd = confine.open_dir(cwd, ".")
    log_fd = confine.open_log(
        log.parent.parent, f"{log.parent.name}/{log.name}", account.uid, account.gid
    )
    try:
        return spawn(key, kind, argv, env, cwd_fd, log_fd, None, account)
    finally:
        os.close(cwd_fd)
        os.close(log_fd)


def alive(pid: int) -> bool:
    return read_proc(pid) is not None


def started(tmp_path: Path, *args: str) -> tuple[Supervised, list[int], threading.Event]:
    log = tmp_path / "logs" / "0.attempt-1.log"
    process = launch(KEY, "job", [sys.executable, "-c", PARENT, *args], {}, tmp_path, log)
    ended = threading.Event()
    watch_exit(process, lambda _process, _code: ended.set())
    line = wait_until(lambda: log.read_text().strip(), 30, "the program printed its pids")
    pids = [int(p) for p in line.split()]
    process.track(list(processes()))
    return process, pids, ended


def test_a_stop_ends_the_whole_tree_with_sigterm(tmp_path):
    process, (leader, grandchild), ended = started(tmp_path)
    assert process.pgid == leader and alive(grandchild)
    stop(process, grace_s=10)
    assert ended.wait(10)
    wait_until(lambda: not alive(grandchild), 10, "the grandchild gone")
    assert process.stopping


def test_a_program_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path):
    process, (leader, grandchild), ended = started(tmp_path, "stubborn")
    began = time.monotonic()
    stop(process, grace_s=0.5)
    assert ended.wait(10)
    assert time.monotonic() - began >= 0.5
    wait_until(lambda: not (alive(leader) or alive(grandchild)), 10, "the tree gone")


def test_what_a_program_leaves_behind_when_it_exits_is_killed(tmp_path):
    process, (_, grandchild), ended = started(tmp_path, "exit")
    assert ended.wait(10)
    wait_until(lambda: not alive(grandchild), 10, "the orphaned grandchild gone")
    assert not process.stopping


def test_a_program_that_cannot_start_raises(tmp_path):
    with pytest.raises(OSError):
        launch(KEY, "job", ["/nonexistent/program"], {}, tmp_path, tmp_path / "x.log")


CLASSIFIED = [
    ("job", 0, 0, Exit("succeeded")),
    ("replica-set", 0, 0, Exit("exited", 0, "error", "a service exited (code 0)")),
    ("job", 3, 0, Exit("exited", 3, "error")),
    ("job", -signal.SIGKILL, 1, Exit("exited", 137, "oom", "SIGKILL: the kernel's OOM killer (1 kills)")),
    (
        "job",
        -signal.SIGTERM,
        0,
        Exit("exited", 143, "preempted", "ended by SIGTERM from outside the program (not charged to the workload)"),
    ),
    ("job", -signal.SIGSEGV, 0, Exit("exited", 139, "error", "ended by SIGSEGV")),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "code", "ooms", "expected"), CLASSIFIED)
def test_how_an_exit_reads(kind, code, ooms, expected):
    assert classify(kind, code, ooms) == expected


def test_oom_kills_are_read_from_the_tasks_cgroup_memory_events(tmp_path):
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.procs").write_text("")
    cgroups = TaskCgroups(root)
    path = cgroups.create(KEY)
    assert path is not None and path.parent == root
    assert TaskCgroups.oom_kills(path) == 0
    (path / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 2\noom_kill 1\n")
    assert TaskCgroups.oom_kills(path) == 1
    with pytest.raises(ValueError, match="not a cgroup v2 directory"):
        TaskCgroups(tmp_path)


IDENTITY_ENV = {
    "COSTART_GROUP_ID": "gid",
    "COSTART_MEMBER": "m",
    "COSTART_TASK": "0",
    "COSTART_ATTEMPT": "1",
}


def test_an_orphan_in_its_own_session_the_agent_never_saw_is_found_by_its_identity(tmp_path):
    """The leader starts a grandchild in a session of its own and exits before the agent
    ever tracked the tree (a task failing at once): only the identity the grandchild
    inherited in its environment ties it to the task, and the teardown ends it. A
    process of another attempt of the same task is left alone."""
    other = {**os.environ, **IDENTITY_ENV, "COSTART_ATTEMPT": "2"}
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env=other)
    try:
        log = tmp_path / "logs" / "0.attempt-1.log"
        env = {**os.environ, **IDENTITY_ENV}
        argv = [sys.executable, "-c", PARENT, "exit"]
        process = launch(KEY, "job", argv, env, tmp_path, log)
        ended = threading.Event()
        watch_exit(process, lambda _process, _code: ended.set())
        assert ended.wait(30)  # never tracked: the leader is gone before anyone looked
        _, grandchild = (int(p) for p in log.read_text().split())
        wait_until(lambda: not alive(grandchild), 10, "the orphaned grandchild gone")
        assert bystander.poll() is None  # another attempt's process is not this task's
    finally:
        bystander.kill()
        bystander.wait()


def test_a_reaped_leaders_pid_names_nothing_of_the_task_any_more(tmp_path):
    # After the leader is reaped its pid and group id may belong to an unrelated
    # process: stand one in for that reuse and check a late teardown leaves it alone.
    process = launch(
        KEY, "job", [sys.executable, "-c", "pass"], {}, tmp_path, tmp_path / "l" / "x.log"
    )
    codes: list[int] = []
    watch_exit(process, lambda _p, code: codes.append(code))
    wait_until(lambda: codes, 10, "the task to exit")
    assert process.reaped
    unrelated = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        process.pid = process.pgid = unrelated.pid  # what a reused pid would look like
        assert process.kill_tree(signal.SIGKILL) == set()
        assert unrelated.poll() is None
    finally:
        unrelated.kill()
        unrelated.wait()


def test_an_exit_collected_elsewhere_still_ends_the_task() -> None:
    """Another wait already reaped the leader (the exit watcher's ``waitid`` then finds
    no child): the watcher still tears down, reaps and calls back, so the task ends."""
    popen = subprocess.Popen(["/bin/sh", "-c", "exit 3"], start_new_session=True)
    popen.wait()
    process = Supervised(KEY, "job", popen, None)
    codes: list[int] = []
    watch_exit(process, lambda _p, code: codes.append(code))
    assert process.exited.wait(10)
    assert codes == [3]
