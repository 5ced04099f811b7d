"""The Controller's in-memory recorder passes the library's own application recorder
test cases (as the library's POPO recorder does), with UUID and text originator ids, and
matches the library's POPO recorder on random appends and selections."""

from __future__ import annotations

from uuid import UUID, uuid4

from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.popo import POPOApplicationRecorder
from eventsourcing.tests import persistence as lib
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.controller import Controller
from costart.store.codec import MsgspecMapper
from costart.store.memory import MemoryApplicationRecorder
from costart.store.reading import read_events
from tests.builders import ManualClock, a_group


class TestMemoryApplicationRecorder(lib.ApplicationRecorderTestCase[MemoryApplicationRecorder]):
    def create_recorder(self) -> MemoryApplicationRecorder:
        return MemoryApplicationRecorder()

    def test_insert_subscribe(self) -> None:
        self.optional_test_insert_subscribe()

    def test_batch_that_repeats_an_event_records_nothing(self) -> None:
        recorder = self.create_recorder()
        originator_id = uuid4()
        recorder.insert_events([StoredEvent(originator_id, 1, "t", b"1")])
        for batch in (
            [StoredEvent(originator_id, 2, "t", b"2"), StoredEvent(originator_id, 2, "t", b"2")],
            [StoredEvent(uuid4(), 1, "t", b"x"), StoredEvent(originator_id, 1, "t", b"1")],
            [StoredEvent(originator_id, 1, "t", b"1")],
        ):
            with self.assertRaises(IntegrityError):
                recorder.insert_events(batch)
        self.assertEqual(recorder.max_notification_id(), 1)
        self.assertEqual(len(recorder.select_events(originator_id)), 1)
        self.assertEqual(recorder.insert_events([StoredEvent(originator_id, 2, "t", b"2")]), [2])

    def test_text_and_uuid_ids_are_one_originator(self) -> None:
        # As in the library's recorder: an id and its text name the same aggregate.
        recorder = self.create_recorder()
        originator_id = uuid4()
        recorder.insert_events([StoredEvent(originator_id, 1, "t", b"1")])
        with self.assertRaises(IntegrityError):
            recorder.insert_events([StoredEvent(str(originator_id), 1, "t", b"1")])
        recorder.insert_events([StoredEvent(str(originator_id), 2, "t", b"2")])
        self.assertEqual([s.state for s in recorder.select_events(originator_id)], [b"1", b"2"])


class TestMemoryApplicationRecorderWithTextOriginatorID(TestMemoryApplicationRecorder):
    def new_originator_id(self) -> str:  # type: ignore[override]
        return "test-" + str(uuid4())


def test_controller_uses_it_on_the_default_persistence() -> None:
    assert type(Controller(env={}).recorder) is MemoryApplicationRecorder


def test_replay_reads_the_same_events_through_the_record_cursor() -> None:
    controller = Controller(env={}, clock=ManualClock())
    for name in ("a", "b", "c"):
        controller.submit(a_group(name).with_member("m").with_member("n").build())
    recorder = controller.recorder
    mapper = MsgspecMapper()
    paged = [
        (n.id, mapper.to_domain_event(n)) for n in recorder.select_notifications(start=1, limit=99)
    ]
    assert len(paged) == controller.world.position == 9
    for after in (0, 1, 4, 9, 12):
        assert list(read_events(recorder, mapper, after)) == paged[after:]
    assert [r.id for r in recorder.iter_records(0)] == list(range(1, 10))


_IDS = [UUID(int=i) for i in range(1, 4)]


@settings(max_examples=300, deadline=None)
@given(
    batches=st.lists(
        st.lists(st.tuples(st.sampled_from(_IDS), st.integers(1, 4)), min_size=1, max_size=3),
        max_size=8,
    ),
    start=st.none() | st.integers(-2, 14),
    limit=st.integers(1, 14),
    stop=st.none() | st.integers(-1, 14),
    inclusive=st.booleans(),
)
def test_appends_and_selections_are_the_librarys(batches, start, limit, stop, inclusive) -> None:
    ours, library = MemoryApplicationRecorder(), POPOApplicationRecorder()
    for batch in batches:
        stored = [StoredEvent(i, v, f"t{v}", i.bytes + bytes([v])) for i, v in batch]
        outcomes = []
        for recorder in (ours, library):
            try:
                outcomes.append(recorder.insert_events(stored))
            except IntegrityError:
                outcomes.append("refused")
        assert outcomes[0] == outcomes[1]
    for originator_id in _IDS:
        assert ours.select_events(originator_id) == library.select_events(originator_id)
    selected = [
        recorder.select_notifications(start, limit, stop, inclusive_of_start=inclusive)
        for recorder in (ours, library)
    ]
    assert selected[0] == selected[1]
