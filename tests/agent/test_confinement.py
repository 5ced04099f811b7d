"""What the agent does before a task starts, on the node: paths opened beneath the work
root without following links, secrets read for the owner only, the environment of
another account, and the process itself run as that account (docs/design.md §11, ADR 0066)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from costart.agent import TaskKey, confine
from costart.agent.accounts import Account, Accounts
from costart.agent.cgroups import TaskCgroups
from costart.agent.model import NodeTask, Refused
from costart.agent.processes import spawn, watch_exit
from costart.agent.secrets import Secrets, SecretsError
from costart.agent.taskenv import base_env, loader_refusal, task_env
from costart.domain import RunSpec
from costart.projections import MemberView
from tests.agent.harness import wait_until
from tests.agent.root import ALICE_UID, SHARED_GID, require_root

KEY = TaskKey("gid", "m", 0, 1)
ALICE = Account("alice", ALICE_UID, SHARED_GID, (SHARED_GID,), None, None, False)


# --- paths beneath the work root ------------------------------------------------------


def test_a_log_file_is_made_beneath_the_root_and_given_to_the_tasks_account(tmp_path):
    fd = confine.open_log(tmp_path, "logs/g-1/m/0.attempt-1.log", os.geteuid(), os.getegid())
    os.write(fd, b"hello\n")
    os.close(fd)
    path = tmp_path / "logs" / "g-1" / "m" / "0.attempt-1.log"
    assert path.read_bytes() == b"hello\n"
    assert oct(path.stat().st_mode & 0o777) == oct(confine.LOG_MODE)


def test_a_log_file_is_owned_by_the_tasks_account(tmp_path):
    require_root()
    fd = confine.open_log(tmp_path, "logs/0.log", ALICE_UID, SHARED_GID)
    os.close(fd)
    info = (tmp_path / "logs" / "0.log").stat()
    assert (info.st_uid, info.st_gid) == (ALICE_UID, SHARED_GID)


def test_a_symlink_planted_on_the_way_to_a_log_is_never_followed(tmp_path):
    root, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "logs").symlink_to(elsewhere)  # a task replaced the log directory
    with pytest.raises(confine.Escape, match="symlink"):
        confine.open_log(root, "logs/g-1/m/0.attempt-1.log", os.geteuid(), os.getegid())
    assert list(elsewhere.iterdir()) == []


def test_a_symlink_or_hard_link_planted_as_the_log_file_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "0.log").symlink_to(victim)
    with pytest.raises(confine.Escape, match="symlink"):
        confine.open_log(tmp_path, "logs/0.log", os.geteuid(), os.getegid())
    os.link(victim, tmp_path / "logs" / "1.log")
    with pytest.raises(confine.Escape, match="one link"):
        confine.open_log(tmp_path, "logs/1.log", os.geteuid(), os.getegid())
    assert victim.read_text() == "keep"


def test_a_log_file_of_another_account_is_not_appended_to(tmp_path):
    require_root()
    (tmp_path / "logs").mkdir()
    other = tmp_path / "logs" / "0.log"
    other.write_text("bob's")
    os.chown(other, ALICE_UID + 1, ALICE_UID + 1)
    with pytest.raises(confine.Escape, match="owned by uid"):
        confine.open_log(tmp_path, "logs/0.log", ALICE_UID, SHARED_GID)


@pytest.mark.parametrize("relative", ["/etc", "../x", "a/../../b"])
def test_a_path_that_leaves_the_root_is_refused(tmp_path, relative):
    with pytest.raises(confine.Escape):
        confine.open_dir(tmp_path, relative)


def test_a_working_directory_must_exist_and_is_not_a_link(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("/etc")
    os.close(confine.open_dir(tmp_path, "real"))
    with pytest.raises(confine.Escape, match="symlink"):
        confine.open_dir(tmp_path, "link")
    with pytest.raises(confine.Escape, match="no such directory"):
        confine.open_dir(tmp_path, "missing")


# --- secrets ---------------------------------------------------------------------------


@pytest.fixture
def secrets_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "secrets"
    (directory / "alice" / "team-a").mkdir(parents=True)
    (directory / "bob").mkdir(parents=True)
    (directory / "alice" / "team-a" / "openai").write_text("sk-alice-value\n")
    (directory / "bob" / "key").write_text("sk-bob-value")
    directory.chmod(0o700)
    return directory


def test_a_secret_is_read_for_its_owner_one_trailing_newline_dropped(secrets_dir):
    values = Secrets(secrets_dir).resolve("alice", [("API_KEY", "team-a/openai")])
    assert values == {"API_KEY": "sk-alice-value"}


def test_an_owner_cannot_reach_another_owners_secret(secrets_dir):
    secrets = Secrets(secrets_dir)
    with pytest.raises(Refused, match="no such file"):
        secrets.resolve("alice", [("K", "key")])  # bob's name, looked up under alice
    (secrets_dir / "alice" / "stolen").symlink_to(secrets_dir / "bob" / "key")
    with pytest.raises(Refused, match="symlink"):
        secrets.resolve("alice", [("K", "stolen")])
    with pytest.raises(Refused, match=re.escape("'..'")):
        secrets.resolve("alice", [("K", "../bob/key")])


def test_secrets_need_a_source_and_a_source_only_its_owner_may_write(tmp_path, secrets_dir):
    with pytest.raises(Refused, match=r"names secrets \(K\) and this node has no secrets"):
        Secrets(None).resolve("alice", [("K", "team-a/openai")])
    assert Secrets(None).resolve("alice", []) == {}
    secrets_dir.chmod(0o777)
    with pytest.raises(SecretsError, match="writable by group or others"):
        Secrets(secrets_dir)
    with pytest.raises(SecretsError, match="No such file"):
        Secrets(tmp_path / "none")


# --- the environment -----------------------------------------------------------------


def member(run: RunSpec) -> MemberView:
    return MemberView(
        group="g", group_id="gid", name="m", index=0, kind="job", owner="alice", profile="",
        state="PLACED", desired=1, min_start=1, min_running=1, run=run,
    )  # fmt: skip


def test_another_account_starts_from_the_machine_not_the_agent():
    agent = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "HOME": "/root",
        "AGENT_ONLY": "x",
        "COSTART_AGENT_TOKEN": "t" * 20,
    }
    named = ALICE._replace(name="alice", home="/home/alice")
    env = base_env(agent, named)
    assert env == {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "HOME": "/home/alice",
        "USER": "alice",
        "LOGNAME": "alice",
    }
    own = Accounts.agents_own(["ops"], allow_root=True).resolve("ops")
    assert base_env(agent, own) == {k: v for k, v in agent.items() if k != "COSTART_AGENT_TOKEN"}


def test_loader_names_are_refused_on_a_shared_account_unless_allowed():
    run = RunSpec(
        argv=("x",), grace_ns=1, log_dir="l", env=(("LD_PRELOAD", "/x.so"), ("PATH", "/x"))
    )
    shared = ALICE._replace(shared=True)
    refusal = loader_refusal(run, shared, ())
    assert refusal is not None and "env LD_PRELOAD, PATH would change how programs load" in str(
        refusal
    )
    assert "PATH" in str(loader_refusal(run, shared, ("LD_PRELOAD",)))
    assert loader_refusal(run, shared, ("LD_PRELOAD", "PATH")) is None
    assert loader_refusal(run, ALICE, ()) is None  # the owner's own account: its business


def test_secrets_enter_the_environment_but_not_over_the_tasks_identity():
    run = RunSpec(argv=("x",), grace_ns=1, log_dir="l", secrets=(("API_KEY", "a/b"),))
    task = NodeTask("g", "m", 0, "n1", 1, "job", "PLACED", True, "gid", owner="alice")
    env = task_env({}, task, member(run), [], lambda n: n, {"API_KEY": "v"})
    assert env["API_KEY"] == "v" and env["COSTART_TASK"] == "0"


# --- the process as the task's account --------------------------------------------------


def run_as(account: Account, tmp_path: Path, script: str, cgroup: Path | None = None) -> str:
    """Run ``sh -c script`` as ``account`` in ``tmp_path/work``; its output."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    work.chmod(0o755)
    tmp_path.chmod(0o755)
    cwd_fd = confine.open_dir(work, ".")
    log_fd = confine.open_log(work, "logs/0.log", account.uid, account.gid)
    try:
        process = spawn(KEY, "job", ["/bin/sh", "-c", script], {}, cwd_fd, log_fd, cgroup, account)
    finally:
        os.close(cwd_fd)
        os.close(log_fd)
    codes: list[int] = []
    watch_exit(process, lambda _p, code: codes.append(code))
    wait_until(lambda: codes, 10, "the task to exit")
    assert codes == [0], (work / "logs" / "0.log").read_text()
    return (work / "logs" / "0.log").read_text()


