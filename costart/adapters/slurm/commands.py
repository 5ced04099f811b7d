"""Slurm's commands, run with a time bound; a failure names the command and Slurm's
own words. Slurm finds its cluster through ``SLURM_CONF`` in the environment."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from typing import Final

from costart.adapters.slurm.jobs import SlurmJob, parse_jobs
from costart.adapters.slurm.nodes import SlurmNode, parse_nodes

COMMAND_TIMEOUT_S: Final = 30.0
_SUBMITTED: Final = re.compile(r"(\d{1,12})(?:;[A-Za-z0-9_.-]+)?")


class SlurmCommandError(RuntimeError):
    """A Slurm command failed or could not run (its words in the message)."""


class Slurm:
    """The commands costart runs. ``env``: the environment they run with (None: ours)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = dict(env) if env is not None else None

    def _run(self, argv: Sequence[str], stdin: str | None = None) -> str:
        try:
            done = subprocess.run(
                list(argv),
                input=stdin,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise SlurmCommandError(f"{argv[0]}: {error}") from None
        if done.returncode != 0:
            words = (done.stderr or done.stdout).strip().replace("\n", " ")
            raise SlurmCommandError(f"{argv[0]} exited {done.returncode}: {words}")
        return done.stdout

    def nodes(self) -> list[SlurmNode]:
        return parse_nodes(self._run(["scontrol", "-d", "show", "node", "-o"]))

    def jobs(self) -> list[SlurmJob]:
        """Every job slurmctld still knows (ended ones for ``MinJobAge``)."""
        return parse_jobs(self._run(["scontrol", "show", "job", "-o"]))

    def submit(self, options: Sequence[str], script: str) -> int:
        """``sbatch --parsable OPTIONS`` with ``script`` on stdin: the new job's id."""
        out = self._run(["sbatch", "--parsable", *options], stdin=script).strip()
        match = _SUBMITTED.fullmatch(out)
        if match is None:
            raise SlurmCommandError(f"sbatch answered {out!r}, not a job id")
        return int(match.group(1))

    def release(self, job_id: int) -> None:
        self._run(["scontrol", "release", str(job_id)])

    def cancel(self, job_id: int) -> None:
        self._run(["scancel", "--full", str(job_id)])
