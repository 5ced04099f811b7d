"""One setting changed on a small log made by hand, with the difference computed by
hand; and `--set` refused whole, naming the bad key or value, before anything runs.

The log: a controller on a two-node cluster driven the way an embedding host drives
it — a scheduling session every 10 s, a claim driver readying ``first``'s weights 25 s
after its placement, agents starting tasks as soon as `may_start` says yes and
reporting each run's end. ``first`` (two 8-GPU tasks) takes both nodes from 10 s and
runs an hour; ``second`` (one 8-GPU task, ``reserve``, the default 15m reservation
timeout) waits for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from costart.adapters.stand_in import CLAIM_DRIVER, start_placed_tasks
from costart.bootstrap import Settings, bootstrap
from costart.controller import Controller
from costart.domain.actors import Actor
from costart.domain.spec import parse_spec
from costart.domain.states import GROUP_STARTED
from costart.placement.cluster_file import load_cluster
from costart.replay.whatif.changes import changed_spec, parse_change, parse_changes
from costart.replay.whatif.decisions import Decision, decisions, first_divergence
from costart.replay.whatif.options import WhatIfError
from costart.replay.whatif.summary import compare
from tests.replay.whatif_helpers import read_log, rerun

S = 10**9
MINUTE = 60 * S
CLAIM_DELAY = 25 * S
RUNTIME = {"first/train": 60 * MINUTE, "second/train": 10 * MINUTE}
NODE = '{{ name = "n{i}", path = ["r1"], gpu = 8, cpu = 64, mem_gb = 512 }}'


def cluster_file(where: Path, nodes: int) -> Path:
    body = ",\n         ".join(NODE.format(i=i) for i in range(1, nodes + 1))
    where.write_text(f'levels = ["rack"]\nnodes = [{body}]\n')
    return where


FIRST = """
name = "first"
owner = "alice"
placement = { mode = "atomic" }
[[members]]
name = "train"
kind = "job"
tasks = 2
shape = { gpu = 8 }
claims = ["weights"]
"""
SECOND = """
name = "second"
owner = "bob"
placement = { mode = "reserve" }
[[members]]
name = "train"
kind = "job"
shape = { gpu = 8 }
"""


class Clock:
    def __init__(self) -> None:
        self.now_ns = 0

    def __call__(self) -> int:
        return self.now_ns


def drive(store: Path, cluster: Path, *, jitter: bool = False) -> None:
    """The host's loop, second by second, until both groups have ended. ``jitter``:
    its sessions run a few ms late, differently each time, as a timer on a wall clock
    wakes (off any grid)."""
    clock = Clock()
    controller = bootstrap(Settings(store=str(store), cluster=cluster), clock=clock)
    claims: dict[int, tuple[str, int]] = {}  # due time -> (member, attempt)
    ends: dict[str, int] = {}

    def react(now: int) -> None:
        """Agents start what may start; a placement of ``first`` gets its claim later."""
        for group in ("first", "second"):
            ref = f"{group}/train"
            started = controller.group(group).status in GROUP_STARTED
            if started and controller.may_start(ref) and start_placed_tasks(controller, ref):
                ends[ref] = now + RUNTIME[ref]

    def watch(events: list, now: int) -> None:
        for event in events:
            if type(event).__name__ == "MemberPlaced":
                member = controller.members("first")[0]
                if controller.group("first").id == event.group_id and member.status == "PLACED":
                    claims[now + CLAIM_DELAY] = ("first/train", member.attempt)

    for now in range(0, 4 * 60 * MINUTE, S):
        clock.now_ns = now
        if now == 0:
            controller.submit(parse_spec(FIRST, "toml"))
            controller.submit(parse_spec(SECOND, "toml"))
        for due in sorted(t for t in claims if t <= now):
            ref, attempt = claims.pop(due)
            controller.claim_ready(ref, "weights", attempt, actor=CLAIM_DRIVER)
            react(now)
        for ref, end in list(ends.items()):
            if end <= now:
                del ends[ref]
                group = ref.split("/")[0]
                for task in controller.members(group)[0].tasks:
                    controller.task_succeeded(
                        ref, task.index, task.attempt, actor=Actor.agent(task.node)
                    )
        if now and now % (10 * S) == 0:
            at = now + (now // (10 * S) % 5) * 1_000_003 if jitter else now
            clock.now_ns = at
            watch(controller.schedule(at), at)
            react(at)
            controller.tick(at)
        if all(controller.group(g).is_terminal for g in ("first", "second")):
            break
    assert [controller.group(g).status for g in ("first", "second")] == ["SUCCEEDED"] * 2
    cast(Controller, controller).close()


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    work = tmp_path_factory.mktemp("small")
    two, three = cluster_file(work / "two.toml", 2), cluster_file(work / "three.toml", 3)
    drive(work / "store", two)
    yield work / "store", two, three


def _of(found: list[Decision], kind: str, group: str) -> list[int]:
    return [d.at_ns for d in found if d.kind == kind and d.group == group]


def test_the_hand_made_log_is_reproduced(small: tuple[Path, Path, Path]) -> None:
    store, two, _ = small
    recorded, before = read_log(store)
    assert recorded.session_interval_ns == 10 * S
    a = decisions(before)
    assert first_divergence(a, decisions(rerun(recorded, load_cluster(two)))) is None
    # The log is what the module says: first started at 35 s, second waited an hour.
    assert _of(a, "BarrierReleased", "first") == [35 * S]
    assert _of(a, "ReservationOpened", "second")[0] == 10 * S
    assert _of(a, "ReservationTimedOut", "second")[0] == 15 * MINUTE + 10 * S
    assert _of(a, "BarrierReleased", "second")[0] > 60 * MINUTE + 35 * S


def test_a_shorter_reservation_timeout_times_out_ten_minutes_sooner(
    small: tuple[Path, Path, Path],
) -> None:
    """``--set placement.timeout=5m``: second's reservation opened at 10 s now times out
    at 10 s + 5m = 5m10s instead of 15m10s; first is untouched."""
    store, two, _ = small
    recorded, before = read_log(store)
    after = decisions(
        rerun(recorded, load_cluster(two), changes=parse_changes(["placement.timeout=5m"]))
    )
    assert _of(after, "ReservationTimedOut", "second")[0] == 5 * MINUTE + 10 * S
    a = decisions(before)
    assert _of(after, "BarrierReleased", "first") == _of(a, "BarrierReleased", "first")
    divergence = first_divergence(a, after)
    assert divergence is not None and divergence.whatif is not None
    assert divergence.whatif.at_ns <= 5 * MINUTE + 10 * S


def test_a_third_node_starts_second_at_once(small: tuple[Path, Path, Path]) -> None:
    """``--cluster`` with a third node: second fits at the first session (10 s), needs
    no claim, so its barrier releases then and its 10m run ends at 10m10s; first is
    as recorded (placed at 10 s, its claim 25 s later, started at 35 s)."""
    store, _, three = small
    recorded, _ = read_log(store)
    after = decisions(rerun(recorded, load_cluster(three)))
    assert _of(after, "BarrierReleased", "second") == [10 * S]
    assert _of(after, "GroupSucceeded", "second") == [10 * MINUTE + 10 * S]
    assert _of(after, "ReservationOpened", "second") == []
    assert _of(after, "BarrierReleased", "first") == [35 * S]
    assert _of(after, "GroupSucceeded", "first") == [60 * MINUTE + 35 * S]


def test_a_log_off_any_grid_is_re_run_on_its_smallest_gap_and_says_so(tmp_path: Path) -> None:
    """A host whose sessions run a few ms late each time leaves no grid to read: the
    re-run's sessions are every smallest gap from the first, it says so, and the same
    groups start and end (a decision may move by a few ms)."""
    two = cluster_file(tmp_path / "two.toml", 2)
    drive(tmp_path / "store", two, jitter=True)
    recorded, before = read_log(tmp_path / "store")
    assert any("do not sit on a grid" in t for t in recorded.assumptions)
    assert recorded.session_interval_ns == 10 * S - 4 * 1_000_003
    compared = compare(before, rerun(recorded, load_cluster(two)))
    assert compared.whatif == compared.recorded
    assert compared.whatif.succeeded == 2


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ("placement.timeout", "expected KEY=VALUE"),
        ("placement.tmeout=5m", "placement.tmeout: unknown setting"),
        ("placement.timeout=5m extra", "placement.timeout=5m extra: bad duration"),
        ("placement.timeout=0s", "must be longer than 0s"),
        ("placement.mode=fast", "unknown mode (one of atomic, reserve"),
        ("placement.max_attempts=0", "a whole number of attempts"),
        ("placement.max_attempts=2x", "a whole number of attempts"),
        (" placement.timeout=5m", "expected KEY=VALUE"),
        ("barrier.timeout=", "expected KEY=VALUE"),
    ],
)
def test_a_bad_setting_is_refused_naming_it(given: str, named: str) -> None:
    with pytest.raises(WhatIfError, match=None) as refused:
        parse_change(given)
    assert named in str(refused.value)


def test_a_setting_given_twice_or_breaking_a_rule_is_refused(
    small: tuple[Path, Path, Path],
) -> None:
    with pytest.raises(WhatIfError, match=r"placement\.timeout: given more than once"):
        parse_changes(["placement.timeout=5m", "placement.timeout=6m"])
    store, two, _ = small
    recorded, _ = read_log(store)
    with pytest.raises(WhatIfError, match=r"first's placement\.backoff would exceed"):
        rerun(recorded, load_cluster(two), changes=parse_changes(["placement.backoff=2h"]))


def test_each_setting_reaches_the_specs() -> None:
    changes = parse_changes(
        [
            "placement.mode=atomic",
            "placement.timeout=5m",
            "placement.backoff=2m",
            "placement.backoff_max=1h",
            "placement.max_attempts=3",
            "barrier.timeout=90s",
        ]
    )
    spec = changed_spec(parse_spec(SECOND, "toml"), changes)
    p = spec.placement
    assert (p.mode, p.timeout_ns, p.backoff_ns, p.backoff_max_ns, p.max_attempts) == (
        "atomic", 5 * MINUTE, 2 * MINUTE, 60 * MINUTE, 3,
    )  # fmt: skip
    assert spec.barrier.timeout_ns == 90 * S
