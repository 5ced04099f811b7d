"""The record fold (`costart.eventlog.record_fold`, ADR 0140) builds the World the plain
fold builds: every log folded both ways, compared by their encodings; the paths it
takes instead of the plain decode are each shown taken, and each case it leaves to the
plain fold gives the plain fold's answer."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import msgspec
import pytest
from eventsourcing.persistence import StoredEvent
from rich.console import Console

from costart.cli.walkthrough import run_demo
from costart.domain import events as ev
from costart.domain.actors import CHECKED_LOG_BYTES, Actor
from costart.domain.errors import DomainError
from costart.domain.world import World
from costart.eventlog import record_fold
from costart.eventlog.codec import MsgspecMapper
from costart.eventlog.event_reading import RecorderSource
from costart.eventlog.memory import MemoryApplicationRecorder
from costart.eventlog.record_fold import fold_records
from costart.eventlog.restore import fold, fold_log, restore
from costart.eventlog.snapshots import encode_world
from costart.replay.rebuild import rebuild
from costart.store.replay_log import open_log
from tests.builders import a_group

ROOT = Path(__file__).resolve().parents[2]
COMPAT = ROOT / "tests" / "compat"
FIXTURES = sorted(p.name for p in COMPAT.glob("*_log") if (p / "data.mdb").exists())


def plain(source: RecorderSource, world: World | None = None) -> World:
    start = world or World()
    return fold(start, source.read_events(after=start.position))


def by_records(source: RecorderSource, world: World | None = None) -> World:
    start = world or World()
    found = source.checked_records(start.position)
    assert found is not None, "this source hands over its records"
    records, trusted = found
    return fold_records(start, records, trusted=trusted)


@pytest.mark.parametrize("name", FIXTURES)
def test_a_log_of_an_earlier_release_folds_to_the_plain_world(name: str, tmp_path: Path) -> None:
    # Older encodings (defaults written out, fields since added): whatever the record
    # fold reads differently, it must give what the plain decode gives.
    shutil.copytree(COMPAT / name, tmp_path / "log")
    with open_log(tmp_path / "log") as log:
        assert log.source.checked_records() is not None
        expected = plain(log.source)
        assert expected.members, "the fixture creates members"
        assert encode_world(by_records(log.source)) == encode_world(expected)
        assert encode_world(rebuild(log.source)) == encode_world(expected)
        if log.snapshots is not None:
            restored, _, _ = restore(log.snapshots, log.source)
            assert encode_world(restored) == encode_world(expected)


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo run's LMDB log: groups submitted, placed, reporting, failing, restarting."""
    folder = tmp_path_factory.mktemp("demo")
    console = Console(file=(folder / "out.txt").open("w"))
    env = {
        "PERSISTENCE_MODULE": "costart.store",
        "COSTART_LMDB_PATH": str(folder / "log"),
        "COSTART_SNAPSHOT_EVERY": "7",
    }
    controller = run_demo(ROOT / "scenarios" / "rl-post-training.toml", console, env=env)
    controller.close()
    return folder / "log"


def test_the_demo_log_folds_to_the_plain_world_from_any_position(demo_log: Path) -> None:
    with open_log(demo_log) as log:
        expected = encode_world(plain(log.source))
        end = plain(log.source).position
        assert end > 20
        for start in range(end):
            # From every position: a fold that begins between a group's submission and
            # its members' creation meets creations it has no submission for.
            begun = rebuild(log.source, until=start)
            assert encode_world(by_records(log.source, begun)) == expected, start


