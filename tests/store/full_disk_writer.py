"""A controller that submits groups until its store's filesystem is full.

``python -m tests.store.full_disk_writer STORE FIRST LAST [FILE_SIZE_LIMIT]`` submits
groups ``g-FIRST`` .. ``g-LAST`` one by one and prints JSON: the names acknowledged, and
the error that stopped it (its message and the CLI's exit code for it). With a file size
limit the process runs under ``RLIMIT_FSIZE`` (the kernel refuses writes past it, as a
full disk refuses them) -- the mechanism used where no small filesystem can be mounted.
"""

from __future__ import annotations

import json
import logging
import resource
import signal
import sys

from costart.cli.exits import exit_code
from costart.controller import Controller
from costart.domain.spec import parse_spec
from costart.logging_setup import configure_logging

SPEC = """
name = "{name}"
owner = "alice"
[[members]]
name = "trainer"
kind = "job"
tasks = 4
shape = {{ gpu = 8, cpu = 96, mem_gb = 1024 }}
claims = ["gpus", "dataset", "weights"]
[[members]]
name = "rollout"
kind = "replica-set"
replicas = 8
shape = {{ gpu = 1, cpu = 8, mem_gb = 64 }}
claims = ["gpus"]
"""


def _error(failure: Exception) -> dict[str, object]:
    cause = failure.__cause__ or failure
    return {"message": str(cause), "exit_code": exit_code(failure)}


def main(store: str, first: int, last: int) -> dict[str, object]:
    env = {
        "PERSISTENCE_MODULE": "costart.store",
        "COSTART_LMDB_PATH": store,
        "COSTART_SNAPSHOT_EVERY": "0",
    }
    acknowledged: list[str] = []
    try:
        controller = Controller(env=env, clock=lambda: 10**18)
    except Exception as failure:  # a store that cannot even be opened: said so
        return {"acknowledged": acknowledged, "error": _error(failure)}
    error: dict[str, object] | None = None
    for i in range(first, last + 1):
        name = f"g-{i:05d}"
        try:
            controller.submit(parse_spec(SPEC.format(name=name), "toml"))
        except Exception as failure:  # what stops a controller: reported, not raised
            error = _error(failure)
            break
        acknowledged.append(name)
    return {"acknowledged": acknowledged, "error": error}


if __name__ == "__main__":
    configure_logging(level=logging.WARNING)  # to stderr: stdout is the JSON answer
    if len(sys.argv) > 4:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a refused write, not a dead process
        limit = int(sys.argv[4])
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
