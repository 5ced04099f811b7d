"""A log written before budgets left out got their defaults (ADR 0071) replays as it was.

``budget_log/`` holds a store written by ``write_budget_log`` with the release before
ADR 0071: a restart-member rule without ``max_restarts`` was recorded with budget 0
(left out of the encoding), so one replica's exit failed the group. Every later release
must verify its chain and snapshots against a replay, rebuild that same failed group
(the old event keeps its meaning: no upcaster, the stored value is the resolved one),
re-encode the old submission to its stored bytes, and carry on writing to a copy; the
same document submitted now records the default budget and restarts the replica.
"""

from __future__ import annotations

from pathlib import Path

from costart import Settings, parse_spec
from costart.bootstrap import bootstrap
from costart.domain import Actor
from costart.domain import events as ev
from costart.domain.spec_types import DEFAULT_MAX_RESTARTS
from costart.eventlog.codec import canonical_encode
from costart.replay.rebuild import rebuild
from costart.replay.rebuild_check import verify
from costart.store import verify_log
from costart.store.replay_log import open_log
from tests.builders import ManualClock
from tests.compat.write_budget_log import CLUSTER, GROUP, SPEC

FIXTURE = Path(__file__).with_name("budget_log")
EVENTS = 20
SNAPSHOTS = 4
NEW = "rollout-budget-2"


def test_the_budget_log_replays_the_failure_it_recorded(store: Path) -> None:
    assert verify_log(store).ok
    with open_log(store) as log:
        report = verify(log.source, log.snapshots, log_hash_at=log.record_hash)
        assert report.ok, report.divergence
        assert (report.events, report.snapshots_checked) == (EVENTS, SNAPSHOTS)
        world = rebuild(log.source)
        events = [e for _, e in log.source.read_events()]
        stored = list(log.source.recorder.select_notifications(1, EVENTS))
    submitted = next(e for e in events if isinstance(e, ev.GroupSubmitted))
    (rule,) = submitted.spec.failure.rules
    assert (rule.action, rule.max_restarts) == ("restart-member", 0)  # what that release meant
    assert world.group_named(GROUP).status in {"FAILING", "FAILED"}
    assert not any(isinstance(e, ev.MemberRestarted) for e in events)
    first = next(r for r in stored if r.topic.endswith(":GroupSubmitted"))
    assert canonical_encode(submitted) == first.state  # its bytes, re-encoded


def test_a_new_submission_of_the_same_document_records_the_default(store: Path) -> None:
    settings = Settings(store=str(store), cluster=CLUSTER)
    controller = bootstrap(settings, clock=ManualClock(100 * 10**9))
    assert controller.world.position == EVENTS
    again = parse_spec(SPEC.replace(f'"{GROUP}"', f'"{NEW}"'), "toml")
    assert again.failure.rules[0].max_restarts == DEFAULT_MAX_RESTARTS
    controller.submit(again)
    controller.schedule()
    for member in controller.members(NEW):
        for task in member.tasks:
            agent = Actor.agent(task.node)
            controller.task_started(f"{NEW}/{member.name}", task.index, task.attempt, actor=agent)
    lost = controller.members(NEW)[1].tasks[0]
    agent = Actor.agent(lost.node)
    controller.task_failed(f"{NEW}/rollout", 0, lost.attempt, "error", exit_code=3, actor=agent)
    assert controller.group(NEW).status == "RUNNING"  # the replica restarts (1 of 3)
    assert controller.members(NEW)[1].restarts == 1
    assert controller.group(GROUP).status in {"FAILING", "FAILED"}  # the old one unchanged
    controller.snapshot_now()
    controller.close()
    with open_log(store) as log:
        report = verify(log.source, log.snapshots, log_hash_at=log.record_hash)
        assert report.ok, report.divergence
        submitted = [e for _, e in log.source.read_events() if isinstance(e, ev.GroupSubmitted)]
    assert [s.spec.failure.rules[0].max_restarts for s in submitted] == [0, DEFAULT_MAX_RESTARTS]
