"""`costart demo --live`: serve, one agent per node and a group of real programs on this
machine (ADR 0044)."""

from costart.cli.live.command import run_live
from costart.cli.live.processes import MARKER, marked_pids

__all__ = ["MARKER", "marked_pids", "run_live"]