def _count_whole_decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The positions of the records the record fold decodes whole (the plain decode),
    filled as it folds."""
    decoded: list[int] = []
    whole = record_fold._decoded
    monkeypatch.setattr(
        record_fold,
        "_decoded",
        lambda record, trusted: decoded.append(record.id) or whole(record, trusted),
    )
    return decoded


def test_a_creation_is_made_from_its_submission_s_spec_bytes(
    demo_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the start of the log every creation matches its submission: none is decoded
    whole. With the comparison of the spec bytes left out, the test below fails."""
    with open_log(demo_log) as log:
        expected = encode_world(plain(log.source))
        decoded = _count_whole_decodes(monkeypatch)
        world = by_records(log.source)
    print(f"members {len(world.members)}, creations decoded whole {len(decoded)}")
    assert encode_world(world) == expected
    assert decoded == []
    for group in world.groups.values():
        for member_id, spec in zip(group.member_ids, group.spec.members, strict=True):
            assert world.members[str(member_id)].spec is spec


def memory_source(events: list[ev.DomainEvent]) -> RecorderSource:
    recorder = MemoryApplicationRecorder()
    mapper = MsgspecMapper()
    recorder.insert_events(mapper.to_stored_events(events))
    return RecorderSource(recorder, mapper)


def submitted_and_created(
    changed: dict[str, object], other_group: uuid.UUID | None = None
) -> list[ev.DomainEvent]:
    """A group of two members submitted, and both created; the second creation's spec
    differs from the submission's by ``changed``, its group id is ``other_group`` if
    given."""
    spec = a_group("g1").with_member("a", tasks=2).with_member("b", claims=("gpus",)).build()
    group_id = uuid.uuid5(uuid.NAMESPACE_DNS, "g1")
    ids = (uuid.uuid5(group_id, "a"), uuid.uuid5(group_id, "b"))
    events: list[ev.DomainEvent] = [
        ev.GroupSubmitted(
            originator_id=group_id,
            originator_version=1,
            group_id=group_id,
            at_ns=10,
            spec=spec,
            submission_seq=1,
            member_ids=ids,
        )
    ]
    for index, listed in enumerate(spec.members):
        member = msgspec.structs.replace(listed, **changed) if index == 1 else listed
        events.append(
            ev.MemberCreated(
                originator_id=ids[index],
                originator_version=1,
                group_id=other_group if other_group and index == 1 else group_id,
                at_ns=11 + index,
                spec=member,
            )
        )
    return events


def test_a_creation_that_differs_from_its_submission_fails_as_the_plain_fold_fails() -> None:
    source = memory_source(submitted_and_created({"count": 3}))
    with pytest.raises(DomainError) as expected:
        plain(source)
    with pytest.raises(DomainError) as got:
        by_records(source)
    assert "differs from its group g1's spec" in str(got.value)
    assert str(got.value) == str(expected.value)


def test_a_creation_of_another_name_fails_as_the_plain_fold_fails() -> None:
    source = memory_source(submitted_and_created({"name": "c"}))
    with pytest.raises(DomainError) as expected:
        plain(source)
    with pytest.raises(DomainError, match="has no member 'c'") as got:
        by_records(source)
    assert str(got.value) == str(expected.value)


def test_a_creation_naming_another_group_fails_as_the_plain_fold_fails() -> None:
    events = submitted_and_created({})
    second = ev.GroupSubmitted(
        originator_id=(other := uuid.uuid4()),
        originator_version=1,
        group_id=other,
        at_ns=10,
        spec=a_group("g2").with_member("b", claims=("gpus",)).build(),
        submission_seq=2,
        member_ids=(uuid.uuid4(),),
    )
    source = memory_source([events[0], second, *submitted_and_created({}, other)[1:]])
    with pytest.raises(DomainError) as expected:
        plain(source)
    with pytest.raises(DomainError, match="differs from its group g2's spec") as got:
        by_records(source)
    assert str(got.value) == str(expected.value)


def test_a_creation_matching_its_submission_folds_in_memory_as_plainly() -> None:
    # The in-memory log does not check checksums: its creations are read with their
    # actor (checked as the plain decode checks it), and still matched by their bytes.
    source = memory_source(submitted_and_created({}))
    world = by_records(source)
    assert encode_world(world) == encode_world(plain(source))
    group = next(iter(world.groups.values()))
    assert [world.members[str(i)].spec for i in group.member_ids] == list(group.spec.members)


