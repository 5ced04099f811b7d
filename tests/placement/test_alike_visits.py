"""A waiting group repeated from an alike visit (`AlikeVisits`) gets what the plain
session decides for it from scratch.

The seeded workload (`tests.placement.workload`) is driven with its groups drawn from
a few templates, so that many waiting groups are alike (same members, topology and
mode, other names) and busy sessions hold runs of them; its disturbances (claims,
restarts, node loss, drains) and reservations come and go. Every session the
incremental step, which repeats alike visits, is compared with a plain step built fresh
over a copy of the cluster (`ComparedStep`); how often a visit was repeated, decided and
kept, decided and not kept, or not repeatable is printed, and each path must be taken.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.domain.spec_types import GroupSpec
from costart.domain.states import GroupState, MemberState
from costart.placement import CoPlacementStep
from costart.placement.incremental.alike_visits import AlikeVisits

from . import workload
from .compared_step import ComparedStep

WAYS: Counter[str] = Counter()
TEMPLATES = 5


@pytest.fixture(scope="module", autouse=True)
def _print_ways() -> Any:
    yield
    print(f"\nalike visits: {dict(sorted(WAYS.items()))}")
    assert WAYS["repeated from an alike visit"] > 200
    assert WAYS["decided, kept"] > 50
    assert WAYS["decided, not kept (took or changed capacity)"] > 20
    assert WAYS["not repeatable"] > 100


@pytest.fixture(autouse=True)
def _alike_templates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups drawn from a few templates (the workload's own random specs)."""
    random_spec = workload.random_spec

    def templated(rng: random.Random, name: str) -> GroupSpec:
        return random_spec(random.Random(rng.randrange(TEMPLATES)), name)

    monkeypatch.setattr(workload, "random_spec", templated)


@pytest.fixture(autouse=True)
def _count_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    key_of, waiting = AlikeVisits._key, AlikeVisits.waiting

    def counted(
        self: AlikeVisits,
        group: GroupState,
        members: Sequence[MemberState],
        lower: Sequence[GroupState],
    ) -> None:
        key: Hashable = key_of(self, group, members, lower)
        repeated, kept = self.repeated, len(self.alike)
        waiting(self, group, members, lower)
        if key is None:
            WAYS["not repeatable"] += 1
        elif self.repeated > repeated:
            WAYS["repeated from an alike visit"] += 1
        elif len(self.alike) > kept:
            WAYS["decided, kept"] += 1
        else:
            WAYS["decided, not kept (took or changed capacity)"] += 1

    monkeypatch.setattr(AlikeVisits, "waiting", counted)


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000))
def test_alike_visits_decide_as_the_plain_session(seed: int) -> None:
    checks: list[ComparedStep] = []

    def wrap(step: CoPlacementStep) -> Any:
        checks.append(ComparedStep(step))
        return checks[-1]

    workload.run_workload(seed, sessions=30, groups=120, wrap=wrap)
    assert checks[0].sessions == 30
