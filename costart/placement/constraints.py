"""Topology constraints of one placement, resolved to scopes the planner can search.

A `Scope` says: these members' tasks pack into one domain of ``level`` (or spread across
domains of it), required or preferred. Sources, all of which hold at once:

* the group's ``placement.topology`` (inline) — every member;
* a member's ``topology`` — that member;
* a named placement group, referenced by the group or by members — every member that
  names it *in this group*, anchored to where other groups' members of the same
  placement group already are (co-placement without co-start).

Placement groups are registered on the step (or come from the cluster file); an
unknown name is a `SpecError` at submit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from costart.domain.errors import SpecError
from costart.domain.spec_types import GroupSpec, Topology, TopologyPolicy
from costart.domain.states import GroupState
from costart.domain.world import World
from costart.placement.cluster import Cluster


@dataclass(frozen=True)
class Scope:
    """One constraint over some members. ``anchor``: the domain a pack scope must use (or
    prefers, if not required); ``avoid``: domains a spread scope already occupies."""

    members: tuple[str, ...]
    level: str
    policy: TopologyPolicy
    required: bool
    source: str
    anchor: str | None = None
    avoid: tuple[str, ...] = field(default=())


def check_references(
    spec: GroupSpec, cluster: Cluster, placement_groups: Mapping[str, Topology]
) -> None:
    """Raise `SpecError` for an unknown placement group or topology level."""
    refs: list[tuple[str, Topology | None, str | None]] = [
        ("placement.topology", spec.placement.topology, spec.placement.placement_group)
    ]
    refs += [
        (f"members[{i}].topology", m.topology, m.placement_group)
        for i, m in enumerate(spec.members)
    ]
    for path, topology, group_name in refs:
        if group_name is not None and group_name not in placement_groups:
            known = ", ".join(sorted(placement_groups)) or "none defined"
            raise SpecError(path, f"unknown placement group {group_name!r} (known: {known})")
        level = topology.level if topology is not None else None
        if level is not None and not cluster.has_level(level):
            raise SpecError(
                path,
                f"unknown topology level {level!r} (levels: {', '.join(cluster.all_levels())})",
            )


def _pg_users(spec: GroupSpec, name: str) -> tuple[str, ...]:
    if spec.placement.placement_group == name:
        return tuple(m.name for m in spec.members)
    return tuple(m.name for m in spec.members if m.placement_group == name)


def _pg_domains(
    world: World | None, cluster: Cluster, name: str, level: str, skip: GroupState | None
) -> dict[str, int]:
    """Tasks per domain (at ``level``) of every other group's members in placement group
    ``name`` that hold or use capacity."""
    counts: dict[str, int] = {}
    if world is None:
        return counts
    for group in world.live_groups():
        if skip is not None and group.id == skip.id:
            continue
        whole = group.spec.placement.placement_group == name
        for member in world.members_of(group):
            if not whole and member.spec.placement_group != name:
                continue
            for a in (*member.held, *member.assignments):
                index = cluster.index.get(a.node)
                if index is not None:
                    domain = cluster.domain_of(level, index)
                    counts[domain] = counts.get(domain, 0) + 1
    return counts


def _anchor(counts: Mapping[str, int]) -> str | None:
    if not counts:
        return None
    # The domain with the most tasks; ties by id (stable).
    return min(counts, key=lambda d: (-counts[d], d))


def resolve_scopes(
    spec: GroupSpec,
    cluster: Cluster,
    placement_groups: Mapping[str, Topology],
    world: World | None = None,
    group: GroupState | None = None,
    placed: Mapping[str, Sequence[int]] | None = None,
) -> list[Scope]:
    """Every scope that applies to the group. ``placed`` (member -> node indexes of tasks
    that already run) anchors scopes when members are re-placed alone after the start."""
    scopes: list[Scope] = []
    everyone = tuple(m.name for m in spec.members)
    if spec.placement.topology is not None:
        t = spec.placement.topology
        scopes.append(Scope(everyone, t.level, t.policy, t.required, "group"))
    for m in spec.members:
        if m.topology is not None:
            t = m.topology
            scopes.append(Scope((m.name,), t.level, t.policy, t.required, f"member {m.name}"))
    names = {spec.placement.placement_group} | {m.placement_group for m in spec.members}
    for name in sorted(n for n in names if n is not None):
        pg = placement_groups.get(name)
        if pg is None or not cluster.has_level(pg.level):
            continue  # reported by check_references at submit and as infeasible later
        counts = _pg_domains(world, cluster, name, pg.level, group)
        source = f"placement group {name}"
        users = _pg_users(spec, name)
        if pg.policy == "pack":
            scopes.append(
                Scope(users, pg.level, "pack", pg.required, source, anchor=_anchor(counts))
            )
        else:
            scopes.append(
                Scope(users, pg.level, "spread", pg.required, source, avoid=tuple(sorted(counts)))
            )
    return [_anchored(s, cluster, placed) for s in scopes] if placed else scopes


def _anchored(scope: Scope, cluster: Cluster, placed: Mapping[str, Sequence[int]]) -> Scope:
    """A scope some of whose members already run: pack next to them, spread away."""
    counts: dict[str, int] = {}
    for member in scope.members:
        for node in placed.get(member, ()):
            domain = cluster.domain_of(scope.level, node)
            counts[domain] = counts.get(domain, 0) + 1
    if not counts:
        return scope
    if scope.policy == "pack":
        return Scope(
            scope.members,
            scope.level,
            "pack",
            scope.required,
            scope.source,
            anchor=scope.anchor or _anchor(counts),
        )
    avoid = tuple(sorted(set(scope.avoid) | set(counts)))
    return Scope(scope.members, scope.level, "spread", scope.required, scope.source, avoid=avoid)


def relaxed(scopes: Sequence[Scope]) -> list[Scope]:
    """The same scopes, all preferred: does the group fail only because of topology?"""
    return [Scope(s.members, s.level, s.policy, False, s.source, s.anchor, s.avoid) for s in scopes]
