"""A time limit is not a kill switch (ADR 0092): a reservation stops only preemptible
work. A job that declares ``max_runtime`` is stopped by its own limit and by nothing
else — not when it borrowed from a lending reservation (it could borrow only because
its limit ends before the reservation's expected completion), and not when it was
placed while a reservation was open (the issue's case: a 24h job killed 1.7 h later
"preempted for reservation ...")."""

from __future__ import annotations

import pytest

from costart.domain import events as ev
from costart.domain.decisions import PlaceGroup, Preempt
from costart.domain.errors import DomainError
from costart.domain.events import Assignment
from tests.builders import a_group as any_group
from tests.builders import start

from .builders import Rig, a_cluster, a_group

HOUR_S = 3600


def _lending_gang(rig: Rig) -> None:
    builder = a_group("big").with_placement(mode="reserve-backfill", timeout="4h", backoff="1m")
    rig.submit(builder.with_member("w", gpu=8, tasks=4).build())


def _job(name: str, **flags: object) -> object:
    builder = any_group(name).atomic().with_member("job", gpu=2, **flags)  # type: ignore[arg-type]
    return builder.with_rule("restart-member", members=("job",), reasons=("preempted",)).build()


def _stopped(events: list[object]) -> list[object]:
    return [e for e in events if isinstance(e, ev.MemberFailed) and e.reason == "preempted"]


def test_a_limited_borrower_is_never_stopped_and_the_gang_starts_when_its_limit_ends() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    rig.submit(any_group("running").with_member("w", gpu=8, tasks=3, max_runtime="2h").build())
    placement = {"w": tuple(Assignment(i, f"b0-r0-n{i}") for i in range(3))}
    rig.controller.apply_decisions([PlaceGroup("running", placement)])
    start(rig.controller, "running/w")
    _lending_gang(rig)
    rig.session()
    rig.submit(_job("short", max_runtime="1h"))  # not preemptible: borrows by its limit
    rig.session()
    assert rig.nodes_of("short", "job") == ["b0-r0-n3"]
    rig.start_all("short")
    rig.finish("running")
    events = rig.session()  # the gang would fit if "short" were stopped
    assert _stopped(events) == []
    assert rig.status("short") == "RUNNING" and rig.status("big") == "RESERVING"
    for _ in range(3):  # 45 minutes on: still running, the gang still waits
        rig.session(advance_s=HOUR_S / 4)
    assert rig.status("short") == "RUNNING" and rig.status("big") == "RESERVING"
    rig.session(advance_s=HOUR_S / 4)  # its limit, not the reservation, ends it
    job = rig.controller.members("short")[0]
    assert job.last_reason == "max-runtime"
    rig.session()
    assert rig.status("big") == "RUNNING", rig.controller.group("big").pend_reason


def test_a_job_placed_while_a_reservation_is_open_is_not_stopped_for_it() -> None:
    # "a" fills n0, n1 and 6 GPUs of n2; the gang wants four whole nodes: it holds n3
    # and claims the rest. A 24h job (a limit, not preemptible) is then placed on n2's
    # two free GPUs. When "a" ends the gang would fit if the job were stopped; under
    # ADR 0045's first rule it was ("placed since the reservation opened").
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    rig.occupy("a", {"b0-r0-n0": 8, "b0-r0-n1": 8, "b0-r0-n2": 6})
    _lending_gang(rig)
    rig.session()
    assert rig.status("big") == "RESERVING"
    rig.submit(_job("day", max_runtime="24h"))
    rig.controller.apply_decisions([PlaceGroup("day", {"job": (Assignment(0, "b0-r0-n2"),)})])
    rig.start_all("day")
    rig.finish("a")
    events = rig.session()
    assert _stopped(events) == []
    assert rig.status("day") == "RUNNING" and rig.status("big") == "RESERVING"
    assert "b0-r0-n2" not in rig.nodes_of("big", "w")


def test_the_controller_refuses_to_preempt_work_that_is_not_preemptible() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    rig.occupy("limited", {"b0-r0-n0": 2})
    _lending_gang(rig)
    rig.session()
    before = rig.controller.recorder.max_notification_id()
    with pytest.raises(DomainError, match="member w is not preemptible: reservation big"):
        rig.controller.apply_decisions([Preempt("limited", ("b0-r0-n0",), "big")])
    assert rig.controller.recorder.max_notification_id() == before
