"""Child processes that die with the test process: a test run that is killed (a CI time
limit, a hung test's SIGKILL) must not leave servers or writers behind."""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
from typing import Any

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
# Resolved now, in the parent: the child, between fork and exec, only makes the call.
_prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform == "linux" else None


def _die_with_parent() -> None:
    if _prctl is not None and _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[Any]:
    """`subprocess.Popen` whose child the kernel kills (SIGKILL) when the thread that
    started it exits, however it exits (Linux; elsewhere a plain Popen)."""
    # preexec_fn is unsafe only for code that takes locks between fork and exec; this one
    # is a single already-resolved system call.
    return subprocess.Popen(*args, preexec_fn=_die_with_parent, **kwargs)  # noqa: PLW1509
