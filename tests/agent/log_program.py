"""A task for the log relay's end-to-end tests (`test_logs_e2e`): a real process whose
output is its log file (the agent made its stdout that file).

``log_program.py CONTROL LINES [--bytes N] [--swap link|hardlink VICTIM]``: writes its
pid to ``CONTROL/pid-MEMBER-TASK-ATTEMPT``, prints ``attempt A line I`` for I in
1..LINES (and N bytes of filler lines with ``--bytes``), then, with ``--swap``, replaces
its own log file with a symlink (or a hard link) to VICTIM, a file the relay must never
hand out; then prints ``attempt A more K`` each time ``CONTROL/more-A-K`` appears, and
runs until it is signalled.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("control", type=Path)
    parser.add_argument("lines", type=int)
    parser.add_argument("--bytes", type=int, default=0)
    parser.add_argument("--swap", nargs=2, metavar=("KIND", "VICTIM"))
    args = parser.parse_args()
    env = os.environ
    attempt = env["COSTART_ATTEMPT"]
    me = f"{env['COSTART_MEMBER']}-{env['COSTART_TASK']}-{attempt}"
    (args.control / f"pid-{me}").write_text(str(os.getpid()))
    for line in range(1, args.lines + 1):
        print(f"attempt {attempt} line {line}")
    written = 0
    while written < args.bytes:
        filler = f"filler {written:09d} " + "x" * 80 + "\n"
        sys.stdout.write(filler)
        written += len(filler)
    sys.stdout.flush()
    if args.swap:
        kind, victim = args.swap
        log = os.readlink("/proc/self/fd/1")  # the agent made our stdout the log file
        os.unlink(log)
        if kind == "link":
            os.symlink(victim, log)
        else:
            os.link(victim, log)
        (args.control / f"swapped-{me}").write_text(log)
    more = 1
    while True:
        if (args.control / f"more-{attempt}-{more}").exists():
            print(f"attempt {attempt} more {more}", flush=True)
            more += 1
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
