"""Task output relayed from node agents to callers, in `serve`'s memory only (ADR 0084).

A task's log is a file on its node (ADR 0041's path, written under the agent's work
root). The agent opens no port: a caller's read becomes a pending *request* here, the
node's agent learns of it by long-polling `wanted` over its own authenticated
connection, reads the file and `deliver`s a chunk, and the caller's thread, waiting in
`read`, gets it (a follower's read is asked again every `RECHECK_S` until new bytes
come or its wait is over). Chunks are kept in a bounded window per task attempt so a follower or a
second reader is answered without a round trip; nothing here is ever written to the
event log (log text is not an event and may hold the task's secrets).

Bounds: a chunk is at most `MAX_CHUNK` bytes, a window `MAX_WINDOW`, all windows
`MAX_TOTAL` (the least recently read go first) and idle ones are dropped after
`WINDOW_IDLE_S`; at most `MAX_PENDING` reads wait at once (more are refused, never
queued without end).

Everything runs on the server's event loop (the long polls of a thousand agents and
followers hold no worker thread); no method awaits while it changes the state.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Final, NamedTuple

MAX_CHUNK: Final = 256 * 1024  # as much as an agent sends for one read
MAX_WINDOW: Final = 1024 * 1024
MAX_TOTAL: Final = 32 * 1024 * 1024
MAX_PENDING: Final = 256
LOG_MAX_TAIL_LINES: Final = 100_000
WINDOW_IDLE_S: Final = 300.0
LOG_MAX_WAIT_S: Final = 30.0
RECHECK_S: Final = 0.25  # a follower's file is read again this long after "nothing new"


class LogKey(NamedTuple):
    """One attempt of one task: its log is one file (a relaunch writes another)."""

    group_id: str
    member: str
    task: int
    attempt: int


@dataclass(frozen=True)
class Want:
    """What a node's agent is asked to read: the file at ``path`` (relative to its work
    root) from ``offset``, or its last ``tail`` lines when ``offset`` is None."""

    id: int
    key: LogKey
    group: str
    owner: str
    path: str
    offset: int | None
    tail: int | None


@dataclass(frozen=True)
class Delivery:
    """An agent's answer to one `Want`: ``data`` read at ``offset``; ``size`` the file's
    size when read; ``running`` whether the attempt's process still runs on the node
    (False: the file grows no more); ``missing``/``refused`` say why nothing was read."""

    id: int
    offset: int
    data: bytes
    size: int
    running: bool
    missing: str | None = None
    refused: str | None = None


@dataclass(frozen=True)
class Chunk:
    """What a reader gets: bytes from ``offset`` (``next_offset`` is where to read on),
    the file's last known ``size``, and whether the attempt still ``running``."""

    offset: int
    data: bytes
    size: int
    running: bool


class LogUnavailable(Exception):
    """No answer for a reader: the agent did not answer in time, or the relay is full
    (``status`` is the HTTP status it maps to)."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


class LogRefused(Exception):
    """The node's agent would not read the file (``missing``: there is none yet)."""

    def __init__(self, message: str, *, missing: bool) -> None:
        self.missing = missing
        super().__init__(message)


@dataclass
class _Window:
    start: int
    data: bytearray
    size: int
    running: bool
    read_at: float

    @property
    def end(self) -> int:
        return self.start + len(self.data)


@dataclass
class _Pending:
    want: Want
    node: str
    wait_until: float
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    delivery: Delivery | None = None  # the agent's last answer (maybe nothing new)
    heard_at: float = 0.0  # when it came: the read is asked again `RECHECK_S` after

    def due_at(self) -> float:
        """When the agent should read for it (again): at once until it answered."""
        return 0.0 if self.delivery is None else self.heard_at + RECHECK_S


