"""The domain's errors read as a user reads them: the field or rule, the place, and why."""

from __future__ import annotations

from costart.domain.errors import IllegalTransition, InvariantViolation, SpecError


def test_a_spec_error_names_its_field_before_the_reason_unless_it_has_none() -> None:
    named = SpecError("members[1].tasks", "must be a positive count (got 0)")
    assert (named.path, named.reason) == ("members[1].tasks", "must be a positive count (got 0)")
    assert str(named) == "members[1].tasks: must be a positive count (got 0)"
    whole = SpecError("", "spec is 70000 bytes; the limit is 65536")
    assert str(whole) == "spec is 70000 bytes; the limit is 65536"


def test_an_invariant_violation_names_the_rule_the_group_and_the_member_if_any() -> None:
    member = InvariantViolation("all-or-nothing", "g1", "trainer", "started before barrier")
    assert (member.rule, member.group, member.member, member.detail) == (
        "all-or-nothing",
        "g1",
        "trainer",
        "started before barrier",
    )
    assert str(member) == (
        "invariant all-or-nothing violated in group g1 member trainer: started before barrier"
    )
    group = InvariantViolation("no-leaked-holds", "g2", None, "2 holds after release")
    assert group.member is None
    assert str(group) == "invariant no-leaked-holds violated in group g2: 2 holds after release"


def test_an_illegal_transition_says_what_it_is_and_what_cannot_be_done() -> None:
    refused = IllegalTransition("group g1", "RUNNING", "place")
    assert (refused.what, refused.state, refused.command) == ("group g1", "RUNNING", "place")
    assert str(refused) == "group g1 is RUNNING: cannot place"
