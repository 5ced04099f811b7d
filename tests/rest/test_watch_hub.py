"""`WatchHub` in one event loop: history from the log then the ring without a gap, a
slow watcher closed with its reason, the ring bounded, the node filter, env values only
for whom the filter shows them to."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from costart.domain import events as ev
from costart.domain.spec import parse_spec
from costart.domain.world import World
from costart.rest.watch import Names, WatchFilter, WatchHub

GROUP = uuid.UUID(int=1)


def node_event(i: int, node: str = "n1") -> ev.NodeStatusChanged:
    return ev.NodeStatusChanged(
        originator_id=GROUP,
        originator_version=i,
        group_id=GROUP,
        at_ns=i * 10**9,
        node=node,
        status="down" if i % 2 else "up",
    )


class FakeLog:
    def __init__(self) -> None:
        self.events: list[ev.DomainEvent] = []

    def add(self, count: int, node: str = "n1") -> None:
        start = len(self.events)
        self.events.extend(node_event(start + i + 1, node) for i in range(count))

    def read(self, after: int, until: int | None):
        last = len(self.events) if until is None else until
        for position in range(after + 1, last + 1):
            yield position, self.events[position - 1]


def positions(chunks: list[bytes]) -> list[int]:
    return [
        int(line[4:])
        for chunk in chunks
        for line in chunk.decode().splitlines()
        if line.startswith("id: ")
    ]


def make_hub(log: FakeLog, ring: int) -> WatchHub:
    return WatchHub(log.read, Names(World()), position=0, ring_events=ring)


def test_a_watcher_from_before_the_ring_reads_the_log_then_follows_the_ring():
    async def run() -> list[int]:
        log = FakeLog()
        hub = make_hub(log, ring=8)
        hub.attach(asyncio.get_running_loop())
        log.add(40)
        hub.feed()
        await asyncio.sleep(0)  # the frames reach the loop
        assert hub.last_position == 40
        stream = hub.stream(3, WatchFilter())
        got: list[bytes] = []
        async for chunk in stream:
            got.append(chunk)
            if positions(got) and positions(got)[-1] == 40:
                log.add(5)
                hub.feed()
            if positions(got) and positions(got)[-1] == 45:
                break
        await stream.aclose()
        return positions(got)

    assert asyncio.run(run()) == list(range(4, 46))


def test_a_watcher_that_falls_behind_the_ring_is_closed_with_the_reason():
    async def run() -> tuple[list[bytes], int]:
        log = FakeLog()
        hub = make_hub(log, ring=8)
        hub.attach(asyncio.get_running_loop())
        stream = hub.stream(0, WatchFilter())
        got = [await stream.__anext__()]  # the opening comment; now live
        log.add(2)
        hub.feed()
        await asyncio.sleep(0)
        got.append(await stream.__anext__())
        log.add(50)  # the watcher does not read meanwhile
        hub.feed()
        await asyncio.sleep(0)
        got.append(await stream.__anext__())
        frames = len(hub._frames)
        await stream.aclose()
        return got, frames

    got, frames = asyncio.run(run())
    assert positions(got) == [1, 2]
    assert got[-1].startswith(b"event: close\n") and b"too slow" in got[-1]
    assert b'"resume_after":2' in got[-1]
    assert frames <= 8 + 8 // 4  # the ring stays bounded


def test_the_node_filter_keeps_only_events_about_those_nodes():
    async def run() -> list[int]:
        log = FakeLog()
        hub = make_hub(log, ring=100)
        hub.attach(asyncio.get_running_loop())
        log.add(3, node="n1")
        log.add(3, node="n2")
        hub.feed()
        await asyncio.sleep(0)
        stream = hub.stream(0, WatchFilter(nodes=frozenset({"n2"})))
        got: list[bytes] = []
        async for chunk in stream:
            got.append(chunk)
            if positions(got):
                break
        await stream.aclose()
        return positions(got)

    assert asyncio.run(run()) == [4, 5, 6]


def submitted_with_env() -> ev.GroupSubmitted:
    member = {"name": "a", "kind": "job", "tasks": 1, "shape": {"cpu": 1}}
    run = {"argv": ["x"], "env": {"API_KEY": "s3cret"}}
    doc = {"name": "g", "owner": "alice", "members": [{**member, "run": run}]}
    return ev.GroupSubmitted(
        originator_id=GROUP,
        originator_version=1,
        group_id=GROUP,
        at_ns=1,
        spec=parse_spec(json.dumps(doc), "json"),
        submission_seq=1,
        member_ids=(uuid.UUID(int=2),),
    )


@pytest.mark.parametrize("ring", [100, 8], ids=["from the ring", "from the log"])
def test_env_values_reach_only_the_watchers_the_filter_shows_them_to(ring):
    """Both ways a frame is read (the shared ring, and the log for a watcher from before
    it) give the owner the values and everybody else the names alone."""

    async def run(shows: bool) -> bytes:
        log = FakeLog()
        log.events.append(submitted_with_env())
        log.add(40)
        hub = make_hub(log, ring=ring)
        hub.attach(asyncio.get_running_loop())
        hub.feed()
        await asyncio.sleep(0)
        stream = hub.stream(0, WatchFilter(shows_env=lambda owner: shows and owner == "alice"))
        got: list[bytes] = []
        async for chunk in stream:
            got.append(chunk)
            if positions(got) and positions(got)[-1] == 41:
                break
        await stream.aclose()
        return b"".join(got)

    owner, other = asyncio.run(run(True)), asyncio.run(run(False))
    assert b"s3cret" in owner and b"env_withheld" not in owner
    assert b"s3cret" not in other
    assert b'"env":[["API_KEY","(hidden)"]],"env_withheld":true' in other
    assert owner.count(b"id: ") == other.count(b"id: ") == 41
