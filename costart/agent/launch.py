"""Everything a task needs before its process starts, decided on the node: the account
it runs as, its environment with its secrets, its working directory and its log file
(docs/design.md §11, ADR 0066). A `Refused` (or a path `Escape`) here is reported as the task's
failure with reason ``refused``; nothing is started.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from costart.agent import confine
from costart.agent.accounts import Account, Accounts
from costart.agent.model import NodeTask
from costart.agent.secrets import Secrets
from costart.agent.taskenv import base_env, loader_refusal, task_env
from costart.domain import RunSpec, task_log_path
from costart.projections import MemberView


@dataclass
class Launch:
    """A prepared start: the caller owns both descriptors (`close`)."""

    account: Account
    env: dict[str, str]
    cwd_fd: int
    log_fd: int
    log_path: str  # relative to the work root

    def close(self) -> None:
        for fd in (self.cwd_fd, self.log_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


@dataclass(frozen=True)
class NodeRules:
    """What the agent's operator configured for every task on its nodes."""

    work_dir: Path
    accounts: Accounts
    secrets: Secrets
    allowed_env: Collection[str]
    host_of: Callable[[str], str]


def prepare(
    rules: NodeRules,
    task: NodeTask,
    member: MemberView,
    rows: Sequence[MemberView],
    agent_env: Mapping[str, str],
) -> Launch:
    """Resolve the task's account, environment and paths; `Refused` or
    `confine.Escape` naming why it may not run here."""
    run = member.run
    assert run is not None
    account, env = account_and_env(rules, task, member, rows, agent_env)
    log_path = task_log_path(
        run, task.group, task.group_id, task.member, task.task, task.task_attempt
    )
    cwd_fd = confine.open_dir(rules.work_dir, working_dir(run))
    try:
        log_fd = confine.open_log(rules.work_dir, log_path, account.uid, account.gid)
    except BaseException:
        os.close(cwd_fd)
        raise
    return Launch(account, env, cwd_fd, log_fd, log_path)


def account_and_env(
    rules: NodeRules,
    task: NodeTask,
    member: MemberView,
    rows: Sequence[MemberView],
    agent_env: Mapping[str, str],
) -> tuple[Account, dict[str, str]]:
    """The account the task runs as and the environment it starts with, which its exec
    probes get too; `Refused` naming why it may not run here."""
    run = member.run
    assert run is not None
    account = rules.accounts.resolve(task.owner)
    refusal = loader_refusal(run, account, rules.allowed_env)
    if refusal is not None:
        raise refusal
    secrets = rules.secrets.resolve(task.owner, run.secrets)
    env = task_env(base_env(agent_env, account), task, member, rows, rules.host_of, secrets)
    return account, env


def working_dir(run: RunSpec) -> str:
    """The task's directory, relative to the work root."""
    return run.cwd or "."
