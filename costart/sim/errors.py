"""The simulator's own error."""

from __future__ import annotations


class SimError(RuntimeError):
    """The simulator found itself inconsistent (a bug in it, not a finding)."""
