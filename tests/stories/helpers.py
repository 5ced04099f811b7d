"""Shared steps for the use-case stories: load a scenario, place, ready claims, start."""

from __future__ import annotations

from pathlib import Path

from costart.bootstrap import Settings, bootstrap
from costart.domain.decisions import PlaceGroup, PlaceMember
from costart.domain.events import Assignment
from costart.domain.spec import parse_spec
from costart.domain.spec_types import GroupSpec
from tests.builders import ManualClock

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def load(name: str) -> GroupSpec:
    return parse_spec((SCENARIOS / name).read_bytes(), "toml")


class Story:
    """A controller on a manual clock with the log as the story's record."""

    def __init__(self, spec: GroupSpec) -> None:
        self.spec = spec
        self.clock = ManualClock()
        self.controller = bootstrap(Settings(cluster=None), clock=self.clock)
        self.node_seq = 0

    def ref(self, member: str) -> str:
        return f"{self.spec.name}/{member}"

    def nodes(self, first_index: int, count: int) -> tuple[Assignment, ...]:
        placed = []
        for index in range(first_index, first_index + count):
            self.node_seq += 1
            placed.append(Assignment(index, f"node-{self.node_seq:03d}"))
        return tuple(placed)

    def place_gang(self) -> list:
        """Place each member's start quorum (min_start) on fresh nodes."""
        assignments = {m.name: self.nodes(0, m.min_start) for m in self.spec.members}
        return self.controller.apply_decisions([PlaceGroup(self.spec.name, assignments)])

    def place_alone(self, member: str, first_index: int, count: int) -> list:
        decision = PlaceMember(self.spec.name, member, self.nodes(first_index, count))
        return self.controller.apply_decisions([decision])

    def ready_all_claims(self, member: str | None = None) -> list:
        events = []
        for m in self.spec.members:
            if member is None or m.name == member:
                for claim in m.claims:
                    events += self.controller.claim_ready(self.ref(m.name), claim)
        return events

    def start_all(self) -> list:
        events = []
        for m in self.spec.members:
            if self.controller.may_start(self.ref(m.name)):
                state = next(s for s in self.controller.members(self.spec.name) if s.name == m.name)
                if state.status == "READY":
                    events += self.controller.member_started(self.ref(m.name))
        return events

    def log(self) -> list[str]:
        return [type(e).__name__ for _, e in self.controller.read_events()]

    def status(self) -> dict[str, str]:
        group = self.controller.group(self.spec.name)
        return {"group": group.status} | {
            m.name: m.status for m in self.controller.members(self.spec.name)
        }
