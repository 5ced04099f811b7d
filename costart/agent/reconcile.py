"""The agent's decision, as a pure function: what the server wants on our nodes
against what we run. Level-triggered: the loop calls it after every watch event, every
exit and every resync, so a missed event only delays a step, never loses one."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple

from costart.agent.model import NodeTask, TaskKey

LIVE_TASK_STATES = frozenset({"PLACED", "RUNNING"})


class ReconcilePlan(NamedTuple):
    start: list[NodeTask]
    """Tasks that may start now and were never launched (by this agent or its
    predecessor on this state directory)."""
    stop: list[TaskKey]
    """Processes whose task left the node or ended on the server (released, failed,
    cancelled, the group succeeded): torn down, not reported."""
    lost: list[tuple[NodeTask, str]]
    """Tasks the server thinks run here that no process of ours runs: reported failed
    with the note."""
    forget: list[TaskKey]
    """Launch records of runs that are over and gone from the node."""


def plan(
    desired: Sequence[NodeTask],
    running: Collection[TaskKey],
    launched_now: Collection[TaskKey],
    launched_before: Collection[TaskKey],
    unreported: Collection[TaskKey],
) -> ReconcilePlan:
    """``running``: our live processes; ``launched_now``/``launched_before``: runs this
    agent / a previous agent on this state directory launched; ``unreported``: runs
    that ended with a report not yet accepted."""
    wanted = {t.key: t for t in desired}
    start: list[NodeTask] = []
    lost: list[tuple[NodeTask, str]] = []
    for task in desired:
        key = task.key
        if key in running or key in unreported or key in launched_now:
            continue
        if task.task_state == "RUNNING":
            why = (
                "its agent restarted and no longer runs it"
                if key in launched_before
                else f"the agent of node {task.node} does not run it"
            )
            lost.append((task, why))
        elif task.task_state == "PLACED" and key in launched_before:
            lost.append(
                (task, "its agent restarted after launching it, before it reported the start")
            )
        elif task.task_state == "PLACED" and task.may_start:
            start.append(task)
    stop = [
        key
        for key in sorted(running)
        if key not in wanted or wanted[key].task_state not in LIVE_TASK_STATES
    ]
    forget = [
        key
        for key in sorted({*launched_now, *launched_before})
        if key not in wanted and key not in running and key not in unreported
    ]
    return ReconcilePlan(start, stop, lost, forget)
