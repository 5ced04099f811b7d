"""What a what-if is asked, before anything heavy is loaded: its error, the recorded
policy's name and the default tail (the command line imports these at start-up)."""

from __future__ import annotations

DEFAULT_TAIL = "24h"
RECORDED_POLICY = "as-specified"  # each group in the mode it was submitted in


class WhatIfError(ValueError):
    """A log or a change the what-if cannot run: the message says what and where."""
