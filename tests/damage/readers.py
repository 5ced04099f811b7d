"""Every reader of a store, run on one (possibly damaged) store directory.

``python -m tests.damage.readers GROUP LAST_KNOWN STORE...`` runs, for each store in this
one process and in this order, ``costart replay verify``, ``costart get groups -o json``,
``costart describe group GROUP -o json`` (through the CLI's own entry point), a
`Controller`, a warm `Standby`, and the Controller a host builds giving back what it last
saw of the intact store (``LAST_KNOWN``, a JSON `LastKnown`),
and prints one JSON object: store -> reader -> ``{"code", "out", "err"}``. The CLI readers give
their exit code; the Python readers give 0 and a digest of the state they restored, or
the exit code the CLI maps their error to and the error's message. Run as a child
process: a reader that dies of a signal (SIGBUS on a cut-short file) fails the test that
ran it instead of the test run. Every store is its own directory, so its own LMDB
environment: one reader's open store never serves another store's reader.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import traceback
from pathlib import Path

import msgspec
import structlog
from typer.testing import CliRunner

from costart.bootstrap import Settings, bootstrap, build_standby
from costart.cli.exits import exit_code
from costart.cli.main import app
from costart.logging_setup import configure_logging
from costart.store.lease import Lease
from costart.store.rollback import LastKnown
from costart.store.snapshots import encode_world
from costart.store.standby import open_factory


def digest(state: bytes) -> str:
    return hashlib.blake2b(state, digest_size=16).hexdigest()


def run_cli(args: list[str]) -> dict[str, object]:
    result = CliRunner().invoke(app, args, catch_exceptions=True)
    err = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        err += "".join(traceback.format_exception(result.exception))
    return {"code": result.exit_code, "out": result.stdout, "err": err}


def run_python(make_state: object) -> dict[str, object]:
    """A Python reader: its state's digest, and its warnings (the loud part of a
    fallback) as ``err``; or the exit code the CLI gives its error, and the message."""
    with structlog.testing.capture_logs() as logs:
        try:
            state = make_state()  # type: ignore[operator]
        except Exception as error:  # what the caller would see: its type and message
            message = f"error: {type(error).__name__}: {error}"
            return {"code": exit_code(error), "out": "", "err": message}
    warnings = [f"{e['event']}: {e}" for e in logs if e["log_level"] in ("warning", "error")]
    return {"code": 0, "out": digest(state), "err": "\n".join(warnings)}


def controller_state(store: Path) -> bytes:
    controller = bootstrap(Settings(store=str(store), cluster=None))
    try:
        return encode_world(controller.world)
    finally:
        controller.close()


def host_state(store: Path, last_known: LastKnown) -> bytes:
    """The Controller an embedding host builds, giving back what it last saw (ADR 0048)."""
    controller = bootstrap(Settings(store=str(store), cluster=None), last_known=last_known)
    try:
        return encode_world(controller.world)
    finally:
        controller.close()


def standby_state(store: Path) -> bytes:
    factory = open_factory(Settings(store=str(store)).controller_env())
    try:
        standby = build_standby(Settings(store=str(store)), factory, Lease(factory.store))
        return encode_world(standby.world)
    finally:
        factory.close()


def main(store: Path, group: str, last_known: LastKnown) -> dict[str, dict[str, object]]:
    at = ["--store", str(store)]
    return {
        "verify": run_cli([*at, "replay", "verify"]),
        "get": run_cli([*at, "get", "groups", "-o", "json"]),
        "describe": run_cli([*at, "describe", "group", group, "-o", "json"]),
        "controller": run_python(lambda: controller_state(store)),
        "standby": run_python(lambda: standby_state(store)),
        "host": run_python(lambda: host_state(store, last_known)),
    }


if __name__ == "__main__":
    # Once, to the real stderr: the CLI would configure it to a runner's captured stream.
    configure_logging(level=logging.WARNING)
    group_name, known_file, *stores = sys.argv[1:]
    known = msgspec.json.decode(Path(known_file).read_bytes(), type=LastKnown)
    print(json.dumps({store: main(Path(store), group_name, known) for store in stores}))
