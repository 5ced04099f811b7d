"""The writer of the power-loss test: ``python -m tests.powerloss.writer STORE DURABILITY
SECONDS`` submits groups to a Controller on the LMDB store at STORE and prints ``ACK``
and each group's name once `submit` has returned (acknowledged), for up to SECONDS after the store
opened; then it prints ``done`` and waits to be killed."""

from __future__ import annotations

import logging
import sys
import time

from costart.controller import Controller
from costart.logging_setup import configure_logging
from tests.builders import a_group


def main() -> None:
    configure_logging(level=logging.WARNING)
    path, durability, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    env = {
        "PERSISTENCE_MODULE": "costart.store",
        "COSTART_LMDB_PATH": path,
        "COSTART_LMDB_DURABILITY": durability,
        "COSTART_LMDB_HEADROOM": "0",
        "COSTART_LMDB_MAP_SIZE": str(64 << 20),
        "COSTART_SNAPSHOT_EVERY": "0",
    }
    controller = Controller(env=env, clock=time.monotonic_ns)
    opened = time.monotonic()
    index = 0
    while time.monotonic() - opened < seconds:
        controller.submit(a_group(f"g-{index}").with_member("a").build())
        print(f"ACK g-{index}", flush=True)
        index += 1
    print("done", flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
