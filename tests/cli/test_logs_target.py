"""`costart logs` takes its target as GROUP[/MEMBER[/TASK]], and back what ``-o name``
printed (``group/NAME``, ``member/GROUP/MEMBER``)."""

from __future__ import annotations

import pytest

from costart.cli.exits import UsageError
from costart.cli.logs_view import parse_target


@pytest.mark.parametrize(
    ("given", "parsed"),
    [
        ("grpo", ("grpo", None, None)),
        ("grpo/rollout", ("grpo", "rollout", None)),
        ("grpo/rollout/3", ("grpo", "rollout", 3)),
        ("group/grpo", ("grpo", None, None)),
        ("groups/grpo", ("grpo", None, None)),
        ("member/grpo/rollout", ("grpo", "rollout", None)),
        ("members/grpo/rollout/0", ("grpo", "rollout", 0)),
    ],
)
def test_a_target_and_what_o_name_printed_are_taken(given, parsed):
    assert parse_target(given) == parsed


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("grpo/rollout/x", "not an index"),
        ("Grpo", "not a valid group name"),
        ("grpo/Roll", "not a valid member name"),
        ("a/b/1/2", "expected GROUP"),
        ("group/", "not a valid group name"),
    ],
)
def test_a_bad_target_names_the_part_at_fault(given, said):
    with pytest.raises(UsageError, match=said):
        parse_target(given)
