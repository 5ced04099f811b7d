"""Tests that need root (switching accounts, useradd) skip when not root, except where
``COSTART_REQUIRE_ROOT=1`` is set (CI runs as root and sets it): there a skip would
hide a check that never ran, so it fails instead."""

from __future__ import annotations

import os

import pytest

# Unused numeric ids: no passwd entry is needed to run a process as them.
ALICE_UID = 61234
BOB_UID = 61235
SHARED_GID = 61240


def require_root() -> None:
    """Skip (or fail under ``COSTART_REQUIRE_ROOT=1``) unless running as root."""
    if os.geteuid() == 0:
        return
    if os.environ.get("COSTART_REQUIRE_ROOT") == "1":
        pytest.fail("COSTART_REQUIRE_ROOT=1 but the tests do not run as root")
    pytest.skip("needs root to switch accounts")
