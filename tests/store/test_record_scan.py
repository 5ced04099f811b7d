"""The compiled record check (`record_scan.scan_compiled`) against the plain scan
(`record_layout.scan_plain`), ADR 0155: on random logs with every kind of damage, both
give the same records, the same `CorruptRecordError` (defect, position and words) and
leave the cursor on the same record. Each damage also has a direct test naming the
defect, so a compiled check that skips a check fails a test of its own.

The logs are real LMDB files in temporary directories, written byte by byte here, so a
record can be forged in any way (a right checksum over a wrong envelope, position or
chain; an encoding the store does not write but msgspec reads)."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from hashlib import blake2b
from pathlib import Path
from typing import Any

import lmdb
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costart.eventlog.errors import CorruptRecordError, Defect
from costart.store import record_scan
from costart.store.record_layout import GENESIS, encode_record, pack_u64, scan_plain
from costart.store.record_scan import scan_compiled

LOG = "stored_events"
_enc = msgspec.msgpack.encode


def seal(body: bytes) -> bytes:
    """A record of ``body`` (everything before the checksum's payload) with its checksum."""
    return body + blake2b(body, digest_size=16).digest()


def plain_record(position: int, event: tuple[Any, int, str, bytes], prev: bytes) -> bytes:
    return encode_record(position, (b"", *event), prev)[0]


def exotic_record(position: int, event: tuple[Any, int, str, bytes], prev: bytes) -> bytes:
    """A record the store never writes but msgspec reads as the same kind of record: ids
    in int64 form, an originator that is neither bytes nor str (the field is `Any`)."""
    _, version, topic, state = event
    body = (
        b"\x97"
        + b"\xd3"
        + position.to_bytes(8, "big", signed=True)
        + _enc(None)
        + (b"\xd3" + version.to_bytes(8, "big") if version < 2**63 else _enc(version))
        + _enc(topic)
        + _enc(state)
        + _enc(prev)
        + b"\xc4\x10"
    )
    return seal(body)


def checksum_of(value: bytes) -> bytes:
    return value[-16:]


originators = st.one_of(
    st.uuids().map(lambda u: u.bytes),
    st.text(min_size=0, max_size=40),
    st.binary(min_size=0, max_size=300),
)
states = st.one_of(
    st.binary(max_size=600),
    st.binary(min_size=65_530, max_size=65_600),  # bin 16 and bin 32 lengths
)
topics = st.sampled_from(
    ["a:GroupSubmitted", "a:MemberCreated", "a:MemberStarted", "é:Ünïcode", "x" * 40, "t" * 300]
)
events = st.tuples(originators, st.integers(0, 2**64 - 1), topics, states)


class Log:
    """A log's records by position, written to a fresh LMDB database."""

    def __init__(self, path: Path, values: dict[int, bytes]) -> None:
        self.env = lmdb.open(str(path), max_dbs=2, map_size=1 << 28)
        self.db = self.env.open_db(b"records")
        with self.env.begin(write=True, db=self.db) as txn:
            for position, value in values.items():
                txn.put(pack_u64(position), value)

    def outcome(
        self,
        scan: Callable[..., tuple[list[Any], int, bytes | None]],
        start: int,
        prev: bytes | None,
        limit: int,
        stop: int | None,
        **options: int,
    ) -> tuple[Any, ...]:
        """What a scan returns or raises, and where it leaves the cursor."""
        with self.env.begin(db=self.db) as txn:
            cursor = txn.cursor()
            if not cursor.set_range(pack_u64(start)):
                return ("empty",)
            try:
                records, expect, last = scan(cursor, LOG, start, prev, limit, stop=stop, **options)
            except CorruptRecordError as e:
                return ("error", e.defect, e.position, str(e))
            fields = [msgspec.structs.astuple(r) for r in records]
            at = cursor.key() if len(records) == limit else None
            return ("ok", fields, expect, last, at)

    def close(self) -> None:
        self.env.close()


@pytest.fixture
def logs() -> Iterator[Callable[[dict[int, bytes]], Log]]:
    opened: list[Log] = []
    with tempfile.TemporaryDirectory() as root:

        def make(values: dict[int, bytes]) -> Log:
            log = Log(Path(root) / str(len(opened)), values)
            opened.append(log)
            return log

        yield make
        for log in opened:
            log.close()


def chained(
    evts: list[tuple[Any, int, str, bytes]], exotic: frozenset[int] = frozenset()
) -> dict[int, bytes]:
    values: dict[int, bytes] = {}
    prev = GENESIS
    for position, event in enumerate(evts, start=1):
        make = exotic_record if position in exotic else plain_record
        values[position] = make(position, event, prev)
        prev = checksum_of(values[position])
    return values


# --- damage: each returns the log's values with one record damaged -----------------


def flip(values: dict[int, bytes], at: int, where: int) -> None:
    value = bytearray(values[at])
    value[where % len(value)] ^= 0x01
    values[at] = bytes(value)


ENVELOPES: dict[str, Callable[[bytes], bytes]] = {
    # each keeps a right checksum over bytes that are not a log record
    "array of 6": lambda body: b"\x96" + body[1:],
    "extra item": lambda body: body[:-2] + b"\xc0" + body[-2:],
    "checksum header": lambda body: body[:-2] + b"\xc4\x0f",
    "topic as bin": lambda body: body.replace(
        b"\xb0a:GroupSubmitted", b"\xc4\x10a:GroupSubmitted", 1
    ),
    "bad utf-8 topic": lambda body: body.replace(b"a:GroupSubmitted", b"a:GroupSubmitte\xff", 1),
    "short": lambda body: body[:1],
}


def bad_envelope(values: dict[int, bytes], at: int, kind: str) -> None:
    values[at] = seal(ENVELOPES[kind](values[at][:-16]))


def gap(values: dict[int, bytes], at: int) -> None:
    del values[at]


def wrong_position(values: dict[int, bytes], at: int, said: int) -> None:
    body = values[at][:-16]
    record = msgspec.msgpack.decode(values[at])
    event = (record[1], record[2], record[3], record[4])
    values[at] = plain_record(said, event, record[5])
    assert body != values[at][:-16]


def broken_chain(values: dict[int, bytes], at: int) -> None:
    record = msgspec.msgpack.decode(values[at])
    event = (record[1], record[2], record[3], record[4])
    values[at] = plain_record(at, event, bytes(16))


def same_outcome(
    log: Log, start: int, prev: bytes | None, limit: int, stop: int | None, chunk: int
) -> tuple[Any, ...]:
    plain = log.outcome(scan_plain, start, prev, limit, stop)
    compiled = log.outcome(scan_compiled, start, prev, limit, stop, chunk=chunk)
    assert compiled == plain
    return plain


SEEN: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _paths_taken() -> Iterator[None]:
    yield
    print(f"\nrecord scan paths taken: {dict(sorted(SEEN.items()))}")


DAMAGES = ("none", "flip", "envelope", "gap", "position", "chain")


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(
    evts=st.lists(events, min_size=2, max_size=12),
    data=st.data(),
)
def test_both_scans_agree_on_random_damaged_logs(
    logs: Callable[[dict[int, bytes]], Log], evts: list[Any], data: st.DataObject
) -> None:
    """Every kind of damage on each random log, each read by both scans from a random
    start, with a random limit, stop and chunk size."""
    n = len(evts)
    exotic = frozenset(data.draw(st.sets(st.integers(1, n), max_size=2)))
    whole = chained(evts, exotic)
    for damage in DAMAGES:
        values = dict(whole)
        # A missing last record is a shorter log, not a gap.
        at = data.draw(st.integers(1, n - 1 if damage == "gap" else n))
        if damage == "flip":
            flip(values, at, data.draw(st.integers(0, 1 << 20)))
        elif damage == "envelope":
            bad_envelope(values, at, data.draw(st.sampled_from(sorted(ENVELOPES))))
        elif damage == "gap":
            gap(values, at)
        elif damage == "position":
            wrong_position(values, at, data.draw(st.sampled_from([0, at - 1, at + 1, 2**64 - 1])))
        elif damage == "chain":
            broken_chain(values, at)
        # Mostly from before the damage, so the read meets it.
        start = data.draw(st.integers(1, at) | st.integers(1, n))
        prev = (
            GENESIS
            if start == 1
            else data.draw(st.sampled_from([None, checksum_of(whole[start - 1])]))
        )
        limit = data.draw(st.integers(1, n + 2))
        stop = data.draw(st.none() | st.integers(0, n + 1))
        chunk = data.draw(st.integers(1, 5))
        outcome = same_outcome(logs(values), start, prev, limit, stop, chunk)
        error = f" {outcome[1].name}" if outcome[0] == "error" else ""
        SEEN[f"{damage}: {outcome[0]}{error}"] += 1
    if exotic:
        SEEN["logs with unusual encodings"] += 1


# --- direct tests: one per defect, on both scans ----------------------------------

EVENTS = [(bytes(range(16)), i, "a:GroupSubmitted", bytes([i]) * (i * 50)) for i in range(9)]
SCANS = [pytest.param(scan_plain, id="plain"), pytest.param(scan_compiled, id="compiled")]


def error_of(
    log: Log, scan: Callable[..., Any], start: int = 1, prev: bytes | None = GENESIS
) -> tuple[Defect, int, str]:
    outcome = log.outcome(scan, start, prev, 100, None)
    assert outcome[0] == "error", outcome
    return outcome[1], outcome[2], outcome[3]


@pytest.mark.parametrize("scan", SCANS)
@pytest.mark.parametrize("where", [0, 5, -16, -1])
def test_a_flipped_byte_is_a_checksum_mismatch(
    logs: Callable[..., Log], scan: Any, where: int
) -> None:
    values = chained(EVENTS)
    flip(values, 4, where)
    # The diagnosis names a damaged array header as a bad envelope.
    expected = Defect.FORMAT if where == 0 else Defect.CHECKSUM
    assert error_of(logs(values), scan)[:2] == (expected, 4)


@pytest.mark.parametrize("scan", SCANS)
@pytest.mark.parametrize("kind", sorted(ENVELOPES))
def test_a_checksummed_bad_envelope_is_malformed(
    logs: Callable[..., Log], scan: Any, kind: str
) -> None:
    values = chained(EVENTS)
    bad_envelope(values, 5, kind)
    assert error_of(logs(values), scan)[:2] == (Defect.FORMAT, 5)


@pytest.mark.parametrize("scan", SCANS)
def test_a_missing_record_is_a_gap(logs: Callable[..., Log], scan: Any) -> None:
    values = chained(EVENTS)
    gap(values, 6)
    assert error_of(logs(values), scan) == (
        Defect.GAP,
        6,
        f"{Defect.GAP.value} at notification id 6 in log {LOG!r}: next is 7",
    )


@pytest.mark.parametrize("scan", SCANS)
def test_a_record_saying_another_position_is_misplaced(logs: Callable[..., Log], scan: Any) -> None:
    values = chained(EVENTS)
    wrong_position(values, 3, 4)
    assert error_of(logs(values), scan)[:2] == (Defect.POSITION, 3)


@pytest.mark.parametrize("scan", SCANS)
def test_a_record_linked_to_another_is_a_broken_chain(logs: Callable[..., Log], scan: Any) -> None:
    values = chained(EVENTS)
    broken_chain(values, 7)
    assert error_of(logs(values), scan)[:2] == (Defect.CHAIN, 7)
    # Read from the middle without a known link, the first record's link is not checked,
    # the next ones are.
    assert logs(values).outcome(scan, 7, None, 1, None)[0] == "ok"
    assert error_of(logs(values), scan, start=6, prev=None)[:2] == (Defect.CHAIN, 7)


@pytest.mark.parametrize("chunk", [1, 2, 3, 9, 100])
def test_a_log_of_unusual_encodings_reads_the_same_across_chunks(
    logs: Callable[..., Log], chunk: int
) -> None:
    """Records the compiled check hands to the plain scan (not the store's encoding),
    at each place in a chunk, and the records after them."""
    log = logs(chained(EVENTS, exotic=frozenset({1, 4, 5, 9})))
    outcome = same_outcome(log, 1, GENESIS, 100, None, chunk)
    assert outcome[0] == "ok" and len(outcome[1]) == len(EVENTS)
    assert same_outcome(log, 2, None, 4, None, chunk)[4] == pack_u64(5)


@pytest.mark.parametrize("chunk", [1, 4, 1024])
def test_limits_and_stops_leave_the_cursor_where_the_plain_scan_does(
    logs: Callable[..., Log], chunk: int
) -> None:
    log = logs(chained(EVENTS))
    for limit, stop in [(3, None), (9, None), (20, None), (5, 4), (2, 7), (4, 0)]:
        same_outcome(log, 2, None, limit, stop, chunk)
    records, expect, last = log.outcome(scan_compiled, 1, GENESIS, 9, None)[1:4]
    assert expect == 10 and last == checksum_of(chained(EVENTS)[9]) and len(records) == 9


def test_the_compiled_check_is_built_and_used() -> None:
    """The installed package carries the compiled module (`pip install -e .` builds it),
    and the store reads through it: a benchmark never measures the plain fallback
    unknowingly (ADR 0155)."""
    assert record_scan.COMPILED, "costart.store._chunkcheck is not built: run `pip install -e .`"
    from costart.store import _chunkcheck, recorders, whole_log

    assert Path(_chunkcheck.__file__).parent == Path(record_scan.__file__).parent
    assert record_scan.scan is scan_compiled
    assert recorders.scan is scan_compiled and whole_log.scan is scan_compiled


def test_the_compiled_check_refuses_what_is_not_a_list_of_bytes() -> None:
    from costart.store import _chunkcheck
    from costart.store.record_layout import LogRecord

    with pytest.raises(TypeError, match="list of bytes"):
        _chunkcheck.check([memoryview(b"x" * 40)], 1, GENESIS, LogRecord)
    with pytest.raises(TypeError, match="list of bytes"):
        _chunkcheck.check((b"x",), 1, GENESIS, LogRecord)
    with pytest.raises(TypeError, match="prev"):
        _chunkcheck.check([], 1, "x", LogRecord)
    with pytest.raises(OverflowError):
        _chunkcheck.check([], -1, None, LogRecord)


def test_the_compiled_check_keeps_nothing_of_a_call() -> None:
    """No reference left behind by a call that accepts every record, stops at a damaged
    or unusual one, or refuses its arguments (traced allocations stay flat)."""
    import gc
    import tracemalloc

    from costart.store import _chunkcheck
    from costart.store.record_layout import LogRecord

    values = chained(EVENTS)
    good = [values[p] for p in sorted(values)]
    damaged = list(good)
    damaged[4] = damaged[4][:-1] + bytes([damaged[4][-1] ^ 1])
    unusual = chained(EVENTS, exotic=frozenset({3}))
    mixed = [unusual[p] for p in sorted(unusual)]

    def calls() -> None:
        for _ in range(300):
            _chunkcheck.check(good, 1, GENESIS, LogRecord)
            _chunkcheck.check(damaged, 1, GENESIS, LogRecord)
            _chunkcheck.check(mixed, 1, None, LogRecord)
            with pytest.raises(TypeError):
                _chunkcheck.check([*good, 1], 1, None, LogRecord)  # type: ignore[list-item]

    calls()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        calls()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 10_000, f"{grown} bytes kept by 1,200 calls"