def test_an_event_for_an_unknown_member_is_named_as_the_plain_fold_names_it() -> None:
    events = submitted_and_created({})
    stray = uuid.uuid4()
    events.append(
        ev.MemberPlaced(
            originator_id=stray,
            originator_version=2,
            group_id=events[0].originator_id,
            at_ns=20,
            assignments=(ev.Assignment(0, "n1"),),
        )
    )
    source = memory_source(events)
    with pytest.raises(DomainError, match=f"unknown member {stray}"):
        plain(source)
    with pytest.raises(DomainError, match=f"unknown member {stray}"):
        by_records(source)


def test_fold_log_takes_the_records_where_a_store_hands_them_over(demo_log: Path) -> None:
    with open_log(demo_log) as log:
        calls: list[bool] = []
        source = log.source
        original = source.checked_records

        def counted(after: int = 0):
            found = original(after)
            calls.append(found is not None)
            return found

        source.checked_records = counted  # type: ignore[method-assign]
        world = fold_log(World(), source)
        assert calls == [True]
        assert encode_world(world) == encode_world(plain(log.source))


def test_member_events_are_folded_as_views_of_their_kind(
    demo_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a checked log every member event is read as a view of its kind (ADR 0150):
    none is decoded whole, and each reaches its member's fold named by its kind."""
    with open_log(demo_log) as log:
        expected = encode_world(plain(log.source))
        decoded = _count_whole_decodes(monkeypatch)
        folded: dict[str, int] = {}
        member_fold = record_fold.apply_member_event

        def seen(member, event, kind):  # type: ignore[no-untyped-def]
            assert type(event) is not kind and type(event).__name__ == kind.__name__
            assert not hasattr(event, "group_id") and not hasattr(event, "actor")
            folded[kind.__name__] = folded.get(kind.__name__, 0) + 1
            member_fold(member, event, kind)

        monkeypatch.setattr(record_fold, "apply_member_event", seen)
        world = by_records(log.source)
    print(f"member events folded as views, by kind: {folded}")
    assert encode_world(world) == expected
    assert decoded == []
    assert {"MemberPlaced", "TaskStarted", "ClaimReady"} <= set(folded)


def with_actor(event: ev.DomainEvent, kind: str, name: str) -> ev.DomainEvent:
    """``event`` with an actor the edge would refuse (built as a checked log's decode
    builds it, without the check)."""
    CHECKED_LOG_BYTES.on = True
    try:
        actor = Actor(kind, name)  # type: ignore[arg-type]
    finally:
        CHECKED_LOG_BYTES.on = False
    return msgspec.structs.replace(event, actor=actor)


def placed(events: list[ev.DomainEvent], index: int = 0, version: int = 2) -> ev.MemberPlaced:
    created = events[1 + index]
    return ev.MemberPlaced(
        originator_id=created.originator_id,
        originator_version=version,
        group_id=created.group_id,
        at_ns=20,
        assignments=(ev.Assignment(0, "n1"),),
    )


def test_a_member_event_s_actor_is_checked_where_the_store_did_not_check_its_bytes() -> None:
    # The in-memory log checks no checksum: a member event's view decodes its actor,
    # which is checked as the plain decode checks it.
    events = submitted_and_created({})
    events.append(with_actor(placed(events), "user", "not a name"))
    source = memory_source(events)
    with pytest.raises(DomainError) as expected:
        plain(source)
    with pytest.raises(DomainError, match="actor name 'not a name'") as got:
        by_records(source)
    assert str(got.value) == str(expected.value)


def stored(events: list[ev.DomainEvent], last: dict[str, object]) -> RecorderSource:
    """An in-memory log of ``events`` and one more stored body, ``last`` (as written,
    whatever it holds) under the topic of a member placement."""
    source = memory_source(events)
    topic = source.recorder.select_notifications(start=1, limit=1)[0].topic.replace(
        "GroupSubmitted", "MemberPlaced"
    )
    body = msgspec.msgpack.encode(last)
    source.recorder.insert_events([StoredEvent(uuid.uuid4(), 1, topic, body)])
    return source


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("originator_id", 7, "Expected `uuid`, got `int` - at `$.originator_id`"),
        ("group_id", "not an id", "Invalid UUID - at `$.group_id`"),
    ],
)
def test_a_member_event_that_does_not_decode_fails_with_the_plain_decode_s_words(
    field: str, value: object, words: str
) -> None:
    events = submitted_and_created({})
    body = msgspec.to_builtins(placed(events))
    body[field] = value
    source = stored(events, body)
    with pytest.raises(msgspec.ValidationError) as expected:
        plain(source)
    with pytest.raises(msgspec.ValidationError) as got:
        by_records(source)
    assert str(expected.value) == words
    assert str(got.value) == str(expected.value)


