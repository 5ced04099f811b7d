"""The agent's decision (`costart.agent.reconcile.plan`), table-driven."""

from __future__ import annotations

import pytest

from costart.agent import NodeTask, TaskKey, plan


def task(
    index: int = 0, *, state: str = "PLACED", may_start: bool = True, attempt: int = 1
) -> NodeTask:
    return NodeTask(
        group="g",
        member="m",
        task=index,
        node="n1",
        attempt=attempt,
        kind="job",
        state="RUNNING" if may_start else "PLACED",
        may_start=may_start,
        group_id="gid",
        task_state=state,
        task_attempt=attempt,
    )


def key(index: int = 0, attempt: int = 1) -> TaskKey:
    return TaskKey("gid", "m", index, attempt)


CASES = [
    # (what, desired, running, launched now, launched before, unreported, start, stop, lost)
    ("a placed task that may start starts", [task()], [], [], [], [], [0], [], []),
    ("nothing starts before may_start", [task(may_start=False)], [], [], [], [], [], [], []),
    ("a run is launched once", [task()], [], [key()], [], [], [], [], []),
    ("a running task we run is left alone", [task(state="RUNNING")], [key()], [key()], [], [], [], [], []),
    ("a task that left the node is stopped", [], [key()], [key()], [], [], [], [0], []),
    ("a task ended on the server is stopped", [task(state="STOPPED")], [key()], [key()], [], [], [], [0], []),
    ("a relaunch is a new key: the old run stops, the new starts", [task(attempt=2)], [key()], [key()], [], [], [0], [0], []),
    ("a running task we do not run is lost", [task(state="RUNNING")], [], [], [], [], [], [], ["does not run it"]),
    ("a running task of our predecessor is lost", [task(state="RUNNING")], [], [], [key()], [], [], [], ["agent restarted and no longer runs it"]),
    ("a predecessor's unreported start is lost, not run again", [task()], [], [], [key()], [], [], [], ["before it reported the start"]),
    ("an exit awaiting its report is not lost", [task(state="RUNNING")], [], [key()], [], [key()], [], [], []),
    ("a succeeded task is neither started nor lost", [task(state="SUCCEEDED")], [], [key()], [], [], [], [], []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("desired", "running", "now", "before", "unreported", "start", "stop", "lost"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_the_plan(desired, running, now, before, unreported, start, stop, lost):
    made = plan(desired, running, now, before, unreported)
    assert [t.task for t in made.start] == start
    assert [k.task for k in made.stop] == stop
    assert len(made.lost) == len(lost)
    for (_, why), expected in zip(made.lost, lost, strict=True):
        assert expected in why


def test_records_of_runs_gone_from_the_node_are_forgotten_once_nothing_runs():
    assert plan([], [], [key(0)], [key(1)], []).forget == [key(0), key(1)]
    assert plan([], [key(0)], [key(0)], [], []).forget == []
    assert plan([], [], [key(0)], [], [key(0)]).forget == []
