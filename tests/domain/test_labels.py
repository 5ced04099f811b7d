"""Group labels: validated whole, limited, sorted; a spec without them keeps its bytes;
selectors pick groups holding every term."""

from __future__ import annotations

import json

import msgspec
import pytest

from costart.domain import limits
from costart.domain.errors import DomainError, SpecError
from costart.domain.labels import matches, parse_selector
from costart.domain.spec import spec_from_object
from tests.builders import new_controller
from tests.domain.test_spec import base


def labelled(labels: object) -> dict:
    doc = base()
    doc["labels"] = labels
    return doc


def test_labels_are_kept_sorted_by_key_whatever_the_document_order():
    spec = spec_from_object(labelled({"team": "rl", "env": "prod"}))
    assert spec.labels == (("env", "prod"), ("team", "rl"))
    assert spec == spec_from_object(labelled({"env": "prod", "team": "rl"}))


def test_a_spec_without_labels_encodes_as_it_did_before_labels_existed():
    encoded = msgspec.json.decode(msgspec.json.encode(spec_from_object(base())))
    assert "labels" not in encoded
    with_labels = msgspec.json.decode(msgspec.json.encode(spec_from_object(labelled({"a": "b"}))))
    assert with_labels["labels"] == [["a", "b"]]


@pytest.mark.parametrize(
    ("labels", "path", "reason"),
    [
        ({"team": "rl\n"}, "labels.team", "bad label value 'rl\\n'"),
        ({"bad key": "x"}, "labels.bad key", "bad label key 'bad key'"),
        ({"team": ""}, "labels.team", "bad label value ''"),
        ({"-team": "rl"}, "labels.-team", "bad label key '-team'"),
        ({"team": "x" * 254}, "labels.team", "bad label value"),
        (
            {f"k{i}": "v" for i in range(limits.MAX_LABELS_PER_GROUP + 1)},
            "labels",
            f"{limits.MAX_LABELS_PER_GROUP + 1} labels; the limit is",
        ),
        ({"env": "prod", "team": 3}, "labels.team", "Expected `str`, got `int`"),
    ],
)
def test_a_bad_label_is_named_and_nothing_is_written(labels, path, reason):
    controller = new_controller()
    with pytest.raises(SpecError) as raised:
        controller.submit_document(json.dumps(labelled(labels)), "json")
    assert (raised.value.path, reason in raised.value.reason) == (path, True), raised.value
    assert controller.recorder.max_notification_id() is None


def test_the_label_limit_itself_is_accepted():
    labels = {f"k{i}": "v" for i in range(limits.MAX_LABELS_PER_GROUP)}
    assert len(spec_from_object(labelled(labels)).labels) == limits.MAX_LABELS_PER_GROUP


def test_a_selector_holds_every_term_and_picks_groups_holding_all_of_them():
    selector = parse_selector(["team=rl,env=prod", "tier=gold"])
    assert selector == (("env", "prod"), ("team", "rl"), ("tier", "gold"))
    assert matches({"team": "rl", "env": "prod", "tier": "gold", "x": "y"}, selector)
    assert not matches({"team": "rl", "env": "prod"}, selector)
    assert not matches({"team": "rl", "env": "dev", "tier": "gold"}, selector)
    assert matches({}, ())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("team", "bad label selector 'team': expected key=value"),
        ("team=", "bad label selector 'team=': expected key=value"),
        ("team=rl\n", "bad label selector 'team=rl\\n'"),
        ("b@d=rl", "bad label selector 'b@d=rl': expected key=value"),
        ("=rl", "bad label selector '=rl': expected key=value"),
    ],
    ids=["no-value-sign", "no-value", "final-newline", "bad-key", "no-key"],
)
def test_a_bad_selector_is_refused_naming_the_term(text, message):
    with pytest.raises(DomainError) as raised:
        parse_selector([text])
    assert message in str(raised.value)


def test_two_values_for_one_key_select_nothing_as_every_term_must_hold():
    selector = parse_selector(["team=rl,team=sl", "team=rl"])
    assert selector == (("team", "rl"), ("team", "sl"))
    assert not matches({"team": "rl"}, selector) and not matches({"team": "sl"}, selector)
