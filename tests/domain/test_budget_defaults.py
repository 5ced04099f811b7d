"""Budgets a spec leaves out, and what ``0`` means in each (ADR 0071): a budget counts
what it allows, 0 allows none; a restart rule without a budget gets a finite default
(recorded resolved in the spec), never a silent zero; ``placement.max_attempts`` is left
out for no limit and may not be 0."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from costart.domain.errors import SpecError
from costart.domain.policy import decide_action
from costart.domain.spec import spec_from_object
from costart.domain.spec_types import (
    DEFAULT_MAX_GROUP_RESTARTS,
    DEFAULT_MAX_RESTARTS,
    NO_ATTEMPT_LIMIT,
)

# The spec: 8 rollout replicas, min_running 6, a restart rule without a budget.
BASE: dict[str, Any] = {
    "name": "grpo",
    "owner": "alice",
    "members": [
        {"name": "trainer", "kind": "job", "tasks": 1, "shape": {"gpu": 8}},
        {
            "name": "rollout",
            "kind": "replica-set",
            "replicas": 8,
            "min_running": 6,
            "shape": {"gpu": 1},
        },
    ],
    "failure": {"rules": [{"members": ["rollout"], "action": "restart-member"}]},
}


def doc(**failure: Any) -> dict[str, Any]:
    out = copy.deepcopy(BASE)
    out["failure"].update(failure)
    return out


def rule(**fields: Any) -> dict[str, Any]:
    return doc(rules=[{"members": ["rollout"], "action": "restart-member", **fields}])


def test_a_restart_member_rule_without_a_budget_restarts_the_default_times():
    spec = spec_from_object(BASE)
    assert spec.failure.rules[0].max_restarts == DEFAULT_MAX_RESTARTS == 3
    # The first exit 3 restarts the replica instead of failing the group ...
    assert decide_action(spec, "rollout", "error", 0, 0) == "restart-member"
    assert decide_action(spec, "rollout", "error", DEFAULT_MAX_RESTARTS - 1, 0) == (
        "restart-member"
    )
    # ... and once the budget is spent the failure escalates, as any spent budget does.
    assert decide_action(spec, "rollout", "error", DEFAULT_MAX_RESTARTS, 0) == "fail-group"


def test_zero_means_none_and_a_given_budget_is_kept():
    assert spec_from_object(rule(max_restarts=0)).failure.rules[0].max_restarts == 0
    assert decide_action(spec_from_object(rule(max_restarts=0)), "rollout", "oom", 0, 0) == (
        "fail-group"
    )
    assert spec_from_object(rule(max_restarts=7)).failure.rules[0].max_restarts == 7


def test_rules_that_restart_nothing_record_no_budget():
    spec = spec_from_object(doc(rules=[{"action": "tolerate"}, {"action": "fail-group"}]))
    assert [r.max_restarts for r in spec.failure.rules] == [0, 0]
    assert spec.failure.max_group_restarts == 0


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        ({}, 0),  # nothing restarts the group: no budget to give
        ({"default": "restart-group"}, DEFAULT_MAX_GROUP_RESTARTS),
        ({"rules": [{"action": "restart-group", "reasons": ["oom"]}]}, DEFAULT_MAX_GROUP_RESTARTS),
        ({"default": "restart-group", "max_group_restarts": 0}, 0),
        ({"default": "restart-group", "max_group_restarts": 5}, 5),
    ],
    ids=["no-restart-group", "default-action", "a-rule", "zero-is-none", "given"],
)
def test_max_group_restarts_left_out(failure: dict[str, Any], expected: int):
    spec = spec_from_object(doc(**failure))
    assert spec.failure.max_group_restarts == expected
    if "restart-group" in (spec.failure.default, *(r.action for r in spec.failure.rules)):
        group_rule = failure.get("default") == "restart-group"
        member = "trainer" if group_rule else "rollout"
        reason = "error" if group_rule else "oom"
        want = "restart-group" if expected else "fail-group"
        assert decide_action(spec, member, reason, 0, 0) == want


def test_max_attempts_left_out_is_no_limit_and_zero_is_refused():
    assert spec_from_object(BASE).placement.max_attempts == NO_ATTEMPT_LIMIT == 0
    one = copy.deepcopy(BASE) | {"placement": {"max_attempts": 1}}
    assert spec_from_object(one).placement.max_attempts == 1
    zero = copy.deepcopy(BASE) | {"placement": {"max_attempts": 0}}
    with pytest.raises(SpecError) as refused:
        spec_from_object(zero)
    assert refused.value.path == "placement.max_attempts"
    assert "leave max_attempts out for no limit" in refused.value.reason


def test_a_default_action_of_restart_member_has_a_budget_too():
    """``failure.default = "restart-member"`` had no budget field at all: a silent zero."""
    spec = spec_from_object(doc(default="restart-member", rules=[]))
    assert spec.failure.default_max_restarts == DEFAULT_MAX_RESTARTS
    assert decide_action(spec, "trainer", "error", DEFAULT_MAX_RESTARTS - 1, 0) == (
        "restart-member"
    )
    assert decide_action(spec, "trainer", "error", DEFAULT_MAX_RESTARTS, 0) == "fail-group"
    none = spec_from_object(doc(default="restart-member", default_max_restarts=0, rules=[]))
    assert decide_action(none, "trainer", "error", 0, 0) == "fail-group"
    # Any other default records no budget: the field stays out of the encoding.
    assert spec_from_object(BASE).failure.default_max_restarts == 0
