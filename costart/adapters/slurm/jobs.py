"""Slurm's jobs (``scontrol show job -o``) and what each means for its costart task.

State and exit mapping (the report a node agent would send):

================  ==================================================================
Slurm state       task report
================  ==================================================================
PENDING etc.      none yet (held or waiting: the task is still placed)
RUNNING           started
COMPLETED         succeeded
FAILED            exited, reason ``error``, the exit code (minus the signal if killed)
OUT_OF_MEMORY     exited, reason ``oom``
NODE_FAIL         exited, reason ``node-lost``
BOOT_FAIL         exited, reason ``node-lost``
PREEMPTED         exited, reason ``preempted``
CANCELLED         exited, reason ``preempted`` (cancelled by someone other than costart)
TIMEOUT           exited, reason ``error``, noted as Slurm's time limit
DEADLINE          exited, reason ``error``, noted as Slurm's deadline
================  ==================================================================

A state this adapter does not know fails loudly (a silent wrong mapping is worse).
"""

from __future__ import annotations

import re
from typing import Final, Literal

import msgspec

from costart.adapters.slurm.identity import JobIdentity, parse_job_name
from costart.adapters.slurm.records import SlurmOutputError, need, parse_records, parse_tres
from costart.domain.capacity import Capacity

Phase = Literal["waiting", "running", "ended"]
_WAITING: Final = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING"}
_RUNNING: Final = {"RUNNING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "COMPLETING"}
# Ended: (reason the task reports or None for success, a note when the reason is not all)
_ENDED: Final[dict[str, tuple[str | None, str | None]]] = {
    "COMPLETED": (None, None),
    "FAILED": ("error", None),
    "OUT_OF_MEMORY": ("oom", "Slurm: out of memory"),
    "NODE_FAIL": ("node-lost", "Slurm: its node failed"),
    "BOOT_FAIL": ("node-lost", "Slurm: its node failed to boot"),
    "PREEMPTED": ("preempted", "Slurm: preempted"),
    "CANCELLED": ("preempted", "Slurm: cancelled outside costart"),
    "TIMEOUT": ("error", "Slurm: time limit reached"),
    "DEADLINE": ("error", "Slurm: deadline reached"),
    "REVOKED": ("preempted", "Slurm: revoked (federation)"),
    "SPECIAL_EXIT": ("error", "Slurm: special exit"),
}
_EXIT: Final = re.compile(r"(\d{1,3}):(\d{1,3})")
_ID: Final = re.compile(r"\d{1,12}")
_GPUS_PER_NODE: Final = re.compile(r"gres[:/]gpu(?::[A-Za-z0-9_.-]+)?:(\d{1,6})(?:,|$)")


class Outcome(msgspec.Struct, frozen=True):
    """How an ended job ended, as a task report says it (``event``: succeeded or
    exited)."""

    event: Literal["succeeded", "exited"]
    exit_code: int | None = None
    reason: str | None = None
    note: str | None = None


class SlurmJob(msgspec.Struct, frozen=True):
    """One job as Slurm reports it. ``identity``: the costart task it runs (None: a job
    costart did not submit); ``nodes``: Slurm's node list (empty before it starts);
    ``requested``: the nodes it was pinned to (``--nodelist``)."""

    job_id: int
    name: str
    state: str
    reason: str
    exit_code: int
    signal: int
    nodes: str
    requested: str
    user: str
    held: bool
    allocated: Capacity
    identity: JobIdentity | None

    @property
    def phase(self) -> Phase:
        if self.state in _WAITING:
            return "waiting"
        if self.state in _RUNNING:
            return "running"
        return "ended"

    def outcome(self) -> Outcome:
        """How the job ended (only for an ended job)."""
        if self.state not in _ENDED:
            raise ValueError(f"job {self.job_id} is {self.state}: it has not ended")
        reason, note = _ENDED[self.state]
        if reason is None:
            return Outcome("succeeded")
        code = -self.signal if self.signal else self.exit_code
        if self.state == "FAILED" and self.reason not in ("", "None", "NonZeroExitCode"):
            note = f"Slurm: {self.reason}"
        return Outcome("exited", code, reason, note)


def parse_job(record: dict[str, str], what: str) -> SlurmJob:
    job_id = need(record, "JobId", what)
    if not _ID.fullmatch(job_id):
        raise SlurmOutputError(f"{what}: JobId={job_id!r} is not a job id")
    where = f"{what} (job {job_id})"
    state = need(record, "JobState", where)
    if state not in _WAITING | _RUNNING | set(_ENDED):
        raise SlurmOutputError(f"{where}: job state {state!r} is not one this adapter knows")
    exit_text = need(record, "ExitCode", where)
    exit_match = _EXIT.fullmatch(exit_text)
    if exit_match is None:
        raise SlurmOutputError(f"{where}: ExitCode={exit_text!r} is not CODE:SIGNAL")
    name = need(record, "JobName", where)
    reason = record.get("Reason", "")
    nodes = record.get("NodeList", "")
    running = state in _RUNNING
    return SlurmJob(
        job_id=int(job_id),
        name=name,
        state=state,
        reason=reason,
        exit_code=int(exit_match.group(1)),
        signal=int(exit_match.group(2)),
        nodes="" if nodes == "(null)" else nodes,
        requested=_none_if_null(record.get("ReqNodeList", "")),
        user=record.get("UserId", "").split("(")[0],
        held=state == "PENDING" and reason.startswith("JobHeld"),
        # What the job holds on its node now: only a running job holds anything.
        allocated=_allocated(record, where) if running else Capacity(),
        identity=parse_job_name(name),
    )


def _allocated(record: dict[str, str], where: str) -> Capacity:
    """A running single-node job's TRES; its GPUs from ``TresPerNode=gres:gpu:N`` when
    GPUs are no tracked TRES (no slurmdbd)."""
    used = parse_tres(record.get("TRES", ""), where)
    per_node = record.get("TresPerNode", "")
    match = _GPUS_PER_NODE.search(per_node)
    if match is not None and used.gpu == 0:
        used = msgspec.structs.replace(used, gpu=int(match.group(1)))
    return used


def _none_if_null(text: str) -> str:
    return "" if text == "(null)" else text


def parse_jobs(text: str) -> list[SlurmJob]:
    """Every job of ``scontrol show job -o``, in Slurm's order."""
    return [
        parse_job(record, f"scontrol show job line {n}")
        for n, record in enumerate(parse_records(text, "scontrol show job"), 1)
    ]
