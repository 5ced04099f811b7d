"""Names are matched whole: no name-like field accepts a control character anywhere --
least of all a final newline, which a pattern ending in ``$`` lets through -- and a
timeout of zero is refused wherever a timeout is meant."""

from __future__ import annotations

import json

import pytest

from costart.domain.durations import parse_duration_ns
from costart.domain.errors import SpecError
from costart.domain.spec import is_name, parse_spec
from costart.placement.cluster import ClusterError
from costart.placement.cluster_file import parse_cluster
from tests.builders import new_controller
from tests.domain.test_spec import with_

CONTROL = [chr(c) for c in (*range(0x20), 0x7F)]
"""Every ASCII control character."""
NAME_FIELDS = {
    "name": "grpo",
    "owner": "alice",
    "members.0.name": "trainer",
    "members.0.owner": "alice",
    "members.0.claims.0": "gpus",
    "members.0.profile": "trainer:2.5",
    "members.0.shape.gpu_type": "H100",
    "placement.topology": "pool",
    "members.0.topology.level": "rack",
    "failure.rules.0.members.0": "trainer",
}
"""Every name-like field of a spec, with a valid value."""


def spec_with(path: str, value: str) -> dict:
    doc = with_("members.0.claims", ["gpus"])
    doc["failure"] = {"rules": [{"action": "tolerate", "members": ["trainer"]}]}
    doc["members"][0]["topology"] = {"level": "rack", "policy": "pack"}
    keys = path.split(".")
    target: object = doc
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
    if isinstance(target, list):
        target[int(keys[-1])] = value
    else:
        target[keys[-1]] = value  # type: ignore[index]
    return doc


def test_every_name_field_takes_its_valid_value():
    for path, value in NAME_FIELDS.items():
        parse_spec(json.dumps(spec_with(path, value)), "json")


@pytest.mark.parametrize("path", sorted(NAME_FIELDS))
@pytest.mark.parametrize("where", ["end", "start", "middle"])
def test_no_name_field_takes_a_control_character(path, where):
    valid = NAME_FIELDS[path]
    controller = new_controller()
    for char in CONTROL:
        value = {"end": valid + char, "start": char + valid, "middle": valid[:1] + char + valid[1:]}
        doc = json.dumps(spec_with(path, value[where]))
        with pytest.raises(SpecError) as error:
            controller.submit_document(doc, "json")
        assert error.value.path, (path, repr(char))
    assert controller.recorder.max_notification_id() is None  # nothing written


def test_a_final_newline_is_not_a_name():
    assert is_name("probe-nl")
    assert not is_name("probe-nl\n")
    with pytest.raises(SpecError, match="bad name 'probe-nl\\\\n'"):
        parse_spec(
            'name = "probe-nl\\n"\nowner = "a"\n[[members]]\nname = "m"\nkind = "job"\nshape = { cpu = 1 }\n',
            "toml",
        )


@pytest.mark.parametrize("text", ["15m\n", "\n15m", "1\u0665m", "15 m", "-5s", "1h\x00"])
def test_durations_are_matched_whole_in_ascii_digits(text):
    with pytest.raises(ValueError, match="bad duration"):
        parse_duration_ns(text)


@pytest.mark.parametrize("path", ["placement.timeout", "barrier.timeout"])
@pytest.mark.parametrize("zero", ["0s", "0ms", "0h0m0s"])
def test_a_zero_timeout_is_refused_wherever_a_timeout_is_meant(path, zero):
    with pytest.raises(SpecError, match="a timeout must be longer than 0s") as error:
        parse_spec(json.dumps(with_(path, zero)), "json")
    assert error.value.path == path


CLUSTER = """
levels = ["rack"]
[[nodes]]
name = {name}
path = [{domain}]
gpu = 8
labels = {{ {label_key} = {label_value} }}
"""
CLUSTER_FIELDS = {
    "name": ("n1", "nodes[0].name"),
    "domain": ("r1", "nodes[0].path[0]"),
    "label_key": ("pool", "nodes[0].labels"),
    "label_value": ("train", "nodes[0].labels.pool"),
}


def cluster_with(field: str, value: str) -> str:
    """The cluster file with one field's value replaced (JSON string escapes are TOML's)."""
    values = {name: valid for name, (valid, _) in CLUSTER_FIELDS.items()}
    values[field] = value
    return CLUSTER.format(**{name: json.dumps(v) for name, v in values.items()})


def test_the_cluster_file_takes_valid_names_and_labels():
    cluster = parse_cluster(cluster_with("name", "n1"))
    assert cluster.nodes[0].labels == (("pool", "train"),)


@pytest.mark.parametrize("field", sorted(CLUSTER_FIELDS))
def test_no_node_name_domain_or_label_takes_a_control_character(field):
    valid, path = CLUSTER_FIELDS[field]
    for char in CONTROL:
        with pytest.raises(ClusterError) as error:
            parse_cluster(cluster_with(field, valid + char))
        assert error.value.path == path, (repr(char), str(error.value))