def test_a_member_event_out_of_turn_fails_as_the_plain_fold_fails() -> None:
    events = submitted_and_created({})
    events.append(placed(events, version=3))
    source = memory_source(events)
    with pytest.raises(DomainError) as expected:
        plain(source)
    with pytest.raises(DomainError, match=r"event MemberPlaced for .* has version 3") as got:
        by_records(source)
    assert str(got.value) == str(expected.value)


def test_a_fold_that_fails_leaves_the_world_at_the_last_record_folded() -> None:
    events = submitted_and_created({})
    events.append(placed(events))
    events.append(placed(events, index=1, version=3))  # member b is at version 1
    source = memory_source(events)
    world = World()
    found = source.checked_records()
    assert found is not None
    with pytest.raises(DomainError, match="has version 3; expected 2"):
        fold_records(world, found[0], trusted=found[1])
    assert (world.position, world.clock_ns) == (4, 20)
    member = world.members[str(events[1].originator_id)]
    assert member.version == 2


def test_a_submission_whose_member_ids_are_not_ids_fails_with_the_plain_decode_s_words() -> None:
    # The record fold reads a submission's member ids as text and converts them: one
    # that is no UUID is named as the plain decode names it, where it is in the event.
    events = submitted_and_created({})
    body = msgspec.to_builtins(events[0])
    body["member_ids"] = [body["member_ids"][0], "not an id"]
    source = memory_source([])
    topic = MsgspecMapper().to_stored_event(events[0]).topic
    source.recorder.insert_events(
        [StoredEvent(events[0].originator_id, 1, topic, msgspec.msgpack.encode(body))]
    )
    with pytest.raises(msgspec.ValidationError) as expected:
        plain(source)
    with pytest.raises(msgspec.ValidationError) as got:
        by_records(source)
    assert str(expected.value) == "Invalid UUID - at `$.member_ids[1]`"
    assert str(got.value) == str(expected.value)


def test_ids_spelt_otherwise_fold_to_the_plain_world() -> None:
    """A log whose member ids are written in capitals (a spelling the plain decode reads
    as the same UUIDs; the group's id as usual): the record fold meets creations and
    member events by the ids' text, so it must leave those to the plain fold, not key
    the World by another spelling."""
    events = submitted_and_created({})
    events.append(placed(events))
    mapper, recorder = MsgspecMapper(), MemoryApplicationRecorder()
    stored_events = []
    for event in events:
        body = msgspec.to_builtins(event)
        if "member_ids" in body:
            body["member_ids"] = [text.upper() for text in body["member_ids"]]
        else:
            body["originator_id"] = body["originator_id"].upper()
        topic = mapper.to_stored_event(event).topic
        stored_events.append(
            StoredEvent(
                event.originator_id, event.originator_version, topic, msgspec.msgpack.encode(body)
            )
        )
    recorder.insert_events(stored_events)
    source = RecorderSource(recorder, mapper)
    expected = plain(source)
    assert str(events[1].originator_id) in expected.members
    world = by_records(source)
    assert sorted(world.members) == sorted(expected.members)
    assert encode_world(world) == encode_world(expected)
