"""A client under load: submits groups to whichever server answers, one at a time.

Run as ``python -m tests.ha.writer SEED URL [URL...]``. Prints ``seed N`` first, then
``ack NAME`` for every group the server acknowledged (201, durable), or found already
there on a retry (409: the first try was committed but its answer lost). One ``write(2)``
per line, so a kill never leaves half a line. Runs until killed.
"""

from __future__ import annotations

import os
import random
import sys
import time

import httpx

from tests.ha.procs import TOKEN, group_spec


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def main(seed: int, urls: list[str]) -> None:
    rng = random.Random(seed)
    say(f"seed {seed}")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    clients = [httpx.Client(base_url=u, headers=headers, timeout=5) for u in urls]
    current = 0
    n = 0
    while True:
        name = f"w{seed % 1000}-{n}"
        spec = group_spec(name, tasks=rng.randint(1, 3), gpu=rng.choice((1, 2, 4)))
        try:
            status = clients[current].post("/v1/groups", json=spec).status_code
        except httpx.HTTPError:
            status = 0
        if status in (201, 409):
            say(f"ack {name}")
            n += 1
        else:  # unreachable, or not the leader any more: try the other server
            current = (current + 1) % len(clients)
            time.sleep(0.01)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
