"""A fake model-weights download: after ``--seconds`` it writes ``--out`` atomically
(a file probe must never see half a file), then exits 0.

It is not a member of the group: it makes the resource that the members' ``weights``
claim probes for, so the barrier waits for it. ``costart demo --live`` starts it beside
the group.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    print(f"downloading weights to {args.out} ({args.seconds:g}s)", flush=True)
    time.sleep(args.seconds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".part")
    blob = hashlib.sha256(b"policy weights").digest() * 1024
    partial.write_bytes(blob)
    os.replace(partial, args.out)
    print(f"weights ready: {args.out} ({len(blob)} bytes)", flush=True)


if __name__ == "__main__":
    main()
