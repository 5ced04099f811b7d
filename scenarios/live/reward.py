"""A reward model: scores samples over HTTP until it is stopped."""

from __future__ import annotations

import zlib

import live_task


def main() -> None:
    me = live_task.identity()
    live_task.record_start(me)

    def answer(path: str) -> dict[str, object]:
        # A deterministic score in [0, 1) for whatever the trainer sends.
        return {"scorer": me.name, "score": (zlib.crc32(path.encode()) % 1000) / 1000}

    live_task.serve_forever(me, answer)


if __name__ == "__main__":
    main()
