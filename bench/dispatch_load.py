"""The load generator of `bench_dispatch.py`: a separate process with an async client, so
the figures measure the server, not the client's CPU in the server's process.

Run by the benchmark (one JSON line on stdout):
  python bench/dispatch_load.py submit URL TOKEN CLIENTS COUNT PREFIX
  python bench/dispatch_load.py barrier URL TOKEN TRIALS
  python bench/dispatch_load.py watchers URL TOKEN WATCHERS EVENTS READY_FILE GO_FILE

``watchers`` opens the watchers (raw asyncio streams: light enough for a thousand in
one process), writes READY_FILE once all are connected (the benchmark then reads the
server's memory), waits for GO_FILE, makes a burst of EVENTS small events (nodes drained
and up again) and checks that every watcher received every event of it, in log order.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

MEMBERS = 4


def small_spec(name: str) -> dict[str, Any]:
    """The issue's small spec: four one-task job members, one claim each."""
    members = [
        {"name": f"m{i}", "kind": "job", "tasks": 1, "shape": {"gpu": 1}, "claims": ["gpus"]}
        for i in range(MEMBERS)
    ]
    return {"name": name, "owner": "alice", "members": members}


async def _post(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bytes]:
    """One HTTP/1.1 request on a kept-alive connection; (status, body)."""
    writer.write(request)
    await writer.drain()
    status = int((await reader.readline()).split(b" ", 2)[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, await reader.readexactly(length)


async def submit_load(
    url: str, token: str, clients: int, count: int, prefix: str
) -> dict[str, Any]:
    """``count`` submits over ``clients`` concurrent kept-alive connections; rate and
    latencies. A bare HTTP/1.1 client with the bodies encoded beforehand: the client's
    CPU shares the machine with the server, so it must cost little per request."""
    host, port = url.removeprefix("http://").split(":")
    requests = []
    for i in range(count):
        body = json.dumps(small_spec(f"{prefix}-{i}")).encode()
        head = (
            f"POST /v1/groups HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        requests.append(head.encode() + body)
    pending = iter(requests)
    latencies: list[float] = []

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for request in pending:
                started = time.perf_counter()
                status, body = await _post(reader, writer, request)
                latencies.append(time.perf_counter() - started)
                if status != 201:
                    raise RuntimeError(f"submit refused: {status} {body[:300]!r}")
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    elapsed = time.perf_counter() - started
    return {
        "count": count,
        "seconds": elapsed,
        "per_s": count / elapsed,
        "median_ms": statistics.median(latencies) * 1000,
    }


async def position(c: httpx.AsyncClient) -> int:
    return int((await c.get("/healthz")).json()["position"])


async def barrier_latency(url: str, token: str, trials: int) -> dict[str, Any]:
    """Per trial: a 2-member group is placed; the claims role reports both claims READY
    while a watcher follows the group; the time from the last report's response to the
    `BarrierReleased` frame reaching the watcher."""
    headers = {"Authorization": f"Bearer {token}"}
    latencies = []
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as c:
        for trial in range(trials):
            name = f"barrier-{trial}"
            members = [
                {"name": m, "kind": "job", "tasks": 1, "shape": {"gpu": 1}, "claims": ["gpus"]}
                for m in ("a", "b")
            ]
            body = {"name": name, "owner": "alice", "members": members}
            if (await c.post("/v1/groups", json=body)).status_code != 201:
                raise RuntimeError(f"submit {name} refused")
            while (await c.get(f"/v1/groups/{name}")).json()["group"]["state"] != "PLACED":
                await asyncio.sleep(0.01)
            after = await position(c)
            params = {"group": name, "after": after}
            async with c.stream("GET", "/v1/watch", params=params) as stream:
                lines = stream.aiter_lines()
                await lines.__anext__()  # the opening comment: the watch is live
                ready = {"attempt": 1, "status": "READY"}
                for m in ("a", "b"):
                    answer = await c.post(f"/v1/groups/{name}/members/{m}/claims/gpus", json=ready)
                    if answer.status_code != 200:
                        raise RuntimeError(f"claim of {name}/{m}: {answer.text}")
                answered = time.perf_counter()
                async for line in lines:
                    if line == "event: BarrierReleased":
                        latencies.append(time.perf_counter() - answered)
                        break
            await c.delete(f"/v1/groups/{name}")  # give the capacity back
    latencies.sort()
    return {
        "trials": trials,
        "median_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
    }


async def _open_watch(
    host: str, port: int, token: str, after: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw watch connection (the writer is kept: dropping it closes the socket)."""
    reader, writer = await asyncio.open_connection(host, port, limit=2**16)
    writer.write(
        f"GET /v1/watch?after={after} HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    await writer.drain()
    status = await reader.readline()
    if b" 200 " not in status:
        raise RuntimeError(f"watch refused: {status!r}")
    while (await reader.readline()) not in (b"\r\n", b""):
        pass  # the headers
    return reader, writer


_ID = re.compile(rb"\nid: (\d+)\n")


async def _count(reader: asyncio.StreamReader, first: int, last: int) -> bool:
    """Read the stream until position ``last``; True if every position from ``first``
    came once, in order. Reads large blocks and finds the ids with one regex (a line at
    a time would make the client, not the server, the bottleneck)."""
    expected = first
    tail = b"\n"
    while expected <= last:
        block = await reader.read(2**16)
        if not block:
            return False
        data = tail + block
        cut = data.rfind(b"\n\n")  # frames end with a blank line: parse whole ones
        if cut < 0:
            tail = data
            continue
        for found in _ID.findall(data, 0, cut + 1):
            if int(found) != expected:
                return False
            expected += 1
        tail = data[cut + 1 :]
    return True


async def _flip_nodes(c: httpx.AsyncClient, events: int, nodes: list[str]) -> None:
    """``events`` NodeStatusChanged events: each node drained then up again, 16 at once."""
    queue = iter(range(events))

    async def worker(node: str) -> None:
        status = "drained"
        for _ in queue:
            answer = await c.put(f"/v1/nodes/{node}/status", json={"status": status})
            if answer.status_code != 200 or answer.json()["events"] != 1:
                raise RuntimeError(f"node {node}: {answer.text}")
            status = "up" if status == "drained" else "drained"

    await asyncio.gather(*(worker(n) for n in nodes))


async def watchers_burst(
    url: str, token: str, watchers: int, events: int, ready_file: str, go_file: str
) -> dict[str, Any]:
    host, port = url.removeprefix("http://").split(":")
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as c:
        start = await position(c)
        connections = []
        for _ in range(watchers):
            connections.append(await _open_watch(host, int(port), token, start))
        Path(ready_file).write_text("connected\n")
        while not Path(go_file).exists():
            await asyncio.sleep(0.05)
        first, last = start + 1, start + events  # each flip writes exactly one event
        started = time.perf_counter()
        # Every watcher reads while the burst is made, as a live client would.
        counting = [asyncio.create_task(_count(r, first, last)) for r, _ in connections]
        await _flip_nodes(c, events, [f"h100-{i:04d}" for i in range(16)])
        if await position(c) != last:
            raise RuntimeError("the burst wrote other events than the node flips")
        results = await asyncio.gather(*counting)
        for _, writer in connections:
            writer.close()
        elapsed = time.perf_counter() - started
    return {
        "watchers": watchers,
        "events": last - start,
        "all_in_order": all(results),
        "complete_watchers": sum(results),
        "seconds": elapsed,
    }


def main(argv: list[str]) -> None:
    kind, url, token, *rest = argv
    if kind == "submit":
        clients, count, prefix = int(rest[0]), int(rest[1]), rest[2]
        result = asyncio.run(submit_load(url, token, clients, count, prefix))
    elif kind == "barrier":
        result = asyncio.run(barrier_latency(url, token, int(rest[0])))
    elif kind == "watchers":
        watchers, events, ready, go = int(rest[0]), int(rest[1]), rest[2], rest[3]
        result = asyncio.run(watchers_burst(url, token, watchers, events, ready, go))
    else:
        raise SystemExit(f"unknown load {kind!r}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
