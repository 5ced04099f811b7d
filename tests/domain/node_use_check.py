"""The World's kept use per node (`World.node_use`) against a plain recount, for the
stateful tests to check after every step (ADR 0148)."""

from __future__ import annotations

from collections import Counter

from costart.domain.world import World

Vec = tuple[int, int, int]

CHECKS: Counter[str] = Counter()
"""How often a use kept by the folds was compared, and how often one counted afresh on
its read (the World kept none: a restored World before its first read)."""


def plain_node_use(world: World) -> dict[str, Vec]:
    """Per node name, every live group's members' held and placed tasks, summed task by
    task (nodes with nothing used left out)."""
    use: dict[str, Vec] = {}
    for group in world.live_groups():
        for member in world.members_of(group):
            shape = member.spec.shape
            for task in (*member.held, *member.assignments):
                g, c, m = use.get(task.node, (0, 0, 0))
                use[task.node] = (g + shape.gpu, c + shape.cpu, m + shape.mem_gb)
    return {node: vec for node, vec in use.items() if vec != (0, 0, 0)}


def check_node_use(world: World) -> None:
    """The World's use per node equals the plain recount."""
    CHECKS["kept" if world._node_use is not None else "counted afresh"] += 1
    kept = world.node_use.as_dict()
    plain = plain_node_use(world)
    assert kept == plain, (
        f"use per node kept {sorted(kept.items())} != recounted {sorted(plain.items())}"
    )
