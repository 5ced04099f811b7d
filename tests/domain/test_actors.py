"""Who caused a change: an actor is a known kind and, unless costart's own timer, a
name matched whole; it prints as ``KIND:NAME``."""

from __future__ import annotations

import pytest

from costart.domain import limits
from costart.domain.actors import TIMER, Actor
from costart.domain.errors import DomainError

NAME_RULE = (
    f"at most {limits.MAX_ACTOR_NAME} characters of letters, digits and ._@:/- "
    "(starting with a letter or digit)"
)


@pytest.mark.parametrize(
    ("text", "actor"),
    [
        ("user:alice", Actor("user", "alice")),
        ("agent:node-3", Actor("agent", "node-3")),
        ("host:slurmctld", Actor("host", "slurmctld")),
        ("host:ns/ctl:1", Actor("host", "ns/ctl:1")),
        ("timer", TIMER),
    ],
    ids=["user", "agent", "host", "host-with-separators", "timer"],
)
def test_an_actor_prints_as_kind_and_name(text: str, actor: Actor) -> None:
    assert str(actor) == text


@pytest.mark.parametrize("kind", ["user", "agent", "host"])
def test_every_actor_but_the_timer_needs_a_name(kind: str) -> None:
    with pytest.raises(DomainError) as refused:
        Actor(kind)  # type: ignore[arg-type]
    assert str(refused.value) == f"a {kind} actor needs a name"


def test_an_unknown_kind_is_refused_listing_the_kinds() -> None:
    with pytest.raises(DomainError) as refused:
        Actor("root", "x")  # type: ignore[arg-type]
    assert str(refused.value) == "actor kind 'root' is not one of user, agent, host, timer"


@pytest.mark.parametrize(
    "name",
    ["-alice", "al ice", "alice\n", "a" * (limits.MAX_ACTOR_NAME + 1), "é"],
    ids=["leading-dash", "space", "final-newline", "too-long", "not-ascii"],
)
def test_a_bad_name_is_refused_with_the_rule(name: str) -> None:
    with pytest.raises(DomainError) as refused:
        Actor("user", name)
    assert str(refused.value) == f"actor name {name!r}: {NAME_RULE}"


def test_the_longest_name_and_every_allowed_character_are_accepted() -> None:
    assert Actor("user", "a" * limits.MAX_ACTOR_NAME).name == "a" * limits.MAX_ACTOR_NAME
    assert Actor("agent", "N0._@:/-z").name == "N0._@:/-z"
    assert Actor("timer", "").name == ""


def test_the_builders_make_the_kind_they_name() -> None:
    assert Actor.user("alice") == Actor("user", "alice")
    assert Actor.agent("n1") == Actor("agent", "n1")
    assert Actor.host() == Actor("host", "host")
    assert Actor.host("slurm") == Actor("host", "slurm")
