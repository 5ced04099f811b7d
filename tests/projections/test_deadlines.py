"""A group's open deadlines (`costart.projections.deadlines`), which `get`, `describe`,
the REST answers and the board all show, including when the runtime estimate a group
was admitted on runs out (ADR 0121)."""

from __future__ import annotations

import msgspec

from costart.cli.rows import deadline_text, deadlines
from costart.domain.decisions import PlaceGroup
from costart.domain.events import Assignment
from costart.projections.deadlines import open_deadlines
from costart.projections.derive import group_view
from costart.projections.models import GroupView
from costart.rest.timed import group_doc
from tests.builders import SECOND_NS
from tests.placement.builders import Rig, a_cluster, a_group

MINUTE_NS = 60 * SECOND_NS


def _view(rig: Rig, name: str, **changed: object) -> GroupView:
    state = msgspec.structs.replace(rig.controller.group(name), **changed)
    return group_view(state, rig.controller.members(name), 0)


def _placed_rig() -> Rig:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=2))
    rig.submit(a_group("guess").atomic().with_member("job", gpu=2).build())
    placement = {"job": (Assignment(0, "b0-r0-n0"),)}
    rig.controller.apply_decisions([PlaceGroup("guess", placement)])
    return rig


def test_the_view_carries_when_the_estimate_runs_out_and_shows_it_while_on_nodes() -> None:
    rig = _placed_rig()
    now = rig.clock.now_ns
    until = now + 30 * MINUTE_NS
    placed = _view(rig, "guess", admitted_until_ns=until)
    assert placed.admitted_until_ns == until
    assert ("estimate", until) in open_deadlines(placed)
    rig.start_all("guess")
    running = _view(rig, "guess", admitted_until_ns=until)
    assert running.state == "RUNNING"
    assert open_deadlines(running) == [("estimate", until)]
    # As people and programs read it: the label and the time left, the kind and left_ns.
    assert deadlines(running, now) == [("estimate runs out", until)]
    assert deadline_text(running, now) == "estimate in 30m00s"
    (doc,) = group_doc(running, now).deadlines
    assert (doc.kind, doc.at_ns, doc.left_ns) == ("estimate", until, 30 * MINUTE_NS)


def test_no_estimate_deadline_without_one_or_once_the_group_left_its_nodes() -> None:
    rig = _placed_rig()
    until = rig.clock.now_ns + 30 * MINUTE_NS
    assert _view(rig, "guess").admitted_until_ns is None  # placed by limits: none
    assert all(kind != "estimate" for kind, _ in open_deadlines(_view(rig, "guess")))
    rig.start_all("guess")
    rig.finish("guess")
    ended = _view(rig, "guess", admitted_until_ns=until)
    assert ended.state == "SUCCEEDED"
    assert open_deadlines(ended) == []
