"""PostgreSQL beside LMDB in one run: the durable command rate (one command = one
committed append, acknowledged after the commit) and the replay rate (rebuilding the
whole state from the log). Results: bench/results/pg.json.

The server is ``$COSTART_TEST_POSTGRES_URL`` if set, else a throwaway local one (the
distribution's binaries, fsync on, on 127.0.0.1).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import lmdb_env, rl_spec
from common import controller_on, median_rate, write_results

from costart.domain.decisions import SetPendReason
from costart.domain.events import PendReason
from costart.logging_setup import configure_logging
from costart.pgstore import env_for_url
from costart.pgstore.local_server import LocalServer
from costart.replay.rebuild import rebuild
from costart.store.reading import RecorderSource

COMMANDS = 300
REPLAY_GROUPS = 2000  # each RL group's submit writes several events
COPY_BATCH = 1000


def command_rate(env: dict[str, str]) -> float:
    controller = controller_on(env)
    controller.submit(rl_spec("single"))
    reasons = [PendReason("capacity", f"reason {i % 2}") for i in range(2)]

    def run() -> int:
        for i in range(COMMANDS):
            controller.apply_decisions([SetPendReason("single", reasons[i % 2])])
        return COMMANDS

    rate = median_rate(run, 3)
    controller.close()
    return rate


def fill(lmdb: dict[str, str], pg: dict[str, str]) -> int:
    """A log of REPLAY_GROUPS submits, written on LMDB and copied record for record."""
    source = controller_on(lmdb)
    for n in range(REPLAY_GROUPS):
        source.submit(rl_spec(f"g{n}"))
    target = controller_on(pg)
    start = 1
    while True:
        page = source.recorder.select_notifications(start=start, limit=COPY_BATCH)
        if not page:
            break
        target.recorder.insert_events(list(page))
        start = page[-1].id + 1
    events = source.world.position
    source.close()
    target.close()
    return events


def replay_rate(env: dict[str, str], events: int) -> float:
    source = RecorderSource.from_env(env)

    def run() -> int:
        world = rebuild(source)
        assert world.position == events
        return events

    return median_rate(run, 3)


def main() -> None:
    configure_logging(level=30)
    configured = os.environ.get("COSTART_TEST_POSTGRES_URL")
    server = None if configured else LocalServer().start()
    url = configured or (server.url if server else "")
    try:
        with tempfile.TemporaryDirectory() as scratch:
            base = Path(scratch)
            # Fresh schemas per measurement, so an existing server's data is untouched.
            import psycopg

            schemas = [f"bench_{os.getpid()}_{i}" for i in range(2)]
            with psycopg.connect(url, autocommit=True) as conn:
                for name in schemas:
                    conn.execute(f'CREATE SCHEMA "{name}"')
            try:
                pg_cmd = env_for_url(f"{url}?schema={schemas[0]}")
                pg_replay = env_for_url(f"{url}?schema={schemas[1]}")
                started = time.perf_counter()
                figures = {
                    "lmdb_durable_commands_per_s": command_rate(lmdb_env(base / "cmd")),
                    "pg_durable_commands_per_s": command_rate(pg_cmd),
                }
                events = fill(lmdb_env(base / "replay"), pg_replay)
                figures["replay_events"] = events
                figures["lmdb_replay_events_per_s"] = replay_rate(lmdb_env(base / "replay"), events)
                figures["pg_replay_events_per_s"] = replay_rate(pg_replay, events)
                figures["seconds"] = time.perf_counter() - started
            finally:
                with psycopg.connect(url, autocommit=True) as conn:
                    for name in schemas:
                        conn.execute(f'DROP SCHEMA "{name}" CASCADE')
    finally:
        if server is not None:
            server.stop()
    figures = {k: round(v) if isinstance(v, float) else v for k, v in figures.items()}
    for key, value in figures.items():
        print(f"  {key:32} {value:>10,}")
    write_results(
        "pg", {"figures": figures, "commands": COMMANDS, "server": "PostgreSQL, fsync on"}
    )


if __name__ == "__main__":
    main()
