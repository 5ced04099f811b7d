"""Which costart task a Slurm job runs: carried in the job's name, read back whole.

``costart.GROUP_ID.MEMBER.TASK.ATTEMPT`` — the group's id (not its name: a group
submitted again under the same name is another group), the member's name, the task's
index and the task's attempt. A name that does not match whole is not costart's job.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from costart.domain.limits import NAME_PATTERN

PREFIX: Final = "costart"
_NAME: Final = re.compile(
    rf"{PREFIX}\.(?P<group_id>[0-9a-f][0-9a-f-]{{0,63}})\.(?P<member>{NAME_PATTERN})"
    r"\.(?P<task>0|[1-9]\d{0,8})\.(?P<attempt>[1-9]\d{0,9})"
)


class JobIdentity(NamedTuple):
    """One run of one task: the job costart submitted for it."""

    group_id: str
    member: str
    task: int
    attempt: int

    def job_name(self) -> str:
        name = f"{PREFIX}.{self.group_id}.{self.member}.{self.task}.{self.attempt}"
        if parse_job_name(name) != self:
            raise ValueError(f"cannot name a Slurm job for {self!r}")
        return name


def parse_job_name(name: str) -> JobIdentity | None:
    """The identity a job name carries, or None for a job costart did not submit."""
    match = _NAME.fullmatch(name)
    if match is None:
        return None
    return JobIdentity(
        match["group_id"], match["member"], int(match["task"]), int(match["attempt"])
    )
