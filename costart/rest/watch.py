"""The watch stream: every committed event as a Server-Sent Event, from a log position.

One `WatchHub` per server. After each command the service's feed thread has the hub read
the log's new events, encodes each once as an SSE frame (``id:`` is the log position, so
a client resumes with ``Last-Event-ID``), and appends the frames to one shared ring.
Each watcher is only a cursor into that ring, so a watcher costs a few objects, not a
copy of the stream. A watcher that falls more than the ring behind (a slow reader; the
server's socket send blocks while the client reads slowly, bounded by the transport's
flow control) is closed with an ``event: close`` frame naming the reason and the
position to resume from; nothing grows without bound. A watcher that starts before the
ring reads the log itself in chunks, then joins the ring.

Filters: by group name, and by nodes (an agent watches only its nodes: an event passes
when it names one of them, or its member -- for a group's event, its group -- has had a
task placed on one).

A watcher that asks for hints (the board's) also gets ``expected-starts`` frames: no
``id:`` and no log event, only the log position and time the waiting groups' expected
starts were last planned at (`WatchHub.hint`), sent when it is caught up; a watcher
that misses one gets the newest, so a hint costs no ring space (ADR 0137). A watcher
that has just come gets the newest there is once it is caught up: the page it serves
was read before it connected, and a plan made in between would be missed until the next.

Run tables' env values (in ``GroupSubmitted`` and ``MemberCreated``) reach only the
group's owner and admins; every other watcher gets the frame with them withheld
(`costart.rest.env_values`). A frame that carries none is one encoding for everybody.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from typing import Final, NamedTuple

import msgspec
from anyio import to_thread

from costart.domain import events as ev
from costart.domain.world import World
from costart.rest.env_values import event_without_env

DEFAULT_RING_EVENTS: Final = 20_000
HISTORY_CHUNK: Final = 2_000
FRAMES_PER_SEND: Final = 32
KEEPALIVE_S: Final = 15.0
KEEPALIVE: Final = b": keepalive\n\n"
"""Sent after `KEEPALIVE_S` without an event: an SSE comment (clients ignore it)."""
_TERMINAL = (ev.GroupSucceeded, ev.GroupFailed, ev.GroupCancelled)
_encode = msgspec.json.Encoder().encode

ReadEvents = Callable[[int, int | None], Iterator[tuple[int, ev.DomainEvent]]]


class Frame:
    """One event as the watch stream sends it. The SSE bytes are encoded on first use
    and kept: a server nobody watches encodes nothing, and a thousand watchers share
    one encoding (two for an event with env values: see `data_for`). ``owner`` is the
    group's owner, who may see them."""

    __slots__ = (
        "_data",
        "_event",
        "_withheld",
        "group",
        "group_id",
        "member",
        "nodes",
        "owner",
        "position",
    )

    def __init__(
        self,
        position: int,
        group_id: str,
        nodes: frozenset[str],
        event: ev.DomainEvent,
        group: str | None,
        member: str | None,
        owner: str | None = None,
    ) -> None:
        self.position = position
        self.group_id = group_id
        self.nodes = nodes
        self._event: ev.DomainEvent | None = event  # dropped once encoded
        self.group = group  # the names as they were at the event
        self.member = member
        self.owner = owner
        self._data: bytes | None = None
        self._withheld: bytes | None = None  # set only when it differs from _data

    @property
    def data(self) -> bytes:
        """The whole SSE frame, env values and all (for the group's owner and admins)."""
        if self._data is None:
            self._encode()
        assert self._data is not None
        return self._data

    def data_for(self, shows_env: bool) -> bytes:
        """The frame for a watcher who may (``shows_env``) or may not see env values."""
        data = self.data
        return data if shows_env or self._withheld is None else self._withheld

    def _encode(self) -> None:
        event = self._event
        assert event is not None  # kept until encoded
        self._data = self._frame(event)
        hidden = event_without_env(event)
        if hidden is not event:
            self._withheld = self._frame(hidden)
        self._event = None

    def _frame(self, event: ev.DomainEvent) -> bytes:
        body = _encode(
            {
                "position": self.position,
                "type": type(event).__name__,
                "group": self.group,
                "member": self.member,
                "at": _iso(event.at_ns),
                "event": event,
            }
        )
        head = b"id: %d\nevent: %s\ndata: " % (self.position, type(event).__name__.encode())
        return head + body + b"\n\n"


