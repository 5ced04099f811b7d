"""A member's ``slurm`` table reaches real slurmctld (ADR 0119): the partition, the
billed account, the allow-listed options and the time limit (max_runtime plus grace)
are what ``scontrol show job`` shows; a bad table is refused at submit, naming the
field, and nothing reaches Slurm."""

from __future__ import annotations

from typing import Any

import pytest

from costart.adapters.slurm.records import parse_record
from costart.rest.client import ApiError
from tests.adapters.slurm.harness import SlurmFront
from tests.agent.harness import wait_until

pytestmark = pytest.mark.timeout(300)


def group(name: str, slurm: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "owner": "alice",
        "members": [
            {
                "name": "sim",
                "kind": "job",
                "tasks": 2,
                "shape": {"gpu": 1, "cpu": 1, "mem_gb": 1},
                "max_runtime": "10m",
                "run": {
                    "argv": ["/bin/sh", "-c", "exec sleep 600"],
                    "grace": "20s",
                    "slurm": slurm,
                },
            }
        ],
    }


def test_the_slurm_table_is_what_slurmctld_shows_for_each_job(front: SlurmFront) -> None:
    table = {
        "partition": "gpu",
        "account": "physics",
        "options": ["--comment=exp-42", "--nice=10"],
    }
    gid = front.submit(group("tabled", table))
    wait_until(
        lambda: len([j for j in front.jobs(gid) if j.phase == "running"]) == 2,
        60,
        lambda: f"two running jobs\n{front.logs()}",
    )
    for job in front.jobs(gid):
        shown = parse_record(
            front.slurm.run("scontrol", "show", "job", "-o", str(job.job_id)).stdout, "job"
        )
        assert shown["Partition"] == "gpu", shown
        assert shown["Account"] == "physics", shown
        assert shown["Comment"] == "exp-42", shown
        assert shown["Nice"] == "10", shown
        assert shown["TimeLimit"] == "00:11:00", shown  # 10m + 20s grace, in whole minutes


def test_a_bad_slurm_table_is_refused_at_submit_naming_the_field(front: SlurmFront) -> None:
    with pytest.raises(ApiError) as refused:
        front.submit(group("bad", {"options": ["--uid=0"]}))
    assert refused.value.status == 422, refused.value
    said = f"{refused.value.field} {refused.value.message}"
    assert "members[0].run.slurm.options[0]" in said, said
    assert "--uid is not an option" in said, said
    with pytest.raises(ApiError) as missing:
        front.group("bad")
    assert missing.value.status == 404
    assert front.slurm.run("squeue", "-h", "-o", "%i").stdout.strip() == ""
