"""A node going down (docs/design.md §5): what it means for one group.

Before the start, losing a node that the group holds or is placed on releases the whole
group and retries (it is not the group's fault, so no attempt is counted). After the
start, every member (or replica) on the node fails with reason ``node-lost`` and the
failure policy decides; node-lost never consumes a restart budget.
"""

from __future__ import annotations

from costart.domain.aggregates import GroupUnit
from costart.domain.failures import fail_member
from costart.domain.states import GROUP_STARTED, GROUP_TERMINAL
from costart.domain.teardown import release_and_retry


def touches_node(unit: GroupUnit, node: str) -> bool:
    return any(a.node == node for m in unit.members for a in (*m.state.held, *m.state.assignments))


def lose_node(unit: GroupUnit, node: str, at_ns: int) -> bool:
    """Record the consequences of losing ``node``. True if anything was recorded."""
    group = unit.group.state
    if group.status in GROUP_TERMINAL or not touches_node(unit, node):
        return False
    if group.status in ("RESERVING", "PLACED"):
        release_and_retry(unit, f"node {node} lost", at_ns, counts_attempt=False)
        return True
    if group.status not in GROUP_STARTED:
        return False
    for member in unit.members:
        lost = sorted(a.index for a in member.state.assignments if a.node == node)
        if not lost:
            continue
        survivors = len(member.state.assignments) - len(lost)
        if member.state.spec.kind == "job":
            indexes: list[int | None] = [lost[0]]  # the first lost task fails the job
        elif survivors == 0:
            indexes = [None]  # every replica lost: the member fails as a whole
        else:
            indexes = [*lost]
        for index in indexes:
            if unit.group.state.status not in GROUP_STARTED:
                return True  # an earlier failure ended or restarted the group
            fail_member(unit, member.name, "node-lost", None, index, at_ns)
    return True
