"""Slurm's output read into costart's terms, from outputs recorded from real daemons
(and the rare states written by hand from Slurm's documented format: see recorded/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from costart.adapters.slurm.identity import JobIdentity, parse_job_name
from costart.adapters.slurm.jobs import Outcome, parse_jobs
from costart.adapters.slurm.nodes import node_status, parse_nodes
from costart.adapters.slurm.records import (
    SlurmOutputError,
    parse_record,
    parse_tres,
)
from costart.domain.capacity import Capacity

RECORDED = Path(__file__).parent / "recorded"


def read(name: str) -> str:
    return (RECORDED / name).read_text()


def test_nodes_capacity_allocation_status_features() -> None:
    nodes = {n.name: n for n in parse_nodes(read("nodes-busy-drained.txt"))}
    assert sorted(nodes) == ["n1", "n2", "n3", "n4"]
    assert nodes["n1"].capacity == Capacity(gpu=4, cpu=8, mem_gb=31)  # 32000 MB, rounded down
    assert nodes["n1"].status == "up" and nodes["n1"].allocated == Capacity()
    assert nodes["n3"].status == "drained"
    assert nodes["n3"].reason.startswith("disk replaced soon")
    assert nodes["n4"].allocated == Capacity(gpu=0, cpu=4, mem_gb=2)  # the outside job
    assert nodes["n4"].features == ("rack2",) and nodes["n4"].partitions == ("main",)


def test_node_gpus_in_use_come_from_gres_used() -> None:
    (node,) = parse_nodes(read("node-gpu-alloc.txt"))
    assert node.allocated == Capacity(gpu=2, cpu=3, mem_gb=3)  # 3000M rounded up


@pytest.mark.parametrize(
    ("state", "status"),
    [
        ("IDLE", "up"),
        ("MIXED", "up"),
        ("ALLOCATED", "up"),
        ("IDLE+DRAIN", "drained"),
        ("MIXED+DRAIN", "drained"),
        ("IDLE*", "down"),
        ("DOWN", "down"),
        ("DOWN+DRAIN", "down"),
        ("UNKNOWN+DRAIN+INVALID_REG", "down"),
        ("IDLE+POWERED_DOWN", "down"),
    ],
)
def test_node_states(state: str, status: str) -> None:
    assert node_status(state, "here") == status


def test_unknown_node_state_fails_loudly() -> None:
    with pytest.raises(SlurmOutputError, match="'BLISSFUL' is not one this adapter knows"):
        node_status("BLISSFUL", "here")
    with pytest.raises(SlurmOutputError, match="IDLE\\+HAPPY"):
        node_status("IDLE+HAPPY", "here")


def test_recorded_jobs_map_to_reports() -> None:
    jobs = {j.job_id: j for j in parse_jobs(read("jobs-mixed.txt"))}
    assert jobs[1].identity == JobIdentity("0123abcd", "trainer", 0, 1)
    assert jobs[1].outcome() == Outcome("succeeded")
    assert jobs[2].outcome() == Outcome("exited", 3, "error", None)
    # scancel --signal=KILL of a running batch job: Slurm records CANCELLED, signal 15
    assert jobs[3].outcome() == Outcome(
        "exited", -15, "preempted", "Slurm: cancelled outside costart"
    )
    assert jobs[4].identity is None and jobs[4].phase == "running"
    assert jobs[4].allocated == Capacity(cpu=4, mem_gb=2)
    assert jobs[5].identity == JobIdentity("0123abcd", "rollout", 1, 2)
    assert jobs[5].phase == "ended" and not jobs[5].held


def test_running_and_held_jobs() -> None:
    outside, held = parse_jobs(read("jobs-running-held.txt"))
    assert outside.phase == "running" and outside.identity is None
    assert outside.allocated == Capacity(gpu=2, cpu=3, mem_gb=3)
    assert held.held and held.phase == "waiting" and held.allocated == Capacity()
    assert held.identity == JobIdentity("0123abcd", "trainer", 0, 2)
    assert held.requested == "n1" and held.nodes == ""


def test_rare_states_written_from_the_documented_format() -> None:
    outcomes = {
        j.state + str(j.job_id): j.outcome() for j in parse_jobs(read("jobs-rare-handwritten.txt"))
    }
    assert outcomes == {
        "OUT_OF_MEMORY11": Outcome("exited", -125, "oom", "Slurm: out of memory"),
        "TIMEOUT12": Outcome("exited", -15, "error", "Slurm: time limit reached"),
        "NODE_FAIL13": Outcome("exited", 0, "node-lost", "Slurm: its node failed"),
        "PREEMPTED14": Outcome("exited", -15, "preempted", "Slurm: preempted"),
        "FAILED15": Outcome("exited", -9, "error", None),
        "BOOT_FAIL16": Outcome("exited", 0, "node-lost", "Slurm: its node failed to boot"),
    }


def test_recorded_timeout_and_node_down() -> None:
    (timed_out,) = parse_jobs(read("jobs-timeout.txt"))
    assert timed_out.outcome() == Outcome("exited", -15, "error", "Slurm: time limit reached")
    (down,) = parse_nodes(read("node-down.txt"))
    assert (down.state, down.status) == ("DOWN+NOT_RESPONDING", "down")
    assert down.reason.startswith("Not responding")


def test_unknown_job_state_and_bad_exit_code_fail_loudly() -> None:
    line = read("jobs-mixed.txt").splitlines()[1]
    with pytest.raises(SlurmOutputError, match=r"job 2.*'WEIRD' is not one"):
        parse_jobs(line.replace("JobState=FAILED", "JobState=WEIRD"))
    with pytest.raises(SlurmOutputError, match="ExitCode='3' is not CODE:SIGNAL"):
        parse_jobs(line.replace("ExitCode=3:0", "ExitCode=3"))
    with pytest.raises(SlurmOutputError, match="no JobState= field"):
        parse_jobs(line.replace("JobState=FAILED ", ""))


@pytest.mark.parametrize(
    "name",
    [
        "costart.0123abcd.trainer.0.1x",
        "costart.0123abcd.Trainer.0.1",
        "xcostart.0123abcd.trainer.0.1",
        "costart.0123abcd.trainer.0.0",
        "costart.0123abcd.trainer.01.1",
        "costart.0123abcd.trainer.0.1 ",
        "outside-job",
    ],
)
def test_names_not_matched_whole_are_not_costarts(name: str) -> None:
    assert parse_job_name(name) is None


def test_identity_round_trip() -> None:
    identity = JobIdentity("6f1c2d0e-8f3b-4d55-9a43-1b2c3d4e5f60", "rollout", 12, 3)
    assert parse_job_name(identity.job_name()) == identity
    with pytest.raises(ValueError, match="cannot name"):
        JobIdentity("g", "Bad Name", 0, 1).job_name()


def test_records_and_tres() -> None:
    record = parse_record("A=1 OS=Linux 6 #1 SMP  B/c=x y Comment=", "here")
    assert record == {"A": "1", "OS": "Linux 6 #1 SMP", "B/c": "x y", "Comment": ""}
    with pytest.raises(SlurmOutputError, match="key A twice"):
        parse_record("A=1 A=2", "here")
    with pytest.raises(SlurmOutputError, match="not a Key=value record"):
        parse_record("slurm_load_jobs error: oops", "here")
    assert parse_tres("cpu=3,mem=1.5G,node=1,gres/gpu=2", "t") == Capacity(2, 3, 2)
    assert parse_tres("cpu=1,gres/gpu:a100=1,gres/gpu:v100=2", "t") == Capacity(3, 1, 0)
    assert parse_tres("cpu=1,gres/gpu=2,gres/gpu:a100=2", "t") == Capacity(2, 1, 0)
    with pytest.raises(SlurmOutputError, match="'lots' is not an amount of memory"):
        parse_tres("mem=lots", "t")
    assert parse_jobs("No jobs in the system\n") == []
