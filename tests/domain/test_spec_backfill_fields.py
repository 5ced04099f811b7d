"""`max_runtime` and `preemptible` on a member, and the `reserve-backfill` mode: validated
on the way in, and left out of the encoding when unset (older specs keep their bytes)."""

from __future__ import annotations

import json

import msgspec
import pytest

from costart.domain.errors import SpecError
from costart.domain.spec import spec_from_object
from tests.builders import new_controller
from tests.domain.test_spec import base, with_

BAD = [
    (with_("members.0.max_runtime", "0s"), "members[0].max_runtime", "longer than 0s"),
    (with_("members.0.max_runtime", "-1h"), "members[0].max_runtime", "bad duration"),
    (with_("members.0.max_runtime", "2 hours"), "members[0].max_runtime", "bad duration"),
    (with_("members.0.max_runtime", "31d"), "members[0].max_runtime", "bad duration"),
    (with_("members.0.max_runtime", "800h"), "members[0].max_runtime", "limit of 30 days"),
    (with_("members.0.max_runtime", 3600), "members[0].max_runtime", "Expected `str | null`"),
    (with_("members.0.preemptible", "yes"), "members[0].preemptible", "Expected `bool`"),
    (with_("placement.mode", "backfill"), "placement.mode", "reserve-backfill"),
]


@pytest.mark.parametrize(("doc", "path", "reason"), BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_a_bad_limit_or_flag_is_named_and_nothing_is_written(doc, path, reason):
    controller = new_controller()
    with pytest.raises(SpecError) as raised:
        controller.submit_document(json.dumps(doc), "json")
    assert raised.value.path == path
    assert reason in raised.value.reason
    assert controller.recorder.max_notification_id() is None


def test_limit_and_flag_are_normalised_to_nanoseconds_and_a_bool():
    doc = with_("members.0.max_runtime", "1h30m")
    doc["members"][1]["preemptible"] = True
    doc["placement"] = {"mode": "reserve-backfill"}
    spec = spec_from_object(doc)
    assert spec.placement.mode == "reserve-backfill"
    assert spec.members[0].max_runtime_ns == 5400 * 10**9
    assert not spec.members[0].preemptible
    assert spec.members[1].preemptible
    assert spec.members[1].max_runtime_ns is None


def test_a_spec_without_them_encodes_exactly_as_before():
    spec = spec_from_object(base())
    encoded = msgspec.json.encode(spec)
    assert b"max_runtime" not in encoded
    assert b"preemptible" not in encoded
    limited = spec_from_object(with_("members.0.max_runtime", "2h"))
    assert b'"max_runtime_ns":7200000000000' in msgspec.json.encode(limited)


def test_the_shortest_run_time_limit_one_nanosecond_is_accepted():
    # The limit must be longer than 0s: 1ns is, and is kept exactly.
    spec = spec_from_object(with_("members.0.max_runtime", "1ns"))
    assert spec.members[0].max_runtime_ns == 1
