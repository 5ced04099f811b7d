"""A whole group life over HTTP only, against `costart serve` on LMDB: submit -> placed ->
claims READY by the claims role -> agents see may_start through the watch and report
started -> a rollout task exits with oom -> restart-member -> scale up -> the trainer
succeeds -> services stopped. And the same with a leader and a standby, the leader
SIGKILLed in the middle: clients follow the new leader; no report lost or applied twice.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest

from costart.rest.client import Client, WatchEvent
from tests.rest.dispatch_support import (
    ADMIN,
    CLAIMS,
    OWNER,
    SERVE_AGENT,
    TRAIN_AGENT,
    life_spec,
    tokens_toml,
)
from tests.rest.serving import DEADLINE_S, POLL_S, serve_env, serving

FAILOVER_S = 30.0
NAME = "life"


class Callers:
    """One client per role, each following the leader among ``urls``."""

    def __init__(self, urls: list[str]) -> None:
        def make(token: str) -> Client:
            return Client(urls, token, timeout_s=10, failover_s=FAILOVER_S)

        self.owner, self.admin, self.claims = make(OWNER), make(ADMIN), make(CLAIMS)
        self.train, self.serve = make(TRAIN_AGENT), make(SERVE_AGENT)

    def member(self, name: str) -> dict:
        rows = self.admin.call("GET", f"/v1/groups/{NAME}/members", list)
        return next(m for m in rows if m["name"] == name)

    def group(self) -> dict:
        return self.admin.call("GET", f"/v1/groups/{NAME}", dict)["group"]

    def wait(self, check: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"never {what}: {self.group()}")
            time.sleep(POLL_S)


def report(c: Client, member: str, path: str, body: dict) -> dict:
    return c.call("POST", f"/v1/groups/{NAME}/members/{member}/{path}", dict, json=body)


def drive_life(urls: list[str], kill_leader: Callable[[], None] | None) -> list[WatchEvent]:
    c = Callers(urls)
    seen: list[WatchEvent] = []
    barrier = threading.Event()

    def agent_watch() -> None:
        for event in c.train.watch(after=0, group=NAME):
            seen.append(event)
            if event.type == "BarrierReleased":
                barrier.set()
            if event.type == "GroupSucceeded":
                return

    c.owner.call("POST", "/v1/groups", dict, json=life_spec(NAME, trainer_tasks=1))
    watcher = threading.Thread(target=agent_watch, daemon=True)
    watcher.start()
    c.wait(lambda: c.group()["state"] == "PLACED", "placed")
    for member in ("trainer", "rollout"):
        answer = report(c.claims, member, "claims/gpus", {"attempt": 1, "status": "READY"})
        assert answer["applied"]
    assert barrier.wait(DEADLINE_S), "the agent's watch never saw the barrier release"
    holds = c.admin.call("GET", "/v1/holds", list)
    nodes = {h["node"] for h in holds if h["group"] == NAME and h["kind"] == "used"}
    for node in sorted(nodes):
        agent = c.train if node.startswith("h100") else c.serve
        tasks = agent.call("GET", f"/v1/nodes/{node}/tasks", list)
        assert tasks and all(t["may_start"] for t in tasks if t["group"] == NAME)
    report(c.train, "trainer", "tasks/0", {"attempt": 1, "event": "started"})
    report(c.serve, "rollout", "tasks/0", {"attempt": 1, "event": "started"})
    if kill_leader is not None:
        kill_leader()
    oom = {"attempt": 1, "event": "exited", "exit_code": 137, "reason": "oom"}
    assert report(c.serve, "rollout", "tasks/1", oom)["applied"]
    c.wait(lambda: c.member("rollout")["restarts"] == 1, "restart-member")
    c.wait(lambda: c.member("rollout")["state"] == "RUNNING", "rollout running again")
    scaled = c.owner.call(
        "POST", f"/v1/groups/{NAME}/members/rollout/scale", dict, json={"replicas": 3}
    )
    assert scaled["desired"] == 3
    c.wait(lambda: c.member("rollout")["placed"] == 3, "the third replica placed")
    done = report(c.train, "trainer", "tasks/0", {"attempt": 1, "event": "succeeded"})
    assert done["member"]["state"] == "SUCCEEDED"
    c.wait(lambda: c.group()["state"] == "SUCCEEDED", "the group succeeded")
    assert c.member("rollout")["state"] == "STOPPED"
    watcher.join(timeout=DEADLINE_S)
    # The trainer's agent watched only its nodes: the trainer's and the group's events.
    assert {e.member for e in seen} <= {"trainer", None}
    end = c.admin.call("GET", "/healthz", dict)["position"]
    history = []
    for event in c.admin.watch(after=0):
        history.append(event)
        if event.position >= end:
            return history
    raise AssertionError("the watch ended early")


def check_history(events: list[WatchEvent]) -> None:
    """The whole log, in order, nothing missing, no report applied twice."""
    positions = [e.position for e in events]
    assert positions == list(range(1, len(events) + 1))
    kinds = Counter((e.type, e.member) for e in events)
    assert kinds[("BarrierReleased", None)] == 1
    assert kinds[("ClaimReady", "trainer")] == 1
    assert kinds[("MemberStarted", "trainer")] == 1
    assert kinds[("MemberFailed", "rollout")] == 1
    assert kinds[("MemberScaled", "rollout")] == 1
    assert kinds[("MemberSucceeded", "trainer")] == 1
    assert kinds[("GroupSucceeded", None)] == 1
    assert kinds[("MemberStopped", "rollout")] == 1


def test_a_whole_group_life_over_http(tmp_path):
    env = serve_env(tmp_path, lmdb=True)
    with serving(tmp_path, tokens_toml(), "--interval", "0.1", env=env) as (url, _, _):
        check_history(drive_life([url], kill_leader=None))


@pytest.mark.timeout(300)
def test_a_whole_group_life_with_the_leader_sigkilled_in_the_middle(tmp_path):
    env = serve_env(tmp_path, lmdb=True)
    options = ("--interval", "0.1", "--lease-duration", "1.0")
    store = tmp_path / "store"
    processes: list = []
    with (
        serving(tmp_path, tokens_toml(), *options, env=env, processes=processes) as leader,
        serving(
            tmp_path,
            tokens_toml(),
            *options,
            "--standby",
            env=env,
            store=store,
            ready_status=503,
            processes=processes,
        ) as standby,
    ):
        not_leader = Client(standby[0], OWNER).call  # the standby names the leader
        with pytest.raises(Exception, match="not leader"):
            not_leader("GET", "/v1/groups", list)

        def kill_leader() -> None:
            processes[0].send_signal(signal.SIGKILL)
            processes[0].wait(timeout=10)

        history = drive_life([leader[0], standby[0]], kill_leader)
    check_history(history)
