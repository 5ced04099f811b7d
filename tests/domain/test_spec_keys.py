"""A refusal inside a dict-valued spec field names the key (`costart.domain.spec_keys`):
msgspec says ``labels[...]``; the user reads ``labels.team``. Through both spec formats
and the REST path, with nothing written; and the search's own rules on a stand-in
conversion: keys nested in keys, and no key named when none reproduces the error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from costart.domain.errors import SpecError
from costart.domain.spec import parse_spec, spec_from_object
from costart.domain.spec_keys import name_keys
from tests.builders import new_controller
from tests.domain.test_spec import base


def with_run(index: int, run: dict[str, Any]) -> dict[str, Any]:
    doc = base()
    doc["members"][index]["run"] = {"argv": ["python", "-m", "serve"]} | run
    return doc


def with_labels(labels: dict[str, Any]) -> dict[str, Any]:
    return base() | {"labels": labels}


TOML_BASE = """
name = "grpo"
owner = "alice"
{labels}
[[members]]
name = "trainer"
kind = "job"
tasks = 2
shape = {{ gpu = 8 }}
{first_run}
[[members]]
name = "rollout"
kind = "replica-set"
replicas = 4
shape = {{ gpu = 1 }}
{second_run}
"""


def toml(labels: str = "", first_run: str = "", second_run: str = "") -> str:
    return TOML_BASE.format(labels=labels, first_run=first_run, second_run=second_run)


RUN = '[members.run]\nargv = ["python", "-m", "serve"]\n'
CASES = [
    pytest.param(
        with_labels({"env": "prod", "team": 3, "tier": "gold"}),
        toml(labels='labels = { env = "prod", team = 3, tier = "gold" }'),
        "labels.team",
        "Expected `str`, got `int`",
        id="a-label-value",
    ),
    pytest.param(
        with_run(0, {"env": {"A": "1", "B": 2}}),
        toml(first_run=RUN + 'env = { A = "1", B = 2 }'),
        "members[0].run.env.B",
        "Expected `str`, got `int`",
        id="an-environment-variable",
    ),
    pytest.param(
        with_run(1, {"probes": {"live": {"tcp": "x"}, "ready": {"tcp": "x", "grace": "5s"}}}),
        toml(
            second_run=RUN
            + '[members.run.probes.live]\ntcp = "x"\n'
            + '[members.run.probes.ready]\ntcp = "x"\ngrace = "5s"\n'
        ),
        "members[1].run.probes.ready.grace",
        "unknown field",
        id="an-unknown-field-of-the-second-probe",
    ),
    pytest.param(
        with_run(0, {"probes": {"ready": {"tcp": "x", "period": 5}, "live": {"tcp": "x"}}}),
        toml(
            first_run=RUN
            + '[members.run.probes.ready]\ntcp = "x"\nperiod = 5\n'
            + '[members.run.probes.live]\ntcp = "x"\n'
        ),
        "members[0].run.probes.ready.period",
        "Expected `str`, got `int`",
        id="a-wrong-type-in-the-first-probe",
    ),
]


@pytest.mark.parametrize(("doc", "toml_text", "path", "reason"), CASES)
@pytest.mark.parametrize("fmt", ["json", "toml", "object"])
def test_the_refusal_names_the_key_and_nothing_is_written(doc, toml_text, path, reason, fmt):
    controller = new_controller()
    with pytest.raises(SpecError) as raised:
        if fmt == "object":
            spec_from_object(doc)
        else:
            text = toml_text if fmt == "toml" else json.dumps(doc)
            controller.submit_document(text, fmt)
    assert (raised.value.path, raised.value.reason) == (path, reason)
    assert str(raised.value) == f"{path}: {reason}"
    assert controller.recorder.max_notification_id() is None


def test_a_key_with_any_characters_is_named_as_written():
    doc = with_labels({"a.b c": ["x"]})
    with pytest.raises(SpecError) as raised:
        parse_spec(json.dumps(doc), "json")
    assert raised.value.path == "labels.a.b c"


# --- the search's rules, on a stand-in conversion ------------------------------------


def nested(doc: Any) -> SpecError | None:
    """Refuses like msgspec a value "bad" two dicts deep, ``outer[...].inner[...]``."""
    for section in doc["outer"].values():
        for value in section["inner"].values():
            if value == "bad":
                return SpecError("outer[...].inner[...]", "bad value")
    return None


def test_keys_nested_in_keys_are_each_named():
    doc = {"outer": {"x": {"inner": {"a": "ok"}}, "y": {"inner": {"b": "ok", "c": "bad"}}}}
    error = name_keys(SpecError("outer[...].inner[...]", "bad value"), doc, nested)
    assert error.path == "outer.y.inner.c"


def test_no_key_is_named_when_no_single_key_gives_the_error():
    # The error needs two keys together: none alone reproduces it.
    def together(doc: Any) -> SpecError | None:
        return SpecError("d[...]", "clash") if len(doc["d"]) > 1 else None

    error = SpecError("d[...]", "clash")
    assert name_keys(error, {"d": {"a": 1, "b": 2}}, together) is error


def test_no_key_is_named_when_the_document_is_refused_otherwise_or_not_at_all():
    error = SpecError("d[...]", "bad value")
    doc = {"d": {"a": "bad"}}
    assert name_keys(error, doc, lambda _: SpecError("d[...]", "other reason")) is error
    assert name_keys(error, doc, lambda _: SpecError("e[...]", "bad value")) is error
    assert name_keys(error, doc, lambda _: None) is error
    assert name_keys(SpecError("d.a", "bad value"), doc, lambda _: error).path == "d.a"


@pytest.mark.parametrize(
    ("path", "doc"),
    [
        ("d[0][...]", {"d": {"a": "bad"}}),  # an index where the document has a dict
        ("d[1][...]", {"d": [{"a": "bad"}]}),  # an index at the list's end
        ("d.e[...]", {"d": {"a": "bad"}}),  # a field the document does not have
        ("d-e[...]", {"d-e": {"a": "bad"}}),  # not a path of field names and indexes
        ("d[...]", {"d": ["bad"]}),  # a list where the path says a dict
    ],
)
def test_a_path_that_leads_nowhere_is_left_as_it_was(path, doc):
    error = SpecError(path, "bad value")
    assert name_keys(error, doc, lambda _: error) is error
