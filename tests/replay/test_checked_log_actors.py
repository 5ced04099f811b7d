"""Actors are checked at the system's edge, once: decoding a log whose records the store
checksums does not check them again, while every constructor and every other decode
still refuses a bad one (issue 33, ADR 0089)."""

from __future__ import annotations

import msgspec
import pytest

from costart.domain.actors import CHECKED_LOG_BYTES, Actor
from costart.domain.errors import DomainError
from costart.eventlog.codec import canonical_encode, decode_any_event
from costart.eventlog.event_reading import RecorderSource
from tests.builders import HOST, USER, a_group, new_controller


def test_a_bad_actor_is_refused_by_the_constructor_and_by_an_unchecked_decode() -> None:
    with pytest.raises(DomainError, match="actor name"):
        Actor("user", "no spaces allowed")
    spec = a_group("g1").with_member("m", gpu=1).build()
    _, events = new_controller().submit_events(spec, actor=USER)
    raw = msgspec.msgpack.decode(canonical_encode(events[0]))
    raw["actor"] = ["user", "no spaces allowed"]
    with pytest.raises(DomainError, match="actor name"):
        decode_any_event(msgspec.msgpack.encode(raw))


def test_replaying_a_checked_log_trusts_only_the_decode_itself(tmp_path) -> None:
    """The flag is on for a decode call alone: code that runs between the events a
    replay yields (a fold, a caller building actors) checks as always."""
    controller = new_controller(
        PERSISTENCE_MODULE="costart.store", COSTART_LMDB_PATH=str(tmp_path / "log")
    )
    controller.submit(a_group("g1").with_member("m", gpu=1).build(), actor=USER)
    controller.cancel("g1", actor=HOST)
    seen = []
    for _, event in RecorderSource(controller.recorder).read_events():
        assert CHECKED_LOG_BYTES.on is False
        with pytest.raises(DomainError):
            Actor("agent", "-leading-dash")
        seen.append(event.actor)
    assert USER in seen and HOST in seen
    controller.close()