def _iso(at_ns: int) -> str:
    stamp = datetime.fromtimestamp(at_ns // 10**9, tz=UTC)
    return stamp.isoformat().replace("+00:00", "Z")


def hint_frame(position: int, planned_at_ns: int) -> bytes:
    """New expected starts, planned at log ``position`` (no ``id:``: it is not an event
    of the log, and a client resuming by ``Last-Event-ID`` must not skip past it)."""
    body = _encode({"position": position, "planned_at": _iso(planned_at_ns)})
    return b"event: expected-starts\ndata: " + body + b"\n\n"


def close_frame(reason: str, resume_after: int) -> bytes:
    body = _encode({"reason": reason, "resume_after": resume_after})
    return b"event: close\ndata: " + body + b"\n\n"


class Names:
    """Group and member names, group owners and the nodes each group has tasks on, by id:
    what a frame says and what the node and env filters read. Seeded from the live
    state, kept by the feed."""

    def __init__(self, world: World) -> None:
        self.groups: dict[str, str] = {}
        self.owners: dict[str, str] = {}  # group id -> its owner
        self.members: dict[str, str] = {}
        self.nodes: dict[str, set[str]] = {}  # group id or member id -> nodes it has tasks on
        for key, group in world.groups.items():
            self.groups[key] = group.name
            self.owners[key] = group.spec.owner
        for key, member in world.members.items():
            self.members[key] = member.name
            assigned = {a.node for a in (*member.assignments, *member.held)}
            if assigned:
                self.nodes.setdefault(key, set()).update(assigned)
                self.nodes.setdefault(str(member.group_id), set()).update(assigned)

    def frame(self, position: int, event: ev.DomainEvent) -> Frame:
        gid = str(event.group_id)
        oid = str(event.originator_id)  # the group's id for group events, else the member's
        named: set[str] = set()
        if isinstance(event, ev.GroupSubmitted):
            self.groups[gid] = event.spec.name
            self.owners[gid] = event.spec.owner
        elif isinstance(event, ev.MemberCreated):
            self.members[str(event.originator_id)] = event.spec.name
        elif isinstance(event, ev.MemberHeld | ev.MemberPlaced):
            named = {a.node for a in event.assignments}
            self.nodes.setdefault(oid, set()).update(named)
            self.nodes.setdefault(gid, set()).update(named)
        elif isinstance(event, ev.MemberScaled):
            named = {a.node for a in event.removed}
        elif isinstance(event, ev.NodeStatusChanged):
            named = {event.node}
        # A member's event concerns its own nodes; a group's event all of the group's.
        nodes = frozenset(named | self.nodes.get(oid, set()))
        if isinstance(event, _TERMINAL):
            self.nodes.pop(gid, None)  # a terminal group holds nothing
        return Frame(
            position,
            gid,
            nodes,
            event,
            self.groups.get(gid),
            self.members.get(oid),
            self.owners.get(gid),
        )


def _no_one(owner: str | None) -> bool:
    return False


class WatchFilter(NamedTuple):
    """Which frames a watcher gets, and (``shows_env``: given a group's owner, None if
    not known) whether it may see their env values."""

    group_id: str | None = None
    nodes: frozenset[str] | None = None
    shows_env: Callable[[str | None], bool] = _no_one

    def passes(self, frame: Frame) -> bool:
        if self.group_id is not None and frame.group_id != self.group_id:
            return False
        return self.nodes is None or not self.nodes.isdisjoint(frame.nodes)

    def data(self, frame: Frame) -> bytes:
        """The frame's bytes as this watcher may read them."""
        return frame.data_for(self.shows_env(frame.owner))


class WatchHub:
    """The shared ring of frames. `feed` runs in a worker thread (the service's feed);
    everything else in the event loop of the server (`attach` it on startup)."""

    def __init__(
        self,
        read_events: ReadEvents,
        names: Names,
        position: int,
        ring_events: int = DEFAULT_RING_EVENTS,
    ) -> None:
        if ring_events <= 0:
            raise ValueError("the watch ring must hold at least one event")
        self._read_events = read_events
        self._names = names
        self.ring_events = ring_events
        self._fed = position  # the feed's position in the log (worker thread)
        self._frames: list[Frame] = []
        self._first = position + 1  # the position of _frames[0]
        self._changed = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.watchers = 0
        self._hint = b""  # the newest hint frame; hints counts them
        self.hints = 0

    @classmethod
    def following(cls, read_events: ReadEvents, world: World) -> WatchHub:
        """A hub from the world's position on, naming groups as the world does. Build it
        before any command runs: the names and the position must be one picture."""
        return cls(read_events, Names(world), world.position)

    @property
    def fed_position(self) -> int:
        """The last log position the feed has read (frames up to it may be out)."""
        return self._fed

    @property
    def last_position(self) -> int:
        return self._first + len(self._frames) - 1

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._changed = asyncio.Event()

    # --- the feed (worker thread) ------------------------------------------------------

    def feed(self) -> int:
        """Encode the log's events beyond the last fed position and hand them to the loop;
        the position fed. Called by one thread at a time (the service's feed thread)."""
        frames = [self._names.frame(p, e) for p, e in self._read_events(self._fed, None)]
        if not frames:
            return self._fed
        self._fed = frames[-1].position
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._append, frames)
        else:  # not serving yet (or tests without a loop): keep them for later watchers
            self._append(frames)
        return self._fed

    def _append(self, frames: list[Frame]) -> None:
        self._frames.extend(frames)
        excess = len(self._frames) - self.ring_events
        if excess > self.ring_events // 4:  # trim in steps, not per event
            del self._frames[:excess]
            self._first += excess
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def hint(self, position: int, planned_at_ns: int) -> None:
        """New expected starts were planned at log ``position`` (any thread): watchers
        that asked for hints get one frame saying so, the newest only."""
        frame = hint_frame(position, planned_at_ns)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._set_hint, frame)
        else:
            self._set_hint(frame)

    def _set_hint(self, frame: bytes) -> None:
        self._hint = frame
        self.hints += 1
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # --- watchers (event loop) ---------------------------------------------------------

    async def stream(
        self, after: int, where: WatchFilter, hints: bool = False
    ) -> AsyncIterator[bytes]:
        """Frames after log position ``after`` that pass ``where``, live, until the
        client goes away or falls more than the ring behind (then a close frame);
        ``hints``: and the newest ``expected-starts`` hint whenever it is caught up."""
        self.watchers += 1
        # The newest hint is news to a watcher that has just come (0: none yet seen): what
        # it shows was read before it connected, and a plan may have been made between.
        hinted = 0
        try:
            cursor = after + 1  # the next position to send
            live = False  # joined the ring (before: catching up from the log)
            yield b": watching from %d\n\n" % cursor
            while True:
                index = cursor - self._first
                if index < 0:
                    if live:
                        yield close_frame(
                            f"too slow: fell more than {self.ring_events} events behind",
                            cursor - 1,
                        )
                        return
                    history = await to_thread.run_sync(self._history, cursor, self._first - 1)
                    chunk = b"".join(where.data(f) for f in history if where.passes(f))
                    if chunk:
                        yield chunk
                    cursor = history[-1].position + 1 if history else self._first
                    continue
                live = True
                frames = self._frames
                if index < len(frames):
                    # A few frames per send: fewer writes, and no copy of the ring.
                    end = min(len(frames), index + FRAMES_PER_SEND)
                    chunk = b"".join(
                        where.data(frames[i]) for i in range(index, end) if where.passes(frames[i])
                    )
                    cursor += end - index
                    if chunk:
                        yield chunk
                    continue
                if hints and hinted != self.hints:
                    hinted = self.hints
                    yield self._hint
                    continue
                changed = self._changed
                try:
                    await asyncio.wait_for(changed.wait(), KEEPALIVE_S)
                except TimeoutError:
                    yield KEEPALIVE
        finally:
            self.watchers -= 1

    def _history(self, first: int, last: int) -> list[Frame]:
        """Frames read from the log for positions ``first..last`` (one chunk)."""
        until = min(last, first + HISTORY_CHUNK - 1)
        names = self._names
        return [names.frame(p, e) for p, e in self._read_events(first - 1, until)]
