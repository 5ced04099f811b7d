"""A stand-in for the host's node agents and claim drivers, for the demo and for
`costart serve` on a laptop (its simulated claim driver). Real hosts report for
themselves; these helpers report what a well-behaved one would."""

from __future__ import annotations

from costart.controller import Controller, split_member_ref
from costart.domain.actors import Actor

CLAIM_DRIVER = Actor.host("claim-driver")
"""Who readies claims when nothing real does."""


def current_attempt(controller: Controller, ref: str) -> int:
    """The member's current placement attempt (``"GROUP/MEMBER"``)."""
    group, member = split_member_ref(ref)
    return controller.world.member_named(controller.group(group), member).attempt


def agent_of_task(controller: Controller, ref: str, index: int) -> Actor:
    """The agent of the node the member's task ``index`` runs on."""
    group, member = split_member_ref(ref)
    task = controller.world.member_named(controller.group(group), member).task(index)
    if task is None:
        raise ValueError(f"{ref} has no task {index}")
    return Actor.agent(task.node)


def start_placed_tasks(controller: Controller, ref: str) -> int:
    """What each node's agent does once `may_start` says yes: start the member's placed
    tasks of its current attempt, each reported by the agent of its node. Returns how
    many reports were applied."""
    group, member = split_member_ref(ref)
    state = controller.world.member_named(controller.group(group), member)
    placed = [t for t in state.tasks if t.status == "PLACED" and t.attempt == state.attempt]
    applied = 0
    for task in placed:
        report = controller.task_started(
            ref, task.index, task.attempt, actor=Actor.agent(task.node)
        )
        applied += report.outcome == "applied"
    return applied
