"""What makes a file or directory unfit to hold the agent's secrets or state: anything
another account could read, write or replace."""

from __future__ import annotations

import os
import stat


def owner_only_problem(info: os.stat_result, *, directory: bool) -> str | None:
    """Why ``info`` (an ``lstat`` or ``fstat``) is not a plain file (or, with
    ``directory``, a real directory) of the agent's own account that no one else may
    open; None when it is."""
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link"
    if directory and not stat.S_ISDIR(info.st_mode):
        return "not a directory"
    if not directory and not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_uid != os.geteuid():
        return "owned by another account"
    if info.st_mode & 0o077:
        return "open to others than its owner"
    return None
