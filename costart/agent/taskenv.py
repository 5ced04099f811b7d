"""The environment a task starts with: the agent's own, the run table's ``env``, and
its identity and peers (``COSTART_*``, which a run table may not set).

- ``COSTART_GROUP``, ``COSTART_GROUP_ID``, ``COSTART_MEMBER``, ``COSTART_TASK``,
  ``COSTART_TASKS`` (the member's desired count), ``COSTART_ATTEMPT`` (the task's),
  ``COSTART_NODE``, and with a ``port``: ``COSTART_PORT`` and ``COSTART_ADDRESS``;
- ``COSTART_PEERS``: JSON ``{member: [address of task 0, task 1, ...]}`` for every member
  of the group, and ``COSTART_PEERS_<MEMBER>`` (upper case, ``-`` as ``_``) as a
  comma-separated list. An address is ``host:port`` (``host`` alone without a port);
  a node's host is what ``--peer-host`` says, else the node's name.

The base a task starts from (`base_env`): on the agent's own account, the agent's
environment; on another account, only what describes the machine (``PATH``, locale,
``TZ``, ``TERM``) and the account (``HOME``, ``USER``, ``LOGNAME``). The agent's own
credentials (`CREDENTIALS`) are never handed on: a workload that could read the agent's
token could report for every task on its nodes.

On a shared account (root, the agent's own, or one mapped for several owners) a run
table may not set a name that changes how programs load (`LOADER_NAMES`, ``LD_*``)
unless the operator allows it (``--allow-env NAME``): the task is refused
(`loader_refusal`). On an owner's own account the environment is the owner's business.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence

from costart.agent.accounts import Account
from costart.agent.model import NodeTask, Refused
from costart.domain import RunSpec
from costart.projections import MemberView

CREDENTIALS = ("COSTART_AGENT_TOKEN", "COSTART_TOKEN")
# What another account inherits from the agent: how the machine is, never who the agent is.
MACHINE_NAMES = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "TERM"})
# Names that change which code a program loads or runs at start.
LOADER_NAMES = frozenset(
    {
        "PATH", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "GCONV_PATH", "LOCPATH", "NLSPATH",
        "HOSTALIASES", "RESOLV_HOST_CONF", "MALLOC_CHECK_", "TMPDIR",
        "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONINSPECT",
        "PERL5LIB", "PERLLIB", "PERL5OPT", "RUBYLIB", "RUBYOPT", "NODE_OPTIONS",
        "NODE_PATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
    }
)  # fmt: skip
LOADER_PREFIXES = ("LD_", "DYLD_", "GLIBC_", "GCONV_")


def base_env(agent_env: Mapping[str, str], account: Account) -> dict[str, str]:
    """What a task of ``account`` starts from, before its run table (module docstring)."""
    if not account.switches:
        return {name: value for name, value in agent_env.items() if name not in CREDENTIALS}
    env = {
        name: value
        for name, value in agent_env.items()
        if name in MACHINE_NAMES or name.startswith("LC_")
    }
    if account.home:
        env["HOME"] = account.home
    if account.name:
        env["USER"] = env["LOGNAME"] = account.name
    return env


def changes_loading(name: str) -> bool:
    return name in LOADER_NAMES or name.startswith(LOADER_PREFIXES)


def loader_refusal(run: RunSpec, account: Account, allowed: Collection[str]) -> Refused | None:
    """Why the run table's ``env`` may not be given to a task on a shared account (None:
    it may)."""
    if not account.shared:
        return None
    names = [name for name, _ in run.env if changes_loading(name) and name not in allowed]
    if not names:
        return None
    return Refused(
        f"env {', '.join(names)} would change how programs load on the shared account "
        f"{account.describe()}; the agent allows such names only with --allow-env"
    )


def address(host: str, run: RunSpec | None, index: int) -> str:
    if run is None or run.port is None:
        return host
    return f"{host}:{run.port + index}"


def peers(members: Sequence[MemberView], host_of: Callable[[str], str]) -> dict[str, list[str]]:
    """Each member's task addresses, in task order (placed tasks only)."""
    found: dict[str, list[str]] = {}
    for member in members:
        tasks = sorted(member.tasks, key=lambda t: t.index)
        found[member.name] = [address(host_of(t.node), member.run, t.index) for t in tasks]
    return found


def env_name(member: str) -> str:
    return "COSTART_PEERS_" + member.upper().replace("-", "_")


def task_env(
    base: Mapping[str, str],
    task: NodeTask,
    member: MemberView,
    members: Sequence[MemberView],
    host_of: Callable[[str], str],
    secrets: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``base`` (`base_env`), the run table's ``env``, the resolved ``secrets``, and the
    task's identity and peers, which nothing before may set."""
    run = member.run
    env = {name: value for name, value in base.items() if name not in CREDENTIALS}
    if run is not None:
        env.update(run.env)
    env.update(secrets or {})
    env.update(
        {
            "COSTART_GROUP": task.group,
            "COSTART_GROUP_ID": task.group_id,
            "COSTART_MEMBER": task.member,
            "COSTART_TASK": str(task.task),
            "COSTART_TASKS": str(member.desired),
            "COSTART_ATTEMPT": str(task.task_attempt),
            "COSTART_NODE": task.node,
        }
    )
    if run is not None and run.port is not None:
        env["COSTART_PORT"] = str(run.port + task.task)
        env["COSTART_ADDRESS"] = address(host_of(task.node), run, task.task)
    found = peers(members, host_of)
    env["COSTART_PEERS"] = json.dumps(found, sort_keys=True)
    for name, addresses in sorted(found.items()):
        env[env_name(name)] = ",".join(addresses)
    return env
