"""The spec reference covers every field the document types define, with words, and
each bad-value example is really refused, at that field."""

from __future__ import annotations

import re

import pytest

from costart.domain.spec_fields import DESCRIPTIONS
from costart.domain.spec_reference import (
    field_paths,
    find_field,
    near_fields,
    refusal,
    spec_fields,
)


def test_every_field_of_the_types_is_described_and_nothing_else() -> None:
    assert set(DESCRIPTIONS) == set(field_paths())
    assert len(spec_fields()) == len(field_paths()) > 60
    assert all(f.text.what.endswith(".") for f in spec_fields())


def test_defaults_come_from_the_types() -> None:
    by_path = {f.path: f for f in spec_fields()}
    assert by_path["placement.mode"].default == '"reserve"'
    assert by_path["barrier.timeout"].default == '"10m"'
    assert by_path["name"].required and by_path["name"].default is None
    assert by_path["members.tasks"].default is None  # derived: the words say from what


@pytest.mark.parametrize("field", [f for f in spec_fields() if f.text.bad], ids=lambda f: f.path)
def test_each_bad_example_is_refused_at_its_field(field) -> None:
    refused = refusal(field)
    assert refused is not None
    _, error = refused
    path = re.sub(r"\[\d+\]", "", error.split(":", 1)[0]).replace(".weights.", ".<claim>.")
    assert path == field.path or path.startswith(field.path + "."), error


def test_lookups() -> None:
    found = find_field("members[3].shape.gpu")
    assert found is not None and found.path == "members.shape.gpu"
    assert find_field("members.run.probes.anything.tcp") is not None
    assert find_field("members.shape.gpus") is None
    assert near_fields("members.shape.gpus")[0] == "members.shape.gpu"