def test_a_task_runs_as_its_account_in_its_directory_with_no_agent_descriptor(tmp_path):
    require_root()
    out = run_as(ALICE, tmp_path, "id -u; id -g; id -G; pwd; ls /proc/self/fd")
    uid, gid, groups, cwd, *fds = out.split()
    assert (int(uid), int(gid), groups) == (ALICE_UID, SHARED_GID, str(SHARED_GID))
    assert cwd == str(tmp_path / "work")
    assert sorted(fds) == ["0", "1", "2", "3"]  # 3: the directory `ls` itself reads


def test_an_account_that_may_not_enter_its_directory_does_not_start(tmp_path):
    require_root()
    work = tmp_path / "work"
    (work / "private").mkdir(parents=True)
    (work / "private").chmod(0o700)  # root's: alice may not enter
    cwd_fd = confine.open_dir(work, "private")
    log_fd = confine.open_log(work, "0.log", ALICE_UID, SHARED_GID)
    try:
        with pytest.raises(subprocess.SubprocessError):
            spawn(KEY, "job", ["/bin/true"], {}, cwd_fd, log_fd, None, ALICE)
    finally:
        os.close(cwd_fd)
        os.close(log_fd)


def _cgroup2_root() -> Path | None:
    for line in Path("/proc/mounts").read_text().splitlines():
        fields = line.split()
        if fields[2] == "cgroup2":
            return Path(fields[1])
    return None


