"""The adapter's record of what it submitted: what makes a restart submit nothing twice
and leave strangers alone (read against recorded Slurm output, no daemons)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from costart.adapters.slurm.adapter import SlurmAdapter, SlurmConfig
from costart.adapters.slurm.commands import Slurm
from costart.adapters.slurm.identity import JobIdentity
from costart.adapters.slurm.jobs import SlurmJob, parse_jobs
from costart.adapters.slurm.ledger import JobLedger
from costart.adapters.slurm.nodes import SlurmNode, parse_nodes
from costart.agent.accounts import Accounts
from costart.rest.client import Client

RECORDED = Path(__file__).parent / "recorded"
TRAINER_2 = JobIdentity("0123abcd", "trainer", 0, 2)  # job 9 in jobs-running-held.txt


class RecordedSlurm(Slurm):
    """Slurm as recorded: the nodes and jobs of the files, no command run."""

    def nodes(self) -> list[SlurmNode]:
        return parse_nodes((RECORDED / "nodes-busy-drained.txt").read_text())

    def jobs(self) -> list[SlurmJob]:
        return parse_jobs((RECORDED / "jobs-running-held.txt").read_text())


def adapter(state: Path) -> SlurmAdapter:
    config = SlurmConfig(nodes=("n1", "n2", "n3", "n4"), state_dir=state, accounts=Accounts({}))
    return SlurmAdapter(config, cast(Client, object()), RecordedSlurm())


def test_the_ledger_survives_a_restart(tmp_path: Path) -> None:
    ledger = JobLedger(tmp_path)
    ledger.record(TRAINER_2, None)
    ledger.record(TRAINER_2, 7)
    again = JobLedger(tmp_path)
    assert again.job_id(TRAINER_2) == 7 and TRAINER_2 in again
    again.forget(TRAINER_2)
    assert TRAINER_2 not in JobLedger(tmp_path)


def test_an_intent_without_an_id_is_matched_by_name_not_submitted_again(tmp_path: Path) -> None:
    JobLedger(tmp_path).record(TRAINER_2, None)  # the predecessor died inside sbatch
    reading = adapter(tmp_path).read()
    assert reading.ours[TRAINER_2].job_id == 9
    assert JobLedger(tmp_path).job_id(TRAINER_2) == 9
    assert reading.unknown == []


def test_a_costart_named_job_without_a_record_is_unknown_never_ours(tmp_path: Path) -> None:
    reading = adapter(tmp_path).read()
    assert reading.ours == {}
    assert [j.job_id for j in reading.unknown] == [9]
    assert [j.name for j in reading.outside] == ["outside-gpu"]


def test_outside_use_per_node(tmp_path: Path) -> None:
    reading = adapter(tmp_path).read()
    use = reading.outside_use()
    assert {node: (c.gpu, c.cpu, c.mem_gb) for node, c in use.items()} == {"n2": (2, 3, 3)}


def test_a_damaged_ledger_fails_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "slurm-jobs.json").write_text('[{"name": "not-ours", "job_id": 3}]')
    with pytest.raises(ValueError, match=r"slurm-jobs.json: 'not-ours' is not a costart job name"):
        JobLedger(tmp_path)
