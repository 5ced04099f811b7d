"""Whether the live process a ledger record names is still that task's run, before a
restarted agent kills it (docs/design.md §11, issue 29).

A pid alone names whatever process has it now; a record may also be stale or forged.
So a process is the record's task only if it started when the record says (proc(5)
``starttime``), runs as the recorded account (real uid, when one is recorded), and
carries the run's identity in its environment (`costart.agent.processes.IDENTITY`,
set by `costart.agent.taskenv`; ``/proc/PID/environ`` is what the process started
with, so a process the agent did not start does not carry it). Anything else kills
nothing.
"""

from __future__ import annotations

from costart.agent import proctable
from costart.agent.ledger import LaunchRecord
from costart.agent.processes import IDENTITY


def identity(record: LaunchRecord) -> dict[str, str]:
    """The ``NAME=value`` marks the record's run carries in its environment."""
    values = (record.group_id, record.member, str(record.index), str(record.attempt))
    return dict(zip(IDENTITY, values, strict=True))


def mismatch(record: LaunchRecord) -> str | None:
    """Why the process at ``record.pid`` is not the run the record names; None when it
    is (then, and only then, may it be killed as a leftover)."""
    if record.pid is None:
        return "no pid recorded"
    proc = proctable.read_proc(record.pid)
    if proc is None:
        return f"no process has pid {record.pid}"
    if proc.start_ticks != record.start_ticks:
        return (
            f"pid {record.pid} started at tick {proc.start_ticks}, "
            f"not at the recorded {record.start_ticks}"
        )
    if record.uid is not None:
        uid = real_uid(record.pid)
        if uid != record.uid:
            return f"pid {record.pid} runs as uid {uid}, not the recorded {record.uid}"
    try:
        environ = (proctable.PROC / str(record.pid) / "environ").read_bytes()
    except OSError as error:
        return f"the environment of pid {record.pid} cannot be read ({error.strerror})"
    entries = set(environ.split(b"\0"))
    missing = [
        name
        for name, value in identity(record).items()
        if f"{name}={value}".encode() not in entries
    ]
    if missing:
        return f"pid {record.pid} does not carry the run's {', '.join(missing)}"
    return None


def real_uid(pid: int) -> int | None:
    """The real uid of ``pid`` (``Uid:`` of ``/proc/PID/status``); None if unknown."""
    try:
        status = (proctable.PROC / str(pid) / "status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    return None
