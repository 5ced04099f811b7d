"""The log relay's rules (ADR 0084), on one event loop with a stand-in agent: a read
waits for the node's agent, a heard read waits for new bytes until its wait is over,
answers to another node's or a gone read are dropped, and every bound holds (a chunk,
a window, all windows, the reads waiting at once)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from costart.rest.log_wire import LOG_PIECE_BYTES
from costart.service import log_relay
from costart.service.log_relay import (
    MAX_CHUNK,
    Chunk,
    Delivery,
    LogKey,
    LogRefused,
    LogRelay,
    LogUnavailable,
    Want,
)

T = TypeVar("T")
KEY = LogKey("gid-1", "trainer", 0, 1)


def want(offset: int | None = 0, key: LogKey = KEY, tail: int | None = None) -> Want:
    return Want(0, key, "grpo", "alice", f"logs/{key.member}.log", offset, tail)


def run(test: Callable[[LogRelay], Awaitable[T]]) -> T:
    async def main() -> T:
        async with asyncio.timeout(20):
            return await test(LogRelay())

    return asyncio.run(main())


async def agent(relay: LogRelay, node: str, answer: Callable[[Want], Delivery]) -> int:
    """One round of a node's agent: the reads it is asked, answered."""
    wants = await relay.wanted(node, 5)
    return relay.deliver(node, [answer(w) for w in wants])


def test_the_api_bounds_match_the_wire() -> None:
    assert MAX_CHUNK == LOG_PIECE_BYTES


def test_a_read_waits_for_the_agent_and_the_window_answers_the_next() -> None:
    async def test(relay: LogRelay) -> tuple[Chunk, Chunk, int]:
        reader = asyncio.create_task(relay.read("n1", want(0), 0, 5))
        taken = await agent(relay, "n1", lambda w: Delivery(w.id, 0, b"one\ntwo\n", 8, True))
        first = await reader
        again = await relay.read("n1", want(4), 0, 0.01)  # no agent: from the window
        return first, again, taken

    first, again, taken = run(test)
    assert taken == 1
    assert first == Chunk(0, b"one\ntwo\n", 8, True)
    assert again == Chunk(4, b"two\n", 8, True)


def test_a_follower_waits_for_new_bytes_until_they_come() -> None:
    async def test(relay: LogRelay) -> tuple[Chunk, int]:
        reader = asyncio.create_task(relay.read("n1", want(8), 10, 5))
        rounds = 0
        for data in (b"", b"", b"three\n"):
            rounds += 1
            await agent(relay, "n1", lambda w, d=data: Delivery(w.id, 8, d, 8 + len(d), True))
            await asyncio.sleep(0)
        return await reader, rounds

    chunk, rounds = run(test)
    assert chunk == Chunk(8, b"three\n", 14, True) and rounds == 3


def test_a_heard_read_gets_nothing_new_when_its_wait_is_over() -> None:
    async def test(relay: LogRelay) -> Chunk:
        reader = asyncio.create_task(relay.read("n1", want(8), 0.2, 0.2))
        await agent(relay, "n1", lambda w: Delivery(w.id, 8, b"", 8, True))
        return await reader

    assert run(test) == Chunk(8, b"", 8, True)


def test_no_answer_is_504_naming_the_node_and_a_full_relay_is_503() -> None:
    async def silent(relay: LogRelay) -> None:
        await relay.read("n9", want(0), 0, 0.05)

    with pytest.raises(LogUnavailable, match="agent of node n9 did not answer") as raised:
        run(silent)
    assert raised.value.status == 504

    async def full(relay: LogRelay) -> int:
        readers = [
            asyncio.create_task(relay.read("n1", want(i), 0, 5))
            for i in range(log_relay.MAX_PENDING)
        ]
        await asyncio.sleep(0)
        try:
            await relay.read("n1", want(0), 0, 5)
        except LogUnavailable as error:
            status = error.status
        await agent(relay, "n1", lambda w: Delivery(w.id, w.offset or 0, b"", 0, False))
        await asyncio.gather(*readers)
        return status

    assert run(full) == 503


def test_answers_for_another_node_or_a_gone_read_are_dropped() -> None:
    async def test(relay: LogRelay) -> tuple[int, int, list[Want]]:
        reader = asyncio.create_task(relay.read("n1", want(0), 0, 5))
        (asked,) = await relay.wanted("n1", 1)
        other = relay.deliver("n2", [Delivery(asked.id, 0, b"forged", 6, True)])
        gone = relay.deliver("n1", [Delivery(asked.id + 100, 0, b"forged", 6, True)])
        relay.deliver("n1", [Delivery(asked.id, 0, b"real\n", 5, True)])
        assert (await reader).data == b"real\n"
        return other, gone, await relay.wanted("n2", 0)

    assert run(test) == (0, 0, [])