@pytest.fixture
def cgroup_root() -> Iterator[Path]:
    """A fresh cgroup v2 directory delegated to the test (root only)."""
    require_root()
    mount = _cgroup2_root()
    if mount is None:
        pytest.skip("no cgroup v2 hierarchy is mounted on this machine")
    path = mount / f"costart-test-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    try:
        yield path
    finally:
        for child in sorted(path.iterdir()):
            if child.is_dir():
                TaskCgroups.kill(child)
                wait_until(
                    lambda c=child: not (c / "cgroup.procs").read_text().strip(), 10, "empty"
                )
                child.rmdir()
        path.rmdir()


def test_a_task_run_as_its_account_still_joins_its_cgroup(tmp_path, cgroup_root):
    cgroup = TaskCgroups(cgroup_root).create(KEY)
    assert cgroup is not None
    out = run_as(ALICE, tmp_path, "id -u; cat /proc/self/cgroup", cgroup=cgroup)
    assert out.split()[0] == str(ALICE_UID)
    assert f"0::/{cgroup_root.name}/{cgroup.name}" in out.splitlines()


def test_a_kill_through_the_cgroup_reaches_a_task_of_another_account(tmp_path, cgroup_root):
    cgroup = TaskCgroups(cgroup_root).create(KEY)
    work = tmp_path / "work"
    work.mkdir()
    tmp_path.chmod(0o755)
    cwd_fd = confine.open_dir(work, ".")
    log_fd = confine.open_log(work, "0.log", ALICE_UID, SHARED_GID)
    try:
        process = spawn(KEY, "job", ["/bin/sleep", "60"], {}, cwd_fd, log_fd, cgroup, ALICE)
    finally:
        os.close(cwd_fd)
        os.close(log_fd)
    codes: list[int] = []
    watch_exit(process, lambda _p, code: codes.append(code))
    TaskCgroups.kill(cgroup)
    wait_until(lambda: codes, 10, "the task to be killed")
    assert codes == [-signal.SIGKILL]
