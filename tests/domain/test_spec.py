"""Spec validation: every bad spec names its field and reason, and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from costart.domain import limits
from costart.domain.errors import SpecError
from costart.domain.spec import parse_spec, spec_from_object
from tests.builders import new_controller

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def base() -> dict:
    return {
        "name": "grpo",
        "owner": "alice",
        "members": [
            {"name": "trainer", "kind": "job", "tasks": 2, "shape": {"gpu": 8}},
            {"name": "rollout", "kind": "replica-set", "replicas": 4, "shape": {"gpu": 1}},
        ],
    }


def with_(path: str, value: object) -> dict:
    doc = base()
    target: object = doc
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
    last = keys[-1]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return doc


BAD = [
    (with_("colour", "red"), "colour", "unknown field"),
    (with_("members.0.shape.tpu", 4), "members[0].shape.tpu", "unknown field"),
    (with_("placement.timeout", "15 minutes"), "placement.timeout", "bad duration"),
    (with_("placement.backoff", "1h"), "placement.backoff_max", "shorter than"),
    (with_("members.0.tasks", 0), "members[0].tasks", "positive count"),
    (with_("members.1.replicas", -3), "members[1].replicas", "positive count"),
    (with_("members.0.tasks", limits.MAX_TASKS_PER_MEMBER + 1), "members[0].tasks", "limit"),
    (with_("members.1.min_start", 5), "members[1].min_start", "more than replicas"),
    (with_("members.1.min_running", 5), "members[1].min_running", "more than min_start"),
    (with_("members.1.name", "trainer"), "members[1].name", "duplicate member name"),
    (with_("members.0.kind", "daemon"), "members[0].kind", "expected one of: job, replica-set"),
    (with_("members.0.replicas", 2), "members[0].replicas", "only a replica-set"),
    (with_("members.0.shape", {}), "members[0].shape", "requests no resources"),
    (
        with_("members.0.shape", {"cpu": 4, "gpu_type": "H100"}),
        "members[0].shape.gpu_type",
        "without any gpu",
    ),
    (with_("name", "Bad_Name"), "name", "bad name"),
    (with_("name", "x" * 64), "name", "bad name"),
    (with_("failure.default", "retry"), "failure.default", "expected one of"),
    (with_("failure.rules", [{"action": "explode"}]), "failure.rules[0].action", "unknown value"),
    (
        with_("failure.rules", [{"action": "tolerate", "reasons": ["cosmic-rays"]}]),
        "failure.rules[0].reasons[0]",
        "unknown value",
    ),
    (
        with_("failure.rules", [{"action": "tolerate", "members": ["ghost"]}]),
        "failure.rules[0].members[0]",
        "unknown member 'ghost'",
    ),
    (
        with_("failure.rules", [{"action": "tolerate", "reasons": []}]),
        "failure.rules[0].reasons",
        "empty",
    ),
    (
        with_("success", {"when": "members", "members": ["rollout"]}),
        "success.members[0]",
        "replica-set",
    ),
    (with_("success", {"when": "members"}), "success.members", "at least one"),
    (with_("members", []), "members", "at least one member"),
    (with_("members.0.claims", ["gpus", "gpus"]), "members[0].claims[1]", "duplicate claim"),
    (
        with_("members.0.task_claims", ["dev", "dev"]),
        "members[0].task_claims[1]",
        "duplicate claim",
    ),
    (
        with_(
            "members.0",
            {
                "name": "trainer",
                "kind": "job",
                "shape": {"gpu": 8},
                "claims": ["gpus"],
                "task_claims": ["gpus"],
            },
        ),
        "members[0].task_claims[0]",
        "is a member claim already",
    ),
    (with_("members.0.task_claims", ["Bad Name"]), "members[0].task_claims[0]", ""),
    (with_("priority", "high"), "priority", "Expected `int`"),
    (with_("members.0.name", None), "members[0].name", "Expected `str`"),
]


@pytest.mark.parametrize(("doc", "path", "reason"), BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_spec_names_field_and_reason_and_writes_nothing(doc, path, reason):
    controller = new_controller()
    with pytest.raises(SpecError) as raised:
        controller.submit_document(json.dumps(doc), "json")
    assert raised.value.path == path
    assert reason in raised.value.reason
    assert controller.recorder.max_notification_id() is None


def test_missing_field_is_named():
    doc = base()
    del doc["members"][0]["kind"]
    with pytest.raises(SpecError) as raised:
        spec_from_object(doc)
    assert (raised.value.path, raised.value.reason) == ("members[0].kind", "missing required field")


def test_oversized_spec_is_refused_before_parsing():
    with pytest.raises(SpecError, match="limit is"):
        parse_spec(b" " * (limits.MAX_SPEC_BYTES + 1), "json")


def test_toml_syntax_error_is_reported():
    with pytest.raises(SpecError, match="not valid TOML"):
        parse_spec(b"name = ", "toml")


def test_defaults_are_explicit_in_the_normalized_spec():
    spec = spec_from_object(base())
    assert spec.placement.mode == "reserve"
    assert spec.placement.timeout_ns == 15 * 60 * 10**9
    rollout = spec.member("rollout")
    assert (rollout.count, rollout.min_start, rollout.min_running) == (4, 4, 4)
    assert spec.member("trainer").owner == "alice"


def test_toml_and_json_of_the_same_document_agree():
    toml_spec = parse_spec((SCENARIOS / "rl-post-training.toml").read_bytes(), "toml")
    as_json = msgspec.json.encode(
        msgspec.toml.decode((SCENARIOS / "rl-post-training.toml").read_bytes())
    )
    assert parse_spec(as_json, "json") == toml_spec


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
field_paths = st.sampled_from(
    [
        "name",
        "owner",
        "priority",
        "colour",
        "placement.mode",
        "placement.timeout",
        "placement.max_attempts",
        "placement.topology",
        "barrier.timeout",
        "failure.default",
        "failure.rules",
        "success.when",
        "members",
        "members.0.kind",
        "members.0.tasks",
        "members.0.shape",
        "members.0.shape.gpu",
        "members.1.replicas",
        "members.1.min_start",
        "members.1.claims",
        "members.1.topology",
        "members.0.owner",
    ]
)


@given(path=field_paths, value=json_values)
def test_malformed_specs_get_a_clear_error_and_write_nothing(path, value):
    """Any value at any field either validates or gives a SpecError naming a field."""
    controller = new_controller()
    doc = with_(path, value)
    try:
        controller.submit_document(json.dumps(doc), "json")
    except SpecError as error:
        assert error.reason
        assert controller.recorder.max_notification_id() is None
        top = path.split(".")[0]
        assert error.path.startswith(top) or error.path == "", (path, error.path)
    else:
        assert controller.recorder.max_notification_id() == 3
