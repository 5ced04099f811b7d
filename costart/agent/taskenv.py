"""The environment a task starts with: the agent's own, the run table's ``env``, and
its identity and peers (``COSTART_*``, which a run table may not set).

- ``COSTART_GROUP``, ``COSTART_GROUP_ID``, ``COSTART_MEMBER``, ``COSTART_TASK``,
  ``COSTART_TASKS`` (the member's desired count), ``COSTART_ATTEMPT`` (the task's),
  ``COSTART_NODE``, and with a ``port``: ``COSTART_PORT`` and ``COSTART_ADDRESS``;
- ``COSTART_PEERS``: JSON ``{member: [address of task 0, task 1, ...]}`` for every member
  of the group, and ``COSTART_PEERS_<MEMBER>`` (upper case, ``-`` as ``_``) as a
  comma-separated list. An address is ``host:port`` (``host`` alone without a port);
  a node's host is what ``--peer-host`` says, else the node's name.

The agent's own credentials (`CREDENTIALS`) are never handed on: a workload that could
read the agent's token could report for every task on its nodes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from costart.agent.model import NodeTask
from costart.domain import RunSpec
from costart.projections import MemberView

CREDENTIALS = ("COSTART_AGENT_TOKEN", "COSTART_TOKEN")


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
) -> dict[str, str]:
    run = member.run
    env = {name: value for name, value in base.items() if name not in CREDENTIALS}
    if run is not None:
        env.update(run.env)
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
