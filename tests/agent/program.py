"""A member program for the agent's end-to-end tests (a real process the agent runs).

It appends one JSON line to the starts file (its identity, pid, wall-clock start and
peers) before anything else, prints a first line to its log, then:

- ``--fail MEMBER:TASK:ATTEMPT``: exits 3 if it is that task's run (repeatable);
- ``--until PATH``: exits 0 once PATH exists (a job that finishes on cue);
- ``--child``: starts a grandchild in a session of its own (teardown must reach it);
- ``--outlive-agent``: clears the agent's ``PR_SET_PDEATHSIG``, so it survives a killed
  agent (a leftover the restarted agent must find and kill);
- otherwise it serves (sleeps) until it is signalled.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path

IDENTITY = ("COSTART_GROUP_ID", "COSTART_MEMBER", "COSTART_TASK", "COSTART_ATTEMPT", "COSTART_NODE")


def main() -> int:
    start_ns = time.time_ns()
    parser = argparse.ArgumentParser()
    parser.add_argument("starts")
    parser.add_argument("--fail", action="append", default=[])
    parser.add_argument("--until")
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--outlive-agent", action="store_true")
    args = parser.parse_args()
    if args.outlive_agent:
        ctypes.CDLL(None).prctl(1, 0)  # PR_SET_PDEATHSIG, none: like a setuid exec does
    me = {key: os.environ[key] for key in IDENTITY}
    record = {**me, "pid": os.getpid(), "start_ns": start_ns, "peers": os.environ["COSTART_PEERS"]}
    line = (json.dumps(record) + "\n").encode()
    fd = os.open(args.starts, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, line)  # one write on O_APPEND: lines of concurrent programs never mix
    os.close(fd)
    print(f"started {me['COSTART_MEMBER']}/{me['COSTART_TASK']}", flush=True)
    this = f"{me['COSTART_MEMBER']}:{me['COSTART_TASK']}:{me['COSTART_ATTEMPT']}"
    if this in args.fail:
        print("failing on purpose", flush=True)
        return 3
    if args.child:
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True
        )
    while True:
        if args.until and Path(args.until).exists():
            return 0
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
