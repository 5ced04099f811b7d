"""Who reads a run table's env values, and the copy everybody else gets
(`costart.rest.env_values`, ADR 0064): the rule as a table, the withheld copy, and the
proof that the events it rewrites are all the events that carry a run table."""

from __future__ import annotations

import json
import uuid
from typing import Any

import msgspec
import pytest

from costart.domain import events as ev
from costart.domain.run_table import RunSpec
from costart.domain.spec import parse_spec
from costart.eventlog.codec import canonical_encode as encode
from costart.rest.auth import User
from costart.rest.env_values import WITHHELD_VALUE, event_without_env, sees_env_values, withheld

GROUP = uuid.UUID(int=7)
ALICE = User(name="alice", role="owner")
BOB = User(name="bob", role="owner")
ROOT = User(name="root", role="admin")
CSI = User(name="csi", role="claims")
AGENT_N1 = User(name="agent-1", role="agent", nodes=("n1", "n2"))
AGENT_N3 = User(name="agent-3", role="agent", nodes=("n3",))
RUN = RunSpec(argv=("x",), grace_ns=1, log_dir="l", env=(("API_KEY", "k"), ("MODE", "m")))


@pytest.mark.parametrize(
    ("user", "owner", "nodes", "sees"),
    [
        (ALICE, "alice", (), True),
        (BOB, "alice", ("n1",), False),
        (ROOT, "alice", (), True),
        (ROOT, None, (), True),
        (ALICE, None, (), False),  # an owner not known: only an admin
        (CSI, "alice", ("n1",), False),
        (AGENT_N1, "alice", ("n2", "n9"), True),  # a task on one of its nodes
        (AGENT_N3, "alice", ("n1", "n2"), False),
        (AGENT_N1, "alice", (), False),  # the watch stream: no nodes given
        (User(name="alice", role="agent", nodes=("n3",)), "alice", (), False),  # name alone
    ],
)
def test_who_sees_env_values(user, owner, nodes, sees):
    assert sees_env_values(user, owner, nodes) is sees


def test_the_withheld_copy_keeps_the_names_in_order_and_says_so():
    hidden = withheld(RUN)
    assert hidden.env == (("API_KEY", WITHHELD_VALUE), ("MODE", WITHHELD_VALUE))
    assert hidden.env_withheld is True
    assert msgspec.structs.replace(hidden, env=RUN.env, env_withheld=False) == RUN
    assert withheld(hidden) is hidden
    empty = msgspec.structs.replace(RUN, env=())
    assert withheld(empty) is empty  # nothing to withhold: nothing said


def test_a_run_table_in_the_log_encodes_as_before_the_flag_existed():
    assert b"env_withheld" not in encode(RUN)
    assert b"env_withheld" in encode(withheld(RUN))


def spec_with_env() -> Any:
    doc = {
        "name": "g",
        "owner": "alice",
        "members": [
            {"name": "a", "kind": "job", "tasks": 1, "shape": {"cpu": 1}, "run": {"argv": ["x"]}},
            {
                "name": "b",
                "kind": "job",
                "tasks": 1,
                "shape": {"cpu": 1},
                "run": {"argv": ["x"], "env": {"API_KEY": "s3cret"}},
            },
        ],
    }
    return parse_spec(json.dumps(doc), "json")


def test_a_group_and_a_member_creation_lose_their_env_values_and_nothing_else():
    spec = spec_with_env()
    submitted = ev.GroupSubmitted(
        originator_id=GROUP,
        originator_version=1,
        group_id=GROUP,
        at_ns=1,
        spec=spec,
        submission_seq=1,
        member_ids=(uuid.UUID(int=8), uuid.UUID(int=9)),
    )
    hidden = event_without_env(submitted)
    assert isinstance(hidden, ev.GroupSubmitted) and b"s3cret" not in encode(hidden)
    assert hidden.spec.members[0] is spec.members[0]  # no env: the same member
    assert hidden.spec.members[1].run == withheld(spec.members[1].run)
    assert msgspec.structs.replace(hidden, spec=spec) == submitted
    created = ev.MemberCreated(
        originator_id=uuid.UUID(int=9),
        originator_version=1,
        group_id=GROUP,
        at_ns=1,
        spec=spec.members[1],
    )
    assert b"s3cret" not in encode(event_without_env(created))
    plain = ev.MemberCreated(
        originator_id=uuid.UUID(int=8), originator_version=1, group_id=GROUP, at_ns=1,
        spec=spec.members[0],
    )  # fmt: skip
    assert event_without_env(plain) is plain


def _holds_run_spec(info: msgspec.inspect.Type, seen: set[type]) -> bool:
    """Whether a value of this type can hold a `RunSpec`, at any depth."""
    if isinstance(info, msgspec.inspect.StructType):
        if info.cls is RunSpec:
            return True
        if info.cls in seen:
            return False
        seen.add(info.cls)
        return any(_holds_run_spec(f.type, seen) for f in info.fields)
    inner: list[msgspec.inspect.Type] = []
    for name in ("types", "item_type", "item_types", "key_type", "value_type"):
        value = getattr(info, name, None)
        if isinstance(value, tuple):
            inner.extend(value)
        elif value is not None:
            inner.append(value)
    return any(_holds_run_spec(t, seen) for t in inner)


def test_the_events_rewritten_are_every_event_that_carries_a_run_table():
    """A new event carrying a spec would reach the watch stream with its env values
    unless `event_without_env` learns it: this test names it first."""
    carrying = {
        cls.__name__
        for cls in ev.ALL_EVENTS
        if _holds_run_spec(msgspec.inspect.type_info(cls), set())
    }
    assert carrying == {"GroupSubmitted", "MemberCreated"}
