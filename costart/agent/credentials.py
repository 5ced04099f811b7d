"""How the agent's token reaches it, and how it is kept from the processes around it
(docs/design.md §11, issue 29).

A token on the command line is readable by every process on the node
(``/proc/PID/cmdline``), and one in the environment by every process of the agent's
account (``/proc/PID/environ``), the tasks it runs as that account among them. So the
agent reads its token from ``--token-file PATH`` (a regular file only its account may
read) or from ``COSTART_AGENT_TOKEN``, which it scrubs at start: the variable leaves
`os.environ`, its value is overwritten in the environment block the kernel shows as
``/proc/self/environ``, and the process is made non-dumpable (its ``environ`` and
``mem`` are then root's alone to read).
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Final

import structlog

from costart.agent.owner_only import owner_only_problem
from costart.agent.taskenv import CREDENTIALS

log = structlog.get_logger("costart.agent")
TOKEN_ENV: Final = "COSTART_AGENT_TOKEN"
MAX_TOKEN_FILE_BYTES: Final = 4096  # a bearer token, not a document
SAFE_WAYS: Final = (
    f"give the agent its token in a file only its account can read (--token-file PATH, "
    f"mode 0600) or in the environment variable {TOKEN_ENV}, which it scrubs at start"
)
_PR_SET_DUMPABLE: Final = 4  # linux/prctl.h
_PROC_SELF: Final = Path("/proc/self")
# proc(5): fields 50 and 51 of /proc/PID/stat, counted from 1; the split below starts
# at field 3 (after the parenthesised command name, which may hold spaces).
_ENV_START_FIELD: Final = 50 - 3
_ENV_END_FIELD: Final = 51 - 3


class TokenRefused(Exception):
    """The agent will not take its token this way (the message says why)."""


def agent_token(token_file: Path | None, on_command_line: bool = False) -> str:
    """The agent's token: from ``token_file``, else from ``COSTART_AGENT_TOKEN``. The
    environment is scrubbed either way (`take_environment_token`); both at once is
    refused, as is neither, and so is a token given ``on_command_line`` (``--token``,
    or the global ``--token``/``COSTART_TOKEN``): argv is anyone's to read."""
    if on_command_line:
        raise TokenRefused(f"costart agent does not take --token or COSTART_TOKEN: {SAFE_WAYS}")
    from_env = take_environment_token()
    if token_file is not None and from_env is not None:
        raise TokenRefused(f"both --token-file and {TOKEN_ENV} are given: give one")
    if token_file is not None:
        return read_token_file(token_file)
    if from_env is None:
        raise TokenRefused(f"costart agent needs a token: {SAFE_WAYS}")
    return from_env


def read_token_file(path: Path) -> str:
    """The token in ``path``: a regular file owned by this process's effective uid
    with no group or other permission bits, holding one token (surrounding
    whitespace ignored)."""
    try:
        # O_NONBLOCK: opening a FIFO someone left here must not hang the agent.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise TokenRefused(f"--token-file {path}: cannot open it ({error.strerror})") from None
    try:
        info = os.fstat(fd)  # the file opened, not whatever the path names a moment later
        problem = owner_only_problem(info, directory=False)
        if problem:
            raise TokenRefused(
                f"--token-file {path}: {problem} (mode {info.st_mode & 0o7777:04o}, owner uid "
                f"{info.st_uid}); it must be a regular file owned by uid {os.geteuid()} that "
                "no one else may read (chmod 600)"
            )
        data = os.read(fd, MAX_TOKEN_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_TOKEN_FILE_BYTES:
        raise TokenRefused(f"--token-file {path}: longer than {MAX_TOKEN_FILE_BYTES} bytes")
    token = data.decode("utf-8", errors="replace").strip()
    if not token or any(c.isspace() for c in token):
        raise TokenRefused(f"--token-file {path}: expected one token, found {len(data)} bytes")
    return token


def take_environment_token() -> str | None:
    """``COSTART_AGENT_TOKEN``'s value (None if unset), after scrubbing every credential
    variable (`CREDENTIALS`) from this process: out of `os.environ`, and overwritten in
    the original environment block. Then the process is made non-dumpable (after the
    overwrite: a non-dumpable process that is not root may not write its own
    ``/proc/self/mem``). What cannot be done is logged as a warning; the agent runs on."""
    token = os.environ.get(TOKEN_ENV) or None
    for name in CREDENTIALS:
        os.environ.pop(name, None)  # on POSIX also posix.environ: the two share one dict
    why = overwrite_in_environment_block(CREDENTIALS)
    if why is not None:
        log.warning(
            "the agent's token may still be readable in /proc/PID/environ of the agent",
            why=why,
        )
    why = make_undumpable()
    if why is not None:
        log.warning("the agent could not make itself non-dumpable", why=why)
    return token


def overwrite_in_environment_block(names: tuple[str, ...]) -> str | None:
    """Zero the values of ``names`` in this process's original environment block (what
    ``/proc/self/environ`` shows; removing a variable from `os.environ` leaves it
    there). None when done (or nothing to do); else why it could not be done."""
    try:
        fields = (_PROC_SELF / "stat").read_text()
        after_name = fields[fields.rindex(")") + 2 :].split()
        start, end = int(after_name[_ENV_START_FIELD]), int(after_name[_ENV_END_FIELD])
    except (OSError, ValueError, IndexError) as error:
        return f"cannot read where the environment block is ({error})"
    if not 0 < start < end:
        return "the kernel does not say where the environment block is"
    prefixes = [os.fsencode(name) + b"=" for name in names]
    try:
        fd = os.open(_PROC_SELF / "mem", os.O_RDWR | os.O_CLOEXEC)
    except OSError as error:
        return f"cannot open /proc/self/mem ({error.strerror})"
    try:
        block = os.pread(fd, end - start, start)
        offset = 0
        for entry in block.split(b"\0"):
            prefix = next((p for p in prefixes if entry.startswith(p)), None)
            if prefix is not None and len(entry) > len(prefix):
                at = start + offset + len(prefix)
                os.pwrite(fd, b"\0" * (len(entry) - len(prefix)), at)
            offset += len(entry) + 1
        left = os.pread(fd, end - start, start)
    except OSError as error:
        return f"cannot write /proc/self/mem ({error.strerror})"
    finally:
        os.close(fd)
    if any(e.startswith(p) and len(e) > len(p) for e in left.split(b"\0") for p in prefixes):
        return "the value is still there after the overwrite"
    return None


def make_undumpable() -> str | None:
    """``prctl(PR_SET_DUMPABLE, 0)``: other processes of the agent's account may no
    longer read its ``/proc/PID/environ`` or ``mem`` (root still may), and it leaves no
    core dump. Reset by ``execve``, so the tasks it starts are not affected. None when
    done; else why not."""
    if sys.platform != "linux":
        return f"not Linux ({sys.platform})"
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    if prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        return f"prctl(PR_SET_DUMPABLE) failed: {os.strerror(ctypes.get_errno())}"
    return None
