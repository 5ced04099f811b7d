"""`replay export --format jsonl`: one JSON object per event, with position and type."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import msgspec

from costart.replay.source import ReplaySource

_JSON = msgspec.json.Encoder(order="deterministic")


def export_lines(source: ReplaySource, after: int = 0, until: int | None = None) -> Iterator[bytes]:
    for position, event in source.read_events(after, until):
        body = msgspec.to_builtins(event)
        yield _JSON.encode({"position": position, "event": body}) + b"\n"


def export_jsonl(
    source: ReplaySource, out: IO[bytes], after: int = 0, until: int | None = None
) -> int:
    """Write the events as JSON lines; returns how many were written."""
    count = 0
    for line in export_lines(source, after, until):
        out.write(line)
        count += 1
    return count
