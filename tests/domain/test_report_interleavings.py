"""Random interleavings of late, repeated and current reports give the same state, and
the same log bytes, as the current reports alone (docs/design.md §8, §9)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from costart.controller import Controller, ReportResult
from costart.domain.actors import Actor
from costart.domain.decisions import PlaceMember
from costart.domain.events import Assignment
from costart.domain.invariants import check_world
from costart.eventlog.codec import canonical_encode
from tests.builders import ManualClock, a_group, full_placement, new_controller

AGENT = Actor.agent("node-a")
HOST = Actor.host("claims")
# `make mutate` runs this once per mutant that reaches it: fewer interleavings.
MUTATE = os.environ.get("COSTART_PROFILE") == "mutate"
SPEC = (
    a_group()
    .with_member("trainer", tasks=2, claims=("gpus",))
    .with_member("svc", replicas=2, claims=("cache",))
    .with_rule("restart-member", members=("trainer", "svc"), reasons=("error",), max_restarts=3)
    .build()
)
# A report as sent: (kind, member, task or claim, attempt).
Sent = tuple[str, str, Any, int]


def send(c: Controller, report: Sent, key: str | None = None) -> ReportResult:
    kind, member, what, attempt = report
    ref = f"g1/{member}"
    if kind == "started":
        return c.task_started(ref, what, attempt, actor=AGENT, key=key)
    if kind == "succeeded":
        return c.task_succeeded(ref, what, attempt, actor=AGENT, key=key)
    if kind == "failed":
        return c.task_failed(ref, what, attempt, "error", exit_code=1, actor=AGENT, key=key)
    if kind == "ready":
        return c.claim_ready(ref, what, attempt, actor=HOST, key=key)
    return c.claim_failed(ref, what, attempt, "lost", actor=HOST, key=key)


def _place(member: str, indexes: range, rack: str) -> Callable[[Controller], None]:
    assignments = tuple(Assignment(i, f"{rack}-n{i:03d}") for i in indexes)
    return lambda c: c.apply_decisions([PlaceMember("g1", member, assignments)]) and None


# The current reports and the placement decisions between them, in order: a trainer
# task fails and the job restarts on other nodes, a service replica fails and is placed
# again alone, then the trainer's tasks succeed and the group with them.
SCRIPT: list[Sent | Callable[[Controller], None]] = [
    ("ready", "trainer", "gpus", 1),
    ("ready", "svc", "cache", 1),
    ("started", "trainer", 0, 1),
    ("started", "trainer", 1, 1),
    ("started", "svc", 0, 1),
    ("started", "svc", 1, 1),
    ("failed", "trainer", 1, 1),
    _place("trainer", range(2), "r2"),
    ("ready", "trainer", "gpus", 2),
    ("started", "trainer", 0, 2),
    ("started", "trainer", 1, 2),
    ("failed", "svc", 0, 1),
    _place("svc", range(1), "r3"),
    ("started", "svc", 0, 2),
    ("succeeded", "trainer", 0, 2),
    ("succeeded", "trainer", 1, 2),
]
KINDS = ("started", "succeeded", "failed", "ready", "claim-failed")


def _late(c: Controller, pick: int, kind: str) -> Sent | None:
    """A report about an attempt older than the one its task (or claim) is at now."""
    candidates: list[Sent] = []
    for member in c.members("g1"):
        if kind in ("ready", "claim-failed"):
            candidates += [
                (kind, member.name, claim, attempt)
                for claim in member.spec.claims
                for attempt in range(1, member.attempt)
            ]
        elif kind != "succeeded" or member.spec.kind == "job":  # a replica never succeeds
            candidates += [
                (kind, member.name, task.index, attempt)
                for task in member.tasks
                for attempt in range(1, task.attempt)
            ]
    return candidates[pick % len(candidates)] if candidates else None


def run(noise: dict[int, list[tuple[bool, int, int]]]) -> tuple[bytes, list[bytes]]:
    """Run the script with ``noise`` sent before step i (and after the last at
    ``len(SCRIPT)``): (resend?, pick, kind). Returns the state and the log's bytes."""
    clock = ManualClock()
    c = new_controller(clock)
    c.submit(SPEC)
    c.apply_decisions([full_placement(SPEC)])
    sent: list[Sent] = []
    for step in range(len(SCRIPT) + 1):
        for resend, pick, kind in noise.get(step, []):
            report = sent[pick % len(sent)] if resend and sent else None
            if report is None:
                report = _late(c, pick, KINDS[kind % len(KINDS)])
            if report is None:
                continue
            position = c.world.position
            result = send(c, report, key=f"noise-{step}")
            assert result.outcome in ("repeated", "stale"), (report, result)
            assert result.events == () and c.world.position == position
        if step == len(SCRIPT):
            break
        clock.advance(1)
        item = SCRIPT[step]
        if callable(item):
            item(c)
        else:
            result = send(c, item)
            assert result.outcome == "applied", (item, result)
            sent.append(item)
        check_world(c.world)
    assert c.group("g1").status == "SUCCEEDED"
    log = [record.state for record in c.recorder.select_notifications(1, 10_000)]
    return canonical_encode(c.world), log


CLEAN = run({})

noise_plans = st.dictionaries(
    st.integers(0, len(SCRIPT)),
    st.lists(st.tuples(st.booleans(), st.integers(0, 100), st.integers(0, 4)), max_size=4),
    max_size=len(SCRIPT) + 1,
)


@settings(max_examples=20 if MUTATE else 60, deadline=None)
@given(noise_plans)
def test_late_and_repeated_reports_anywhere_change_nothing(noise):
    assert run(noise) == CLEAN


def test_the_noise_reaches_both_kinds_of_report_that_change_nothing():
    """The strategy's extremes: every earlier report sent again after every step, and a
    late one of every kind; each says repeated or stale (checked inside `run`)."""
    every = {
        step: [(True, pick, 0) for pick in range(step + 1)]
        + [(False, pick, kind) for pick in range(3) for kind in range(len(KINDS))]
        for step in range(len(SCRIPT) + 1)
    }
    assert run(every) == CLEAN