def test_a_refusal_and_a_missing_file_reach_the_reader_and_nothing_is_kept() -> None:
    async def test(relay: LogRelay, refused: bool) -> None:
        reader = asyncio.create_task(relay.read("n1", want(0), 0, 5))
        why = "logs/trainer.log is a symlink or not a directory: not followed"

        def answer(w: Want) -> Delivery:
            if refused:
                return Delivery(w.id, 0, b"", 0, True, refused=why)
            return Delivery(w.id, 0, b"", 0, True, missing="no such file")

        await agent(relay, "n1", answer)
        try:
            await reader
        finally:
            assert relay.held_bytes() == 0

    with pytest.raises(LogRefused, match=r"node n1: .*not followed") as refusal:
        asyncio.run(test(LogRelay(), True))
    assert not refusal.value.missing
    with pytest.raises(LogRefused, match="no such file") as missing:
        asyncio.run(test(LogRelay(), False))
    assert missing.value.missing


def test_an_ended_attempt_read_to_its_end_is_answered_from_the_window() -> None:
    async def test(relay: LogRelay) -> Chunk:
        reader = asyncio.create_task(relay.read("n1", want(0), 0, 5))
        await agent(relay, "n1", lambda w: Delivery(w.id, 0, b"last\n", 5, False))
        await reader
        return await relay.read("n1", want(5), 0, 0.01)  # no agent: the file is whole

    assert run(test) == Chunk(5, b"", 5, False)


def test_every_bound_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_relay, "MAX_WINDOW", 1000)
    monkeypatch.setattr(log_relay, "MAX_TOTAL", 2500)
    keys = [LogKey(f"gid-{i}", "m", 0, 1) for i in range(4)]

    async def test(relay: LogRelay) -> list[int]:
        held = []
        for key in keys:
            for offset in range(0, 3000, 600):  # 5 pieces of 600 bytes per key
                reader = asyncio.create_task(relay.read("n1", want(offset, key), 0, 5))
                await agent(
                    relay, "n1", lambda w, o=offset: Delivery(w.id, o, b"x" * 600, o + 600, True)
                )
                await reader
                held.append(relay.held_bytes())
        big = asyncio.create_task(relay.read("n1", want(3000, keys[0]), 0, 5))
        await agent(
            relay, "n1", lambda w: Delivery(w.id, 3000, b"y" * (MAX_CHUNK + 99), 9**9, True)
        )
        assert len((await big).data) == MAX_CHUNK  # a piece past the bound is cut
        return held

    held = run(test)
    assert max(held) <= 2500
    assert held[4] == 1000  # one key's window: its last 1000 bytes


def test_windows_idle_too_long_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    async def test(relay: LogRelay) -> tuple[int, int]:
        reader = asyncio.create_task(relay.read("n1", want(0), 0, 5))
        await agent(relay, "n1", lambda w: Delivery(w.id, 0, b"kept\n", 5, True))
        await reader
        before = relay.held_bytes()
        monkeypatch.setattr(log_relay, "WINDOW_IDLE_S", -1.0)
        other = asyncio.create_task(relay.read("n1", want(0, LogKey("g2", "m", 0, 1)), 0, 5))
        await agent(relay, "n1", lambda w: Delivery(w.id, 0, b"", 0, True))
        await other
        return before, relay.held_bytes()

    assert run(test) == (5, 0)


def test_a_heard_read_is_asked_again_after_the_recheck_while_a_new_one_is_asked_at_once() -> None:
    async def test(relay: LogRelay) -> tuple[list[int], float, list[int]]:
        follower = asyncio.create_task(relay.read("n1", want(8), 5, 5))
        (first,) = await relay.wanted("n1", 1)
        relay.deliver("n1", [Delivery(first.id, 8, b"", 8, True)])  # nothing new yet
        reader = asyncio.create_task(relay.read("n1", want(0, LogKey("g2", "m", 0, 1)), 0, 5))
        await asyncio.sleep(0)
        at_once = [w.key.group_id for w in await relay.wanted("n1", 1)]
        relay.deliver(
            "n1", [Delivery(w.id, 0, b"x\n", 2, True) for w in await relay.wanted("n1", 0)]
        )
        await reader
        started = time.monotonic()
        again = [w.key.group_id for w in await relay.wanted("n1", 1)]
        waited = time.monotonic() - started
        relay.deliver("n1", [Delivery(first.id, 8, b"new\n", 12, True)])
        await follower
        return at_once, waited, again

    at_once, waited, again = run(test)
    assert at_once == ["g2"]  # the heard follower is not asked again at once
    assert again == ["gid-1"] and waited >= log_relay.RECHECK_S * 0.8
