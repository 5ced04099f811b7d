"""An agent never starts a task whose run table came with its env values withheld
(ADR 0064): the server no longer counts the group as the agent's, and the task would
run with placeholders instead of its values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from costart.agent import Accounts, Agent, AgentConfig, NodeTask
from costart.domain import RunSpec
from costart.projections import MemberView


class NoServer:
    def close(self) -> None:
        pass

    def call(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the test's agent talks to no server")


class Rows:
    def __init__(self, rows: list[MemberView]) -> None:
        self.rows = rows

    def of(self, group: str) -> list[MemberView]:
        return self.rows


def member(withheld: bool) -> MemberView:
    run = RunSpec(
        argv=("/bin/true",), grace_ns=1, log_dir="logs", env=(("K", "(hidden)"),),
        env_withheld=withheld,
    )  # fmt: skip
    return MemberView(
        group="g", group_id="gid", name="m", index=0, kind="job", owner="alice", profile="",
        state="READY", desired=1, min_start=1, min_running=1, run=run,
    )  # fmt: skip


def test_a_task_whose_env_was_withheld_is_not_started(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    state = tmp_path / "state"
    config = AgentConfig(
        servers=("http://127.0.0.1:9",),
        token="t" * 20,
        nodes=("n1",),
        work_dir=tmp_path / "work",
        state_dir=state,
        accounts=Accounts.agents_own(["alice"], allow_root=True),
    )
    agent = Agent(config, client=NoServer)  # type: ignore[arg-type]
    task = NodeTask("g", "m", 0, "n1", 1, "job", "READY", True, "gid", owner="alice")
    agent._start(task, Rows([member(withheld=True)]))  # type: ignore[arg-type]
    assert agent.procs == {} and agent.exits == {} and agent.launched_now == set()
    assert list(state.glob("*.json")) == []  # not even recorded as launched
    agent._start(task, Rows([member(withheld=False)]))  # type: ignore[arg-type]
    assert set(agent.procs) | set(agent.exits) == {task.key}  # the same task, with its values
    for process in agent.procs.values():
        process.popen.wait(10)