class LogRelay:
    """Reads, agents' polls and deliveries, all on one event loop."""

    def __init__(self) -> None:
        self._wake: dict[str, asyncio.Event] = {}  # a node's agent waits in `wanted`
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._windows: OrderedDict[LogKey, _Window] = OrderedDict()
        self._total = 0

    # --- readers -------------------------------------------------------------------

    async def read(self, node: str, want: Want, wait_s: float, answer_s: float) -> Chunk:
        """Bytes of ``want``'s file from its offset (or its tail). Answered from the
        window when it holds them; else asked of ``node``'s agent. ``wait_s``: how long
        to wait for *new* bytes of a running attempt once the agent has answered;
        ``answer_s``: how long the agent has to answer at all (`LogUnavailable` 504)."""
        now = time.monotonic()
        self._expire(now)
        if want.offset is not None:
            cached = self._from_window(want.key, want.offset, now)
            if cached is not None:
                return cached
        if len(self._pending) >= MAX_PENDING:
            raise LogUnavailable(503, f"too many log reads at once ({MAX_PENDING})")
        wait_s = min(wait_s, LOG_MAX_WAIT_S)
        pending = _Pending(replace(want, id=next(self._ids)), node, now + wait_s)
        self._pending[pending.want.id] = pending
        self._wake.setdefault(node, asyncio.Event()).set()
        try:  # a heard read still waiting for new bytes gets the agent's last answer
            async with asyncio.timeout(max(answer_s, wait_s)):
                await pending.answered.wait()
        except TimeoutError:
            pass
        finally:
            self._pending.pop(pending.want.id, None)
        delivery = pending.delivery
        if delivery is None:
            raise LogUnavailable(
                504, f"the agent of node {node} did not answer within {answer_s:g}s"
            )
        if delivery.missing is not None:
            raise LogRefused(f"node {node}: {delivery.missing}", missing=True)
        if delivery.refused is not None:
            raise LogRefused(f"node {node}: {delivery.refused}", missing=False)
        return Chunk(delivery.offset, delivery.data, delivery.size, delivery.running)

    # --- agents --------------------------------------------------------------------

    async def wanted(self, node: str, wait_s: float) -> list[Want]:
        """The reads ``node``'s agent should make now: each new one, and each that was
        answered "nothing new" `RECHECK_S` ago (a follower's); waits up to ``wait_s``
        for one. The agent asks again as soon as it has answered."""
        deadline = time.monotonic() + min(wait_s, LOG_MAX_WAIT_S)
        while True:
            now = time.monotonic()
            waiting = [
                p for p in self._pending.values() if p.node == node and not p.answered.is_set()
            ]
            found = [p.want for p in waiting if p.due_at() <= now]
            left = deadline - now
            if found or left <= 0:
                return found
            soonest = min((p.due_at() - now for p in waiting), default=left)
            wake = self._wake.setdefault(node, asyncio.Event())
            wake.clear()
            try:
                async with asyncio.timeout(min(left, soonest)):
                    await wake.wait()
            except TimeoutError:
                pass

    def deliver(self, node: str, deliveries: list[Delivery]) -> int:
        """Take an agent's answers; those to no pending read of ``node`` are dropped
        (a read that gave up, or another node's). How many were taken."""
        taken = 0
        now = time.monotonic()
        for sent in deliveries:
            pending = self._pending.get(sent.id)
            if pending is None or pending.node != node:
                continue
            taken += 1
            delivery = replace(sent, data=sent.data[:MAX_CHUNK])
            failed = delivery.missing is not None or delivery.refused is not None
            if not failed:
                self._store(pending.want.key, delivery, now)
            pending.delivery, pending.heard_at = delivery, now  # nothing new: asked again
            if delivery.data or not delivery.running or failed or now >= pending.wait_until:
                pending.answered.set()
        return taken

    # --- the windows ---------------------------------------------------------------

    def held_bytes(self) -> int:
        return self._total

    def _from_window(self, key: LogKey, offset: int, now: float) -> Chunk | None:
        window = self._windows.get(key)
        if window is None or offset < window.start:
            return None
        ended = not window.running and window.end >= window.size
        if offset >= window.end and not (ended and offset == window.end):
            return None  # new bytes (if any) are on the node; an ended file grows no more
        window.read_at = now
        self._windows.move_to_end(key)
        begin = offset - window.start
        data = bytes(window.data[begin : begin + MAX_CHUNK])
        return Chunk(offset, data, window.size, window.running)

    def _store(self, key: LogKey, delivery: Delivery, now: float) -> None:
        window = self._windows.get(key)
        if window is not None and window.start <= delivery.offset <= window.end:
            keep = delivery.offset - window.start
            self._total -= len(window.data) - keep
            del window.data[keep:]
            window.data += delivery.data
        else:
            if window is not None:
                self._total -= len(window.data)
            window = _Window(delivery.offset, bytearray(delivery.data), 0, True, now)
            self._windows[key] = window
        self._total += len(delivery.data)
        window.size, window.running, window.read_at = delivery.size, delivery.running, now
        self._windows.move_to_end(key)
        if len(window.data) > MAX_WINDOW:
            drop = len(window.data) - MAX_WINDOW
            del window.data[:drop]
            window.start += drop
            self._total -= drop
        while self._total > MAX_TOTAL and self._windows:
            _, oldest = self._windows.popitem(last=False)
            self._total -= len(oldest.data)

    def _expire(self, now: float) -> None:
        for key in [k for k, w in self._windows.items() if now - w.read_at > WINDOW_IDLE_S]:
            self._total -= len(self._windows.pop(key).data)
