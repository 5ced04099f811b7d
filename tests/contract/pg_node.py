"""One controller process on a PostgreSQL log, for the failover tests (one host stands
in for two). ``python -m tests.contract.pg_node URL leader|standby PREFIX``.

It prints one line per fact the test reads: ``TAILING``, ``PROMOTED epoch position``,
``ACK name`` after each acknowledged submit (durable: the insert committed), and
``FENCED reason`` before exiting 3 once it was deposed. It submits groups named
``PREFIX-n`` until killed (bounded: at most ``MAX_SUBMITS``).
"""

from __future__ import annotations

import logging
import os
import sys
import threading

from costart.bootstrap import Settings, bootstrap
from costart.log_writer import ControllerStoppedError
from costart.logging_setup import configure_logging
from costart.pgstore import env_for_url
from costart.pgstore.ha import LeaseKeeper, Standby, fenced_env, open_factory, open_lease
from tests.builders import a_group

LEASE_MS = 600
MAX_SUBMITS = 20_000
FENCED_EXIT = 3


def say(line: str) -> None:
    print(line, flush=True)


def deposed(reason: str) -> None:
    say(f"FENCED {reason}")
    os._exit(FENCED_EXIT)


def main(url: str, role: str, prefix: str) -> None:
    env = env_for_url(url)
    factory = open_factory(env)
    lease = open_lease(factory, duration_ms=LEASE_MS)
    if role == "standby":
        standby = Standby(factory, lease, poll_s=0.02)
        say("TAILING")
        epoch = standby.wait_for_lease()
        assert epoch is not None
        say(f"PROMOTED {epoch} {standby.world.position}")
    else:
        epoch = lease.try_acquire()
        if epoch is None:
            deposed("the lease is held")
            return
    controller = bootstrap(Settings(cluster=None), env=fenced_env(env, epoch))
    keeper = LeaseKeeper(lease, deposed)
    keeper.start()
    for n in range(MAX_SUBMITS):
        name = f"{prefix}-{n}"
        try:
            controller.submit(a_group(name).with_member("a").build())
        except ControllerStoppedError as error:
            deposed(f"append refused: {error}")
        say(f"ACK {name}")
    threading.Event().wait()


if __name__ == "__main__":
    # Logs go to stderr: stdout carries only the lines above, each whole (a log line
    # written by another thread could otherwise run into one of them).
    configure_logging(level=logging.WARNING)
    main(*sys.argv[1:4])
