"""A rollout replica: serves generated samples over HTTP until it is stopped.

Stands in for a vLLM server: ``GET /generate?step=N`` answers a batch of fake samples
from the policy weights it loaded (the ``weights`` claim made sure they were there).
"""

from __future__ import annotations

import hashlib
import os

import live_task


def main() -> None:
    me = live_task.identity()
    live_task.record_start(me)
    weights = os.environ.get("LIVE_WEIGHTS", "")
    live_task.say(me, f"loaded weights {weights or '(none named)'}")

    def answer(path: str) -> dict[str, object]:
        digest = hashlib.sha256(f"{me.name}:{path}".encode()).hexdigest()
        return {"replica": me.name, "attempt": me.attempt, "samples": [digest[:16], digest[16:32]]}

    live_task.serve_forever(me, answer)


if __name__ == "__main__":
    main()
