"""The submit body's schema and the spec parser agree on every value rule the schema
states (`costart.rest.spec_rules`): at each bound, one value both accept and one past it
both refuse. Validated with jsonschema_rs, the validator schemathesis uses."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema_rs
import pytest

from costart.domain import limits
from costart.domain.errors import SpecError
from costart.domain.spec import parse_spec
from costart.rest.openapi import SPEC_EXAMPLE, spec_schema

BASE: dict[str, Any] = SPEC_EXAMPLE.value
VALIDATOR = jsonschema_rs.validator_for(spec_schema().to_schema())


def _members(count: int) -> list[dict[str, Any]]:
    """The example's members (its failure rule names one) and more, ``count`` in all."""
    extra = [{"name": f"m{i}", "kind": "job", "shape": {"cpu": 1}} for i in range(count)]
    return [*BASE["members"], *extra][:count]


def _labels(count: int) -> dict[str, str]:
    return {f"k{i}": "v" for i in range(count)}


# (where, value, valid): ``where`` is a path of keys and indexes into the example spec.
CASES: list[tuple[tuple[str | int, ...], Any, bool]] = [
    (("name",), "a" * limits.MAX_NAME_LENGTH, True),
    (("name",), "a" * (limits.MAX_NAME_LENGTH + 1), False),
    (("name",), "-a", False),
    (("name",), "a-", False),
    (("name",), "A", False),
    (("name",), "a\n", False),
    (("owner",), "a" * limits.MAX_OWNER_LENGTH, True),
    (("owner",), "a" * (limits.MAX_OWNER_LENGTH + 1), False),
    (("owner",), "alice@example.org", True),
    (("owner",), ".alice", False),
    (("priority",), limits.MAX_PRIORITY, True),
    (("priority",), limits.MAX_PRIORITY + 1, False),
    (("priority",), -limits.MAX_PRIORITY, True),
    (("priority",), -limits.MAX_PRIORITY - 1, False),
    (("members",), [], False),
    (("members",), _members(2), True),
    (("members",), _members(limits.MAX_MEMBERS_PER_GROUP), True),
    (("members",), _members(limits.MAX_MEMBERS_PER_GROUP + 1), False),
    (("labels",), _labels(limits.MAX_LABELS_PER_GROUP), True),
    (("labels",), _labels(limits.MAX_LABELS_PER_GROUP + 1), False),
    (("labels",), {"team.example/rl": "a_b"}, True),
    (("labels",), {"-team": "rl"}, False),
    (("labels",), {"team": ""}, False),
    (("members", 0, "name"), "Trainer", False),
    (("members", 0, "owner"), "bob", True),
    (("members", 0, "owner"), "b" * (limits.MAX_OWNER_LENGTH + 1), False),
    (("members", 0, "profile"), "p" * limits.MAX_PROFILE_LENGTH, True),
    (("members", 0, "profile"), "p" * (limits.MAX_PROFILE_LENGTH + 1), False),
    (("members", 0, "tasks"), 0, False),
    (("members", 0, "tasks"), limits.MAX_TASKS_PER_MEMBER, True),
    (("members", 0, "tasks"), limits.MAX_TASKS_PER_MEMBER + 1, False),
    (("members", 1, "replicas"), 0, False),
    (("members", 1, "replicas"), limits.MAX_REPLICAS_PER_MEMBER + 1, False),
    (("members", 0, "shape", "gpu"), limits.MAX_GPU_PER_TASK, True),
    (("members", 0, "shape", "gpu"), limits.MAX_GPU_PER_TASK + 1, False),
    (("members", 0, "shape", "cpu"), -1, False),
    (("members", 0, "shape", "mem_gb"), limits.MAX_MEM_GB_PER_TASK + 1, False),
    (("members", 0, "shape", "gpu_type"), "g" * limits.MAX_NAME_LENGTH, True),
    (("members", 0, "shape", "gpu_type"), "g" * (limits.MAX_NAME_LENGTH + 1), False),
    (("members", 0, "claims"), [f"c{i}" for i in range(limits.MAX_CLAIMS_PER_MEMBER)], True),
    (("members", 0, "claims"), [f"c{i}" for i in range(limits.MAX_CLAIMS_PER_MEMBER + 1)], False),
    (("members", 0, "claims"), ["gpus", "gpus"], False),
    (("members", 0, "claims"), ["GPUs"], False),
    (("members", 0, "topology"), "train-block", True),
    (("members", 0, "topology"), "Train", False),
    (("members", 0, "topology"), {"level": "Rack"}, False),
    (("placement", "timeout"), "1h30m", True),
    (("placement", "timeout"), "1 h", False),
    (("placement", "timeout"), "", False),
    (("placement", "max_attempts"), limits.MAX_ATTEMPTS, True),
    (("placement", "max_attempts"), limits.MAX_ATTEMPTS + 1, False),
    (("barrier", "timeout"), "90", False),
    (("failure", "max_group_restarts"), limits.MAX_GROUP_RESTARTS + 1, False),
    (("failure", "rules", 0, "reasons"), [], False),
    (("failure", "rules", 0, "max_restarts"), limits.MAX_RESTARTS, True),
    (("failure", "rules", 0, "max_restarts"), limits.MAX_RESTARTS + 1, False),
    (("failure", "rules", 0, "members"), ["Rollout"], False),
]


def _with(where: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    node: Any = spec
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    return spec


def _parser_accepts(spec: dict[str, Any]) -> bool:
    try:
        parse_spec(json.dumps(spec), "json")
    except SpecError:
        return False
    return True


def test_the_example_spec_is_valid_for_both():
    assert VALIDATOR.is_valid(BASE) and _parser_accepts(BASE)


@pytest.mark.parametrize(("where", "value", "valid"), CASES)
def test_the_schema_and_the_parser_agree_at_each_bound(where, value, valid):
    spec = _with(where, value)
    assert VALIDATOR.is_valid(spec) is valid, VALIDATOR.iter_errors(spec)
    assert _parser_accepts(spec) is valid
