"""The load generator of `bench_dispatch.py`: a separate process with an async client, so
the figures measure the server, not the client's CPU in the server's process.

Run by the benchmark (one JSON line on stdout):
  python bench/dispatch_load.py submit URL TOKEN CLIENTS COUNT PREFIX
  python bench/dispatch_load.py watch URL TOKEN WATCHERS EXPECTED AFTER
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
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


async def submit_load(
    url: str, token: str, clients: int, count: int, prefix: str
) -> dict[str, Any]:
    """``count`` submits over ``clients`` concurrent connections; rate and latencies."""
    latencies: list[float] = []
    names = iter(range(count))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60, limits=limits) as c:

        async def worker() -> None:
            for i in names:
                started = time.perf_counter()
                response = await c.post("/v1/groups", json=small_spec(f"{prefix}-{i}"))
                latencies.append(time.perf_counter() - started)
                if response.status_code != 201:
                    raise RuntimeError(
                        f"submit {prefix}-{i}: {response.status_code} {response.text}"
                    )

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return {
        "count": count,
        "seconds": elapsed,
        "per_s": count / elapsed,
        "median_ms": statistics.median(latencies) * 1000,
    }


def main(argv: list[str]) -> None:
    kind, url, token, *rest = argv
    if kind == "submit":
        clients, count, prefix = int(rest[0]), int(rest[1]), rest[2]
        result = asyncio.run(submit_load(url, token, clients, count, prefix))
    else:
        raise SystemExit(f"unknown load {kind!r}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
