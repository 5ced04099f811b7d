"""A throwaway PostgreSQL server on 127.0.0.1, for tests and benchmarks.

Uses the distribution's binaries (``initdb``/``pg_ctl`` on the ``PATH``, else the newest
``/usr/lib/postgresql/*/bin``). The data directory is a fresh temporary one, deleted on
stop. PostgreSQL refuses to run as root, so under root the server runs as the
``postgres`` user the distribution's package creates. Real durability (``fsync`` on):
the benchmarks measure it.

``pg_ctl`` detaches the server, so a process killed before `stop` would leave it running;
a watchdog process (its own session, so a signal to our group spares it) waits for the
end of a pipe only we hold, and stops the server and deletes its directory when we are
gone, however we went.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Final

import psycopg
from psycopg import sql

SERVER_USER: Final = "postgres"  # who runs the server when we are root
SUPERUSER: Final = "costart"
DATABASE: Final = "costart"
START_TIMEOUT_S: Final = 60
WATCHDOG_EXIT_TIMEOUT_S: Final = 60
# argv: the data root, then the stop command. Reading stdin returns at EOF: the pipe's
# only writer (the process that started the server) closed it or is gone.
_WATCHDOG: Final = (
    "import shutil, subprocess, sys\n"
    "sys.stdin.buffer.read()\n"
    "subprocess.run(sys.argv[2:], capture_output=True, check=False)\n"
    "shutil.rmtree(sys.argv[1], ignore_errors=True)\n"
)


class ServerUnavailable(RuntimeError):
    """No PostgreSQL binaries here (install the distribution's ``postgresql`` package)."""


def find_bin_dir() -> Path:
    initdb = shutil.which("initdb")
    if initdb is not None:
        return Path(initdb).resolve().parent
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if not found:
        raise ServerUnavailable(
            "no initdb found on PATH or in /usr/lib/postgresql/*/bin: "
            "install PostgreSQL (e.g. `apt-get install postgresql`)"
        )
    return found[-1].parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """``with LocalServer() as server: server.url`` -- started on enter, gone on exit."""

    def __init__(self) -> None:
        self.bin_dir = find_bin_dir()
        self.password = secrets.token_hex(12)
        self.port = 0
        self.root: Path | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def data_dir(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    def _command(self, *args: str) -> list[str]:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", SERVER_USER, "--", *command]
        return command

    def _run(self, *args: str) -> None:
        result = subprocess.run(self._command(*args), capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {result.stdout}{result.stderr}")

    def start(self) -> LocalServer:
        self.root = Path(tempfile.mkdtemp(prefix="costart-pg-"))
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        if os.geteuid() == 0:
            owner = pwd.getpwnam(SERVER_USER)
            for path in (self.root, pwfile):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        self._run(
            "initdb", "-D", str(self.data_dir), "-U", SUPERUSER, f"--pwfile={pwfile}",
            "--auth=scram-sha-256", "--encoding=UTF8", "--no-instructions",
        )  # fmt: skip
        pwfile.unlink()
        self.port = free_port()
        options = f"-h 127.0.0.1 -p {self.port} -k {self.root} -c max_connections=200"
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(self.root), *self._command(*self._stop_args())],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._run(
            "pg_ctl", "-D", str(self.data_dir), "-o", options,
            "-l", str(self.root / "server.log"), "-w", "-t", str(START_TIMEOUT_S), "start",
        )  # fmt: skip
        admin = self.url.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        return self

    def _stop_args(self) -> tuple[str, ...]:
        return ("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        if self.root is None:
            return
        with contextlib.suppress(RuntimeError):
            self._run(*self._stop_args())
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None and watchdog.stdin is not None:
            watchdog.stdin.close()  # its stop finds nothing to stop
            watchdog.wait(WATCHDOG_EXIT_TIMEOUT_S)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
