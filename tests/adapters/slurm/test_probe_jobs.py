"""Claim probes as Slurm jobs against real daemons (ADR 0119): each check is a short
job on the node costart placed the task on, as the owner's account; a passing job
readies the claim and opens the barrier, ``fail_after`` failing jobs fail it."""

from __future__ import annotations

from typing import Any

import pytest

from costart.adapters.slurm.jobs import SlurmJob, parse_jobs
from tests.adapters.slurm.harness import SlurmFront
from tests.agent.harness import wait_until

pytestmark = pytest.mark.timeout(300)


def probed_group(name: str, probe: dict[str, Any]) -> dict[str, Any]:
    sleep = {"argv": ["/bin/sh", "-c", "exec sleep 600"]}
    return {
        "name": name,
        "owner": "alice",
        "barrier": {"timeout": "240s"},
        "members": [
            {
                "name": "trainer",
                "kind": "job",
                "tasks": 1,
                "shape": {"gpu": 2, "cpu": 2, "mem_gb": 2},
                "claims": ["weights"],
                "run": {**sleep, "probes": {"weights": probe}},
            },
            {
                "name": "rollout",
                "kind": "replica-set",
                "replicas": 2,
                "shape": {"gpu": 1, "cpu": 1, "mem_gb": 1},
                "run": sleep,
            },
        ],
    }


def probe_jobs(front: SlurmFront, gid: str) -> list[SlurmJob]:
    found = parse_jobs(front.slurm.run("scontrol", "show", "job", "-o").stdout)
    return [j for j in found if j.name == f"costart-probe.{gid}.trainer.weights"]


def claim_events(front: SlurmFront, name: str) -> list[dict[str, Any]]:
    return [e for e in front.events(name) if e["event"] in ("ClaimReady", "ClaimFailed")]


def test_a_claim_is_probed_by_slurm_jobs_on_the_tasks_node_and_its_pass_opens_the_barrier(
    front: SlurmFront,
) -> None:
    flag = front.slurm.root / "work" / "weights-ready"
    flag.unlink(missing_ok=True)
    probe = {"exec": ["/bin/sh", "-c", f"test -e {flag}"], "period": "500ms", "timeout": "5s"}
    gid = front.submit(probed_group("probed", probe))

    # Checks run as Slurm jobs and fail while the weights are missing; nothing starts.
    wait_until(
        lambda: len([j for j in probe_jobs(front, gid) if j.phase == "ended"]) >= 2,
        90,
        lambda: f"two ended probe jobs\n{front.logs()}",
    )
    (trainer_node,) = {n for (m, _), n in front.placed_nodes("probed").items() if m == "trainer"}
    failed = [j for j in probe_jobs(front, gid) if j.phase == "ended"]
    assert all(j.state == "FAILED" and j.exit_code == 1 for j in failed), failed
    assert all(j.user == "nobody" for j in failed)  # the owner's mapped account
    tasks = front.jobs(gid)
    assert len(tasks) == 3 and all(j.held for j in tasks), tasks
    assert claim_events(front, "probed") == []

    # The weights appear: the next probe job passes, the claim is READY, the barrier opens.
    flag.touch()
    wait_until(
        lambda: (
            front.state("probed") == "RUNNING"
            and all(j.phase == "running" for j in front.jobs(gid))
        ),
        90,
        lambda: f"the group running\n{front.logs()}",
    )
    (ready,) = claim_events(front, "probed")
    assert ready["event"] == "ClaimReady" and ready["actor"] == "agent:slurm", ready
    jobs = probe_jobs(front, gid)
    assert [j.state for j in jobs if j.state == "COMPLETED"] == ["COMPLETED"], jobs
    assert {j.nodes for j in jobs} == {trainer_node}  # every check ran where the task runs
    flag.unlink()


def test_fail_after_failing_probe_jobs_fail_the_claim_naming_slurm(front: SlurmFront) -> None:
    probe = {"file": "never-there", "period": "300ms", "timeout": "5s", "fail_after": 2}
    gid = front.submit(probed_group("unprobed", probe))
    wait_until(
        lambda: claim_events(front, "unprobed") != [],
        90,
        lambda: f"the claim failed\n{front.logs()}",
    )
    (failed,) = claim_events(front, "unprobed")
    assert failed["event"] == "ClaimFailed" and failed["actor"] == "agent:slurm", failed
    assert "2 misses in a row" in str(failed), failed
    assert "Slurm probe job" in str(failed), failed
    ended = [j for j in probe_jobs(front, gid) if j.phase == "ended"]
    assert len(ended) == 2, ended
