"""The jobs this adapter submitted, kept across its restarts (one JSON file, replaced
atomically). A task's entry is written before its ``sbatch`` (job id unknown), and
again with the id once Slurm answered: an adapter that died in between finds the job by
its name instead of submitting a second one. A job named as costart's that has no
entry here was not submitted by this adapter: it is reported, never adopted or killed.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from costart.adapters.slurm.identity import JobIdentity, parse_job_name


class _Entry(msgspec.Struct, frozen=True):
    name: str
    job_id: int | None


class JobLedger:
    def __init__(self, state_dir: Path) -> None:
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path = state_dir / "slurm-jobs.json"
        self.entries: dict[JobIdentity, int | None] = {}
        if self.path.exists():
            for entry in msgspec.json.decode(self.path.read_bytes(), type=list[_Entry]):
                identity = parse_job_name(entry.name)
                if identity is None:
                    raise ValueError(f"{self.path}: {entry.name!r} is not a costart job name")
                self.entries[identity] = entry.job_id

    def __contains__(self, identity: JobIdentity) -> bool:
        return identity in self.entries

    def job_id(self, identity: JobIdentity) -> int | None:
        return self.entries.get(identity)

    def owns(self, job_id: int) -> bool:
        return job_id in self.entries.values()

    def record(self, identity: JobIdentity, job_id: int | None) -> None:
        self.entries[identity] = job_id
        self._save()

    def forget(self, identity: JobIdentity) -> None:
        if self.entries.pop(identity, "absent") != "absent":
            self._save()

    def _save(self) -> None:
        rows = [_Entry(k.job_name(), v) for k, v in sorted(self.entries.items())]
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("wb") as out:
            out.write(msgspec.json.encode(rows))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)
