"""Paths under the agent's work root, opened so that nothing a task plants can send
the agent elsewhere (docs/design.md §11, ADR 0066).

The spec already refuses absolute paths and ``..`` parts (`costart.domain.run_table`).
On the node a task may still have replaced a directory on the way with a symlink (or a
hard link to a file it cannot write) between two attempts. So every path is walked one
part at a time from an open descriptor of the work root, each part opened with
``O_NOFOLLOW`` (what ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` does, which
Python does not expose): a symlink anywhere is refused, never followed, and a file with
another link or another owner is refused rather than appended to.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import Final

DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
LOG_FLAGS: Final = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
DIR_MODE: Final = 0o755
LOG_MODE: Final = 0o640


class Escape(Exception):
    """A path would leave the work root or pass through a link (the message says where)."""


class Missing(Escape):
    """A directory (or the file) on the path does not exist (yet)."""


def parts(relative: str) -> list[str]:
    """The parts of a relative path; `Escape` for an absolute one or a ``..`` part."""
    if relative.startswith("/"):
        raise Escape(f"{relative!r} is absolute")
    found = [p for p in relative.split("/") if p not in ("", ".")]
    if ".." in found:
        raise Escape(f"{relative!r} has a '..' part")
    return found


def open_dir(root: Path, relative: str, *, create: bool = False) -> int:
    """A descriptor of ``root/relative`` (the caller closes it). With ``create``,
    missing directories are made (``0755``, owned by the agent)."""
    fd = os.open(root, DIR_FLAGS)
    walked = root
    try:
        for part in parts(relative):
            walked = walked / part
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise Missing(f"{walked}: no such directory") from None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, DIR_MODE, dir_fd=fd)
                child = _open_part(part, fd, walked)
            except OSError as error:
                raise _refusal(walked, error) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_part(part: str, parent: int, walked: Path) -> int:
    try:
        return os.open(part, DIR_FLAGS, dir_fd=parent)
    except OSError as error:
        raise _refusal(walked, error) from None


def _refusal(walked: Path, error: OSError) -> Escape:
    if isinstance(error, NotADirectoryError) or error.errno == errno.ELOOP:  # a symlink
        return Escape(f"{walked} is a symlink or not a directory: not followed")
    return Escape(f"{walked}: {error.strerror or error}")


def open_log(root: Path, relative: str, uid: int, gid: int) -> int:
    """An append-only descriptor of the log file ``root/relative`` for a task running as
    ``uid``/``gid``: its directories made by the agent, the file created ``0640`` and
    given to the task's account (so its owner can read its output). An existing file
    must be a plain file with one link, owned by that account or the agent."""
    *directories, name = parts(relative)
    parent = open_dir(root, "/".join(directories), create=True)
    where = root / relative
    try:
        try:
            fd = os.open(name, LOG_FLAGS, LOG_MODE, dir_fd=parent)
        except OSError as error:
            raise _refusal(where, error) from None
    finally:
        os.close(parent)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise Escape(f"{where}: not a plain file with one link: not written to")
        if info.st_uid not in (uid, os.geteuid()):
            raise Escape(f"{where}: owned by uid {info.st_uid}, not the task's: not written to")
        if os.geteuid() == 0 and (info.st_uid, info.st_gid) != (uid, gid):
            os.fchown(fd, uid, gid)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(root: Path, relative: str, limit: int) -> bytes:
    """The bytes of the plain file ``root/relative`` (at most ``limit``; `Escape` when
    it is a link, not a plain file, or larger)."""
    *directories, name = parts(relative)
    parent = open_dir(root, "/".join(directories))
    where = root / relative
    try:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        except FileNotFoundError:
            raise Escape(f"{where}: no such file") from None
        except OSError as error:
            raise _refusal(where, error) from None
    finally:
        os.close(parent)
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise Escape(f"{where}: not a plain file")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise Escape(f"{where}: larger than {limit} bytes")
    return data


def open_log_to_read(root: Path, relative: str, uid: int) -> int:
    """A read-only descriptor of the task's log ``root/relative`` (the caller closes
    it), for relaying its output (ADR 0084). The task may have replaced the file or a
    directory on its way since it started: nothing is followed (`open_dir`,
    ``O_NOFOLLOW``), and the file must be a plain file with one link owned by the
    task's account ``uid`` or the agent, else `Escape`; a FIFO is never waited on
    (``O_NONBLOCK``). `Missing` when there is no such file."""
    *directories, name = parts(relative)
    try:
        parent = open_dir(root, "/".join(directories))
    except Missing:
        raise Missing(f"{relative}: no such file") from None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        try:
            fd = os.open(name, flags, dir_fd=parent)
        except FileNotFoundError:
            raise Missing(f"{relative}: no such file") from None
        except OSError as error:
            raise _refusal(Path(relative), error) from None
    finally:
        os.close(parent)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise Escape(f"{relative}: not a plain file with one link: not read")
        if info.st_uid not in (uid, os.geteuid()):
            raise Escape(f"{relative}: owned by uid {info.st_uid}, not the task's: not read")
    except BaseException:
        os.close(fd)
        raise
    return fd
