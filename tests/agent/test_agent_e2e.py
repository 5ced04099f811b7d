"""`costart agent` end to end: `serve` and agents as real processes on 127.0.0.1 running
real member programs (`tests/agent/program.py`), checked against the log and the
process table (docs/design.md §9, issue 18)."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from costart.agent import proctable
from costart.agent.ledger import LaunchRecord, Ledger
from tests import child_processes
from tests.agent.harness import (
    Cluster,
    agent_token,
    alive_of_group,
    kill_group_leftovers,
    wait_until,
)

pytestmark = pytest.mark.timeout(240)
TWO_AGENTS = [("n1", "n2"), ("n3", "n4")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One server and two agents for the module: each test has its own group (and
    ends it), so they share the cluster without sharing state."""
    running = Cluster(tmp_path_factory.mktemp("agents"), TWO_AGENTS)
    try:
        yield running
    finally:
        running.close()
        for row in running.started():
            kill_group_leftovers(row["COSTART_GROUP_ID"])


# Stopping a group's processes takes an agent poll, a SIGTERM and its grace: seconds when
# quiet, far more on a loaded 2-core machine (a 30 s bound failed once at load 5).
GONE_S = 90.0


def rl_group(
    cluster: Cluster,
    name: str,
    *,
    weights: Path,
    trainer: tuple[str, ...] = (),
    rollout: tuple[str, ...] = (),
    barrier: str = "60s",
    failure: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A trainer job (2 tasks) whose weights claim is probed by a file and each task's
    device claim by a command, and a rollout replica set (2 replicas) serving on ports
    9200-9201."""
    return {
        "name": name,
        "owner": "alice",
        "barrier": {"timeout": barrier},
        "failure": failure or {"default": "fail-group"},
        "members": [
            {
                "name": "trainer",
                "kind": "job",
                "tasks": 2,
                "shape": {"cpu": 1},
                "claims": ["weights"],
                "task_claims": ["device"],
                "run": {
                    "argv": cluster.program(*trainer),
                    "grace": "2s",
                    "probes": {
                        "weights": {
                            "file": str(weights.relative_to(cluster.work)),
                            "period": "100ms",
                        },
                        "device": {"exec": ["true"], "period": "100ms"},
                    },
                },
            },
            {
                "name": "rollout",
                "kind": "replica-set",
                "replicas": 2,
                "shape": {"cpu": 1},
                "run": {"argv": cluster.program(*rollout), "grace": "2s", "port": 9200},
            },
        ],
    }


def no_process_left(group_id: str) -> bool:
    return not alive_of_group(group_id)


def runs(cluster: Cluster, group_id: str) -> Counter[tuple[str, str, str]]:
    """How many times each (member, task, attempt) was spawned."""
    return Counter(cluster.spawned(group_id))


def test_nothing_starts_before_the_barrier_is_committed_and_services_stop_on_success(
    cluster: Cluster, tmp_path: Path
) -> None:
    weights, done = cluster.in_work(tmp_path) / "weights.bin", tmp_path / "trainer-done"
    gid = cluster.submit(rl_group(cluster, "rl", weights=weights, trainer=("--until", str(done))))
    cluster.wait_state("rl", {"PLACED"})
    time.sleep(1.0)  # the agents probe the missing file meanwhile: nothing may start
    assert cluster.spawned(gid) == []
    weights_at_ns = time.time_ns()
    weights.write_bytes(b"w")  # the fake download finishes
    cluster.wait_state("rl", {"RUNNING"})
    wait_until(lambda: len(cluster.started(gid)) == 4, 60, "4 programs started")

    events = cluster.events("rl")
    barrier = [e for e in events if e["event"] == "BarrierReleased"]
    assert len(barrier) == 1
    ready = sorted(e["detail"] for e in events if e["event"] == "ClaimReady")
    assert ready == [
        "claim device of task 0 of attempt 1 READY",  # each task's agent probed its own
        "claim device of task 1 of attempt 1 READY",
        "claim weights of attempt 1 READY",
    ]
    starts = cluster.started(gid)
    assert all(s["start_ns"] > barrier[0]["at_ns"] > weights_at_ns for s in starts)
    assert sorted(runs(cluster, gid)) == [
        ("rollout", "0", "1"), ("rollout", "1", "1"), ("trainer", "0", "1"), ("trainer", "1", "1")
    ]  # fmt: skip
    trainer0 = next(s for s in starts if s["COSTART_MEMBER"] == "trainer")
    assert '"rollout": ["127.0.0.1:9200", "127.0.0.1:9201"]' in trainer0["peers"]
    members = cluster.api.call_list("/v1/groups/rl/members", dict[str, Any])
    log = Path(cluster.directory / "work" / members[0]["tasks"][0]["log"])
    assert log.read_text().startswith("started trainer/0")

    done.touch()  # the trainer finishes: the group succeeds and the rollout is stopped
    cluster.wait_state("rl", {"SUCCEEDED"})
    wait_until(lambda: no_process_left(gid), GONE_S, "every process of the group gone")
    assert not [e for e in cluster.events("rl") if e["event"] == "MemberFailed"]


def test_a_probe_that_never_passes_releases_the_group_at_the_barrier_timeout_unstarted(
    cluster: Cluster, tmp_path: Path
) -> None:
    gid = cluster.submit(
        rl_group(cluster, "stuck", weights=cluster.in_work(tmp_path) / "never", barrier="5s")
    )
    wait_until(lambda: "probing claim" in cluster.logs(), 30, "an agent probing the claim")
    wait_until(
        lambda: any(e["event"] == "BarrierTimedOut" for e in cluster.events("stuck")),
        60,
        "the barrier timed out",
    )
    assert cluster.spawned(gid) == []
    assert no_process_left(gid)
    assert not any(e["event"] == "BarrierReleased" for e in cluster.events("stuck"))
    cluster.api.call("POST", "/v1/groups/stuck/cancel", dict[str, Any])


def test_restart_member_relaunches_exactly_the_failed_task(
    cluster: Cluster, tmp_path: Path
) -> None:
    weights = cluster.in_work(tmp_path) / "weights.bin"
    weights.touch()
    spec = rl_group(
        cluster,
        "restarts",
        weights=weights,
        rollout=("--fail", "rollout:1:1"),
        failure={
            "default": "fail-group",
            "rules": [{"members": ["rollout"], "action": "restart-member", "max_restarts": 3}],
        },
    )
    gid = cluster.submit(spec)

    def relaunched() -> bool:
        return runs(cluster, gid)[("rollout", "1", "2")] == 1

    wait_until(relaunched, 90, lambda: f"rollout/1 relaunched\n{cluster.logs()}")
    time.sleep(2.0)  # a second relaunch or a stray restart would show by now
    assert runs(cluster, gid) == Counter(
        {
            ("trainer", "0", "1"): 1,
            ("trainer", "1", "1"): 1,
            ("rollout", "0", "1"): 1,
            ("rollout", "1", "1"): 1,
            ("rollout", "1", "2"): 1,
        }
    )
    failed = [e for e in cluster.events("restarts") if e["event"] == "MemberFailed"]
    assert [(e["member"], e["actor"]) for e in failed] == [("rollout", "agent:agent-n1")]
    assert cluster.state("restarts") == "RUNNING"
    cluster.api.call("POST", "/v1/groups/restarts/cancel", dict[str, Any])
    wait_until(lambda: no_process_left(gid), GONE_S, "every process of the group gone")


def test_fail_group_and_cancel_leave_no_process_alive(cluster: Cluster, tmp_path: Path) -> None:
    weights = cluster.in_work(tmp_path) / "weights.bin"
    weights.touch()
    failing = rl_group(
        cluster, "fails", weights=weights, trainer=("--child",), rollout=("--child",)
    )
    failing["members"][0]["tasks"] = 1
    failing["members"][1]["replicas"] = 1
    failing["members"][1]["run"]["argv"] += ["--fail", "rollout:0:1"]
    cancelled = rl_group(
        cluster, "cancels", weights=weights, trainer=("--child",), rollout=("--child",)
    )
    cancelled["members"][0]["tasks"] = 1
    cancelled["members"][1]["replicas"] = 1
    gid_fail = cluster.submit(failing)
    gid_cancel = cluster.submit(cancelled)
    cluster.wait_state("fails", {"FAILED"})
    wait_until(lambda: no_process_left(gid_fail), 30, "every process of the failed group gone")

    wait_until(lambda: len(cluster.started(gid_cancel)) == 2, 60, "the second group running")
    wait_until(lambda: len(alive_of_group(gid_cancel)) >= 4, 30, "programs and grandchildren")
    cluster.api.call("POST", "/v1/groups/cancels/cancel", dict[str, Any])
    wait_until(lambda: no_process_left(gid_cancel), 30, "every process of the cancelled group")


def attempts_alive(group_id: str) -> set[str]:
    """The COSTART_ATTEMPT of every live process of the group (from the process table)."""
    found = set()
    for pid in alive_of_group(group_id):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        found |= {
            v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"COSTART_ATTEMPT=")
        }
    return found


def test_restart_group_tears_the_attempt_down_and_starts_each_task_again_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    weights = cluster.in_work(tmp_path) / "weights.bin"
    weights.touch()
    spec = rl_group(
        cluster,
        "regroup",
        weights=weights,
        trainer=("--child",),
        rollout=("--fail", "rollout:1:1"),
        failure={"default": "restart-group", "max_group_restarts": 1},
    )
    spec["placement"] = {"backoff": "1s", "backoff_max": "1s"}
    gid = cluster.submit(spec)

    def second_attempt_running() -> bool:
        again = [k for k in runs(cluster, gid) if k[2] == "2"]
        return len(again) == 4 and attempts_alive(gid) == {"2"}

    wait_until(
        second_attempt_running,
        150,  # a failure, a backoff, a teardown and a new barrier: slow on a loaded machine
        lambda: (
            f"attempt 2 alone running (runs {runs(cluster, gid)},"
            f" attempts alive {attempts_alive(gid)})\n{cluster.logs()}"
        ),
    )
    assert max(runs(cluster, gid).values()) == 1
    assert [e["event"] for e in cluster.events("regroup")].count("GroupRestarted") == 1
    cluster.api.call("POST", "/v1/groups/regroup/cancel", dict[str, Any])
    wait_until(lambda: no_process_left(gid), GONE_S, "every process of the group gone")


def test_an_agent_killed_and_restarted_reconciles_without_starting_anything_twice(
    cluster: Cluster, tmp_path: Path
) -> None:
    weights = cluster.in_work(tmp_path) / "weights.bin"
    weights.touch()
    spec = rl_group(
        cluster,
        "survives",
        weights=weights,
        failure={"default": "restart-member", "max_group_restarts": 0},
    )
    gid = cluster.submit(spec)
    wait_until(
        lambda: len(alive_of_group(gid)) == 4, 60, lambda: f"4 programs running\n{cluster.logs()}"
    )
    members = cluster.api.call_list("/v1/groups/survives/members", dict[str, Any])
    placed = {t["node"] for m in members for t in m["tasks"]}
    victim = next(i for i, nodes in enumerate(cluster.agent_nodes) if placed & set(nodes))
    before = runs(cluster, gid)
    cluster.agents[victim].kill()  # SIGKILL: no chance to stop or report anything
    cluster.agents[victim] = cluster.restart_agent(victim)

    def relaunched() -> bool:
        now = runs(cluster, gid)
        return len(now) > len(before) and len(alive_of_group(gid)) == 4

    wait_until(relaunched, 90, lambda: f"the lost tasks relaunched\n{cluster.logs()}")
    assert max(runs(cluster, gid).values()) == 1  # no run of a task started twice
    lost = [e for e in cluster.log_events("survives") if e["type"] == "MemberFailed"]
    assert lost and all(e["reason"] == "node-lost" for e in lost)
    assert all("its agent restarted" in e["note"] for e in lost), [e["note"] for e in lost]
    cluster.api.call("POST", "/v1/groups/survives/cancel", dict[str, Any])
    wait_until(lambda: no_process_left(gid), GONE_S, "every process of the group gone")


def test_a_running_agent_holds_its_token_in_neither_its_command_line_nor_its_environment(
    cluster: Cluster,
) -> None:
    for agent, nodes in zip(cluster.agents, cluster.agent_nodes, strict=True):
        token = agent_token(nodes).encode()  # given in COSTART_AGENT_TOKEN (the harness)
        proc = Path(f"/proc/{agent.process.pid}")
        assert token not in (proc / "cmdline").read_bytes()
        if os.geteuid() != 0:  # the agent is non-dumpable: its environment is root's alone
            with pytest.raises(PermissionError):
                (proc / "environ").read_bytes()
            continue
        environ = (proc / "environ").read_bytes()
        assert b"COSTART_AGENT_TOKEN=" in environ  # the block it started with, scrubbed
        assert token not in environ


def test_a_restarted_agent_kills_what_its_predecessor_left_and_nothing_a_forged_record_names(
    cluster: Cluster, tmp_path: Path
) -> None:
    spec = {
        "name": "outlives",
        "owner": "alice",
        "members": [
            {
                "name": "server",
                "kind": "replica-set",
                "replicas": 1,
                "shape": {"cpu": 1},
                "run": {"argv": cluster.program("--outlive-agent"), "grace": "2s"},
            }
        ],
    }
    gid = cluster.submit(spec)
    [leftover] = wait_until(lambda: cluster.started(gid), 60, lambda: f"started\n{cluster.logs()}")
    node = leftover["COSTART_NODE"]
    running = proctable.read_proc(leftover["pid"])
    assert running is not None

    def leftover_alive() -> bool:  # by start time too: its pid may be reused once it is gone
        now = proctable.read_proc(leftover["pid"])
        return now is not None and now.start_ticks == running.start_ticks

    victim = next(i for i, nodes in enumerate(cluster.agent_nodes) if node in nodes)
    # An unrelated process, and a record naming it as a run with its true start time:
    # what a task that could write the agent's state would forge.
    unrelated = child_processes.popen(["sleep", "60"], env={"PATH": os.environ["PATH"]})
    try:
        wait_until(
            lambda: Path(f"/proc/{unrelated.pid}/cmdline").read_bytes().startswith(b"sleep"),
            10,
            "sleep running",
        )
        ticks = proctable.read_proc(unrelated.pid)
        assert ticks is not None
        forged = LaunchRecord(
            "forged", "server", 0, 1, "forged/server/0", unrelated.pid, ticks.start_ticks
        )
        cluster.agents[victim].kill()  # SIGKILL: its task outlives it (no PDEATHSIG)
        Ledger(cluster.agents[victim].state_dir).write(forged)
        assert leftover_alive()
        cluster.agents[victim] = agent = cluster.restart_agent(victim)

        wait_until(
            lambda: not leftover_alive(),
            60,
            lambda: f"the leftover killed\n{agent.tail()}",
        )
        assert unrelated.poll() is None  # alive: the forged record killed nothing
        log = agent.log.read_text()
        assert "killed a task left by the previous agent" in log
        [warning] = [
            json.loads(line) for line in log.splitlines() if forged.key.file_name() in line
        ]
        assert warning["pid"] == unrelated.pid
        assert "does not carry the run's COSTART_GROUP_ID" in warning["mismatch"]
    finally:
        unrelated.kill()
        unrelated.wait()
        cluster.api.call("POST", "/v1/groups/outlives/cancel", dict[str, Any])
    wait_until(lambda: no_process_left(gid), GONE_S, "every process of the group gone")


def test_agents_follow_a_new_leader_mid_barrier_and_the_barrier_is_released_once(
    tmp_path: Path,
) -> None:
    cluster = Cluster(tmp_path, TWO_AGENTS, standby=True)
    gid = ""
    try:
        weights = cluster.in_work(tmp_path) / "weights.bin"
        gid = cluster.submit(rl_group(cluster, "ha", weights=weights))
        cluster.wait_state("ha", {"PLACED"})
        assert cluster.standby is not None
        cluster.standby.wait_serving(statuses=(503,))  # "not leader" until it leads
        cluster.leader.kill()  # SIGKILL mid-barrier: the claim is still being probed
        weights.write_bytes(b"w")  # the probe passes; the report must reach the new leader
        cluster.wait_state("ha", {"RUNNING"}, timeout_s=90)
        wait_until(
            lambda: len(cluster.started(gid)) == 4, 60, lambda: f"4 started\n{cluster.logs()}"
        )
        time.sleep(2.0)  # a double start would show by now
        assert Counter(runs(cluster, gid).values()) == Counter({1: 4})
        barrier = [e for e in cluster.events("ha") if e["event"] == "BarrierReleased"]
        assert len(barrier) == 1
        assert all(s["start_ns"] > barrier[0]["at_ns"] for s in cluster.started(gid))
    finally:
        cluster.close()
        if gid:
            kill_group_leftovers(gid)
