"""Answers to `serve`'s log reads: a task's output, read safely on its node (ADR 0084).

The task is untrusted and owns its log's directory: between two reads it may replace
the file, or a directory on its way, with a link to something only the agent may read.
So the file is opened by `costart.agent.confine.open_log_to_read` (nothing followed,
a plain file with one link, owned by the task's account or the agent) and read through
that descriptor only; whatever it refuses is answered as ``refused``, never read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from costart.agent import confine
from costart.agent.model import Refused
from costart.rest.log_wire import LOG_PIECE_BYTES, LogPiece, LogRead, base64_text


def answer(
    work_dir: Path,
    read: LogRead,
    uid_of: Callable[[str], int],
    running: bool,
) -> LogPiece:
    """What ``read`` asks of the file, from ``offset`` or its last ``tail`` lines.
    ``running``: whether the attempt's process runs on this node now (read before the
    file, so a process that ended leaves a file that is whole)."""

    def piece(offset: int = 0, data: bytes = b"", size: int = 0, **why: str) -> LogPiece:
        return LogPiece(
            id=read.id,
            offset=offset,
            size=size,
            running=running,
            data=base64_text(data),
            **why,
        )

    try:
        uid = uid_of(read.owner)
        fd = confine.open_log_to_read(work_dir, read.path, uid)
    except confine.Missing as missing:
        return piece(missing=str(missing)[:500])
    except (confine.Escape, Refused) as refusal:
        return piece(refused=str(refusal)[:500])
    try:
        size = os.fstat(fd).st_size
        if read.offset is None:
            start = max(0, size - LOG_PIECE_BYTES)
            window = os.pread(fd, size - start, start)
            offset = start + tail_start(window, read.tail or 0, whole=start == 0)
            data = window[offset - start :]
        else:
            offset = read.offset
            data = os.pread(fd, LOG_PIECE_BYTES, offset) if offset < size else b""
    finally:
        os.close(fd)
    return piece(offset, data, max(size, offset + len(data)))


def tail_start(window: bytes, lines: int, *, whole: bool) -> int:
    """Where the last ``lines`` lines of ``window`` start (a last line without its
    newline counts). When the window is not the whole file its first line may be cut:
    the tail never starts before the window's first whole line unless ``whole``."""
    if lines == 0:
        return len(window)
    end = len(window) - 1 if window.endswith(b"\n") else len(window)
    for _ in range(lines):
        end = window.rfind(b"\n", 0, end)
        if end < 0:
            if whole:
                return 0
            first = window.find(b"\n")
            return len(window) if first < 0 else first + 1
    return end + 1
