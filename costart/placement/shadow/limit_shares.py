"""How far ended runs fell below their declared limits: what the expected start plans a
limited run with when the log has learned no run like it (issue 36, ADR 0146).

The runtime history (`costart.domain.runtime_history`) learns only runs that
*succeeded*: the controller's decisions rest on it, and a run cut short says nothing
about how long the work takes. A start estimate asks something else: when does the
capacity free? A service never succeeds — it runs until its user ends it — so a cluster
of services teaches the history nothing, and a plan over their declared limits puts
every start late by however much users over-declare. What the World does hold is every
ended member: when it started, when it ended and the limit it declared. Its *share* is
the part of the limit it held its capacity for (run / limit, at most 1): users who
declare 8 h for 4 h services keep doing so (Tsafrir, Etsion and Feitelson model the
ratio of actual to requested runtime per user the same way).

`LimitShares.of` gathers the shares of the members of a World's newest ended groups
(started, with a limit), newest first; `LimitShares.samples` answers a member's runs as
those shares of *its* limit, from the first source with at least ``MIN_SAMPLES``
shares: its own key's (the newest `PER_KEY`), its owner's (the newest `PER_OWNER`), the
whole cluster's (the newest `PER_CLUSTER`). A share is kept as (run, limit) in nanoseconds and scaled
in integers: no float enters an answer.

Pure: a function of the World's groups and members; every order is stable (newest by
the group's end, ties by submission; members in their spec's order).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Final, NamedTuple

from costart.domain import runtime_history as learned_runs
from costart.domain.ids import id_text
from costart.domain.spec_types import GroupSpec, MemberSpec
from costart.domain.world import World

PER_KEY: Final = learned_runs.SAMPLES_PER_KEY
"""The newest shares a key keeps (as many as the runtime history keeps samples)."""
PER_OWNER: Final = 100
"""The newest shares an owner keeps."""
PER_CLUSTER: Final = 1000
"""The newest shares the whole cluster keeps."""
RECENT_GROUPS: Final = 2000
"""The newest ended groups whose members' shares are read."""

Scope = tuple[str, ...]
"""Where shares come from: ("share-key", key), ("share-owner", owner), ("share-all",)."""


class EndedRun(NamedTuple):
    """One ended member's run: its key, its group's owner, how long it held its capacity
    and the limit it declared (both in nanoseconds)."""

    key: str
    owner: str
    run_ns: int
    limit_ns: int


class LimitShares:
    """The shares of the given ended runs (newest first); see the module."""

    def __init__(self, runs: Iterable[EndedRun]) -> None:
        by_key: dict[str, list[EndedRun]] = {}
        by_owner: dict[str, list[EndedRun]] = {}
        cluster: list[EndedRun] = []
        for run in runs:
            for pool, bound in (
                (by_key.setdefault(run.key, []), PER_KEY),
                (by_owner.setdefault(run.owner, []), PER_OWNER),
                (cluster, PER_CLUSTER),
            ):
                if len(pool) < bound:
                    pool.append(run)
        self._pools: dict[Scope, list[EndedRun]] = {
            **{("share-key", key): pool for key, pool in by_key.items()},
            **{("share-owner", owner): pool for owner, pool in by_owner.items()},
            ("share-all",): cluster,
        }
        self._scaled: dict[tuple[Scope, int], list[int]] = {}

    @classmethod
    def of(cls, world: World) -> LimitShares:
        """The shares of the members of ``world``'s newest `RECENT_GROUPS` ended groups
        (by end time, ties by submission) that started and declared a limit (a member
        that never started held nothing). Bounded: a World keeps every group it ever
        had, and an estimate is made again every few seconds."""
        ended = heapq.nlargest(
            RECENT_GROUPS,
            (g for g in world.groups.values() if g.is_terminal),
            key=lambda g: (g.ended_at_ns or 0, g.submission_seq),
        )
        runs: list[EndedRun] = []
        for group in ended:
            for member_id in group.member_ids:
                member = world.members[id_text(member_id)]
                limit = member.spec.max_runtime_ns
                began, ended_ns = member.started_at_ns, member.ended_at_ns
                if limit is None or limit <= 0 or began is None or ended_ns is None:
                    continue
                key = learned_runs.runtime_key(group.spec, member.spec)
                runs.append(EndedRun(key, group.spec.owner, max(0, ended_ns - began), limit))
        return cls(runs)

    def runs(self, scope: Scope) -> list[EndedRun]:
        """The ended runs ``scope`` keeps, newest first."""
        return list(self._pools.get(scope, ()))

    def samples(self, group: GroupSpec, member: MemberSpec) -> tuple[Scope, list[int]] | None:
        """``member``'s runs as the shares of its declared limit, from the first source
        with at least ``MIN_SAMPLES`` (None: no limit, or too few shares anywhere). The
        scope names the source and the limit (members ranked together share both)."""
        limit = member.max_runtime_ns
        if limit is None:
            return None
        for scope in (
            ("share-key", learned_runs.runtime_key(group, member)),
            ("share-owner", group.owner),
            ("share-all",),
        ):
            pool = self._pools.get(scope, [])
            if len(pool) >= learned_runs.MIN_SAMPLES:
                return (*scope, str(limit)), self._scale(scope, pool, limit)
        return None

    def _scale(self, scope: Scope, pool: list[EndedRun], limit: int) -> list[int]:
        """The pool's shares of ``limit`` (made once per scope and limit)."""
        known = self._scaled.get((scope, limit))
        if known is None:
            known = self._scaled[(scope, limit)] = [
                limit if r.run_ns >= r.limit_ns else r.run_ns * limit // r.limit_ns for r in pool
            ]
        return known
