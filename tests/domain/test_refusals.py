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
