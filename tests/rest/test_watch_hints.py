"""The watch stream's ``expected-starts`` hint (ADR 0137): only to watchers that ask,
without an ``id:`` (not a log event), sent once caught up, the newest only."""

from __future__ import annotations

import asyncio
import json

from costart.rest.watch import WatchFilter
from tests.rest.test_watch_hub import FakeLog, make_hub, positions


def _frames(chunks: list[bytes], kind: str) -> list[str]:
    return [c.decode() for c in chunks if c.startswith(f"event: {kind}".encode())]


def test_a_hint_reaches_only_watchers_that_ask_after_the_log_events_without_an_id():
    async def run() -> tuple[list[bytes], list[bytes]]:
        log = FakeLog()
        hub = make_hub(log, ring=64)
        hub.attach(asyncio.get_running_loop())
        hub.hint(0, 10**18)  # before any watcher: each that asks gets it once it has come
        await asyncio.sleep(0)
        asking, plain = hub.stream(0, WatchFilter(), hints=True), hub.stream(0, WatchFilter())
        got: dict[str, list[bytes]] = {"asking": [], "plain": []}

        async def read(name: str, stream, count: int) -> None:
            async for chunk in stream:
                got[name].append(chunk)
                if len(got[name]) == count:
                    return

        readers = [
            asyncio.create_task(read("asking", asking, 4)),  # opening, hint, events, hint
            asyncio.create_task(read("plain", plain, 2)),  # opening, events
        ]
        await asyncio.sleep(0.01)
        log.add(3)
        hub.feed()
        hub.hint(3, 2 * 10**18)
        hub.hint(3, 3 * 10**18)  # two plans before the watcher reads: the newest only
        await asyncio.wait_for(asyncio.gather(*readers), 5)
        return got["asking"], got["plain"]

    asking, plain = asyncio.run(run())
    assert positions(asking) == positions(plain) == [1, 2, 3]
    # The plan made before it came (the page it serves may have been read before it),
    # then the newest of the two made after the events.
    first, hint = _frames(asking, "expected-starts")
    assert json.loads(first.split("data: ", 1)[1])["position"] == 0
    assert "id:" not in hint  # a client resuming by Last-Event-ID never skips past it
    body = json.loads(hint.split("data: ", 1)[1])
    assert body == {"position": 3, "planned_at": "2065-01-24T05:20:00Z"}
    assert _frames(plain, "expected-starts") == []
