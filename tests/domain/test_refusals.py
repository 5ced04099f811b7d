"""Commands refused, in the words their callers read: what was refused, in which state,
and nothing written."""

from __future__ import annotations

import pytest

from costart.domain.errors import Conflict, IllegalTransition
from tests.builders import USER, a_group, new_controller, running_controller, succeed

SPEC = a_group("g1").with_member("a").build()


@pytest.mark.parametrize("ended_by", ["cancel", "success"])
def test_an_ended_group_cannot_be_cancelled_and_nothing_is_written(ended_by: str) -> None:
    c = running_controller(SPEC)
    if ended_by == "cancel":
        c.cancel("g1", actor=USER)
    else:
        succeed(c, "g1/a")
    state = c.group("g1").status
    written = c.recorder.max_notification_id()
    with pytest.raises(IllegalTransition) as refused:
        c.cancel("g1", actor=USER)
    assert (refused.value.what, refused.value.state, refused.value.command) == (
        "group g1",
        state,
        "cancel",
    )
    assert str(refused.value) == f"group g1 is {state}: cannot cancel"
    assert c.recorder.max_notification_id() == written


def test_a_second_live_group_of_a_name_is_a_conflict_and_an_ended_ones_name_is_free() -> None:
    c = new_controller()
    c.submit(SPEC)
    with pytest.raises(Conflict) as refused:
        c.submit(SPEC)
    assert str(refused.value) == "a live group named 'g1' already exists"
    c.cancel("g1", actor=USER)
    c.submit(SPEC)
    assert c.group("g1").status == "PENDING"


def placed_unit():
    """A unit (the copies a command works on) of a placed group whose member ``a`` has
    a member claim ``gpus`` and a task claim ``dev``."""
    from costart.domain.aggregates import GroupUnit
    from tests.builders import full_placement

    spec = a_group("g1").with_member("a", tasks=2, claims=("gpus",), task_claims=("dev",)).build()
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    group = c.world.group_named("g1")
    return GroupUnit(group, c.world.members_of(group))


@pytest.mark.parametrize(
    ("claim", "task", "message"),
    [
        ("nope", None, "member a has no claim 'nope'"),
        ("dev", None, "member a has no claim 'dev'"),
        ("gpus", 0, "member a task 0 has no claim 'gpus'"),
        ("dev", 7, "member a task 7 has no claim 'dev'"),
    ],
    ids=["unknown", "task-claim-asked-of-member", "member-claim-asked-of-task", "no-such-task"],
)
def test_a_claim_failure_names_the_claim_the_member_or_task_lacks(claim, task, message) -> None:
    """The domain command's own check, below the report layer (which checks first)."""
    from costart.domain.errors import DomainError
    from costart.domain.failures import claim_failed

    unit = placed_unit()
    with pytest.raises(DomainError) as refused:
        claim_failed(unit, "a", claim, "broken", 5, attempt=1, task=task)
    assert str(refused.value) == message
    assert unit.pending_events == []


def test_cancel_stops_every_live_member_saying_why_and_names_who_asked() -> None:
    spec = a_group("g1").with_member("a").with_member("b", replicas=2).build()
    c = running_controller(spec)
    events = c.cancel("g1", actor=USER)
    assert [(type(e).__name__, getattr(e, "reason", None)) for e in events] == [
        ("MemberStopped", "group cancelled"),
        ("MemberStopped", "group cancelled"),
        ("GroupCancelled", None),
    ]
    assert all(e.actor == USER for e in events)


def test_a_member_failure_is_refused_before_the_start_and_for_a_task_never_placed() -> None:
    from costart.domain.errors import DomainError
    from costart.domain.failures import fail_member

    unit = placed_unit()
    with pytest.raises(IllegalTransition) as refused:
        fail_member(unit, "a", "error", 1, 0, 5)
    assert str(refused.value) == "group g1 is PLACED: cannot report a member failure"
    running = running_controller(a_group("g2").with_member("a", tasks=2).build())
    from costart.domain.aggregates import GroupUnit

    group = running.world.group_named("g2")
    unit = GroupUnit(group, running.world.members_of(group))
    with pytest.raises(DomainError) as missing:
        fail_member(unit, "a", "error", 1, 5, 5)
    assert str(missing.value) == "member a has no placed task 5"
    assert unit.pending_events == []
