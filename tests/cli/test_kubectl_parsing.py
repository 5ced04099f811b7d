"""The parsing behind the kubectl habits, case by case: global options moved in front of
the command, names as ``-o name`` prints them, set-based selectors (matched whole)."""

from __future__ import annotations

import pytest
import typer

from costart.cli.exits import UsageError
from costart.cli.lazy_group import hoist_global_options
from costart.cli.main import app
from costart.cli.names import group_name, member_name
from costart.domain.errors import DomainError
from costart.domain.label_selectors import (
    Requirement,
    equality_terms,
    matches_all,
    parse_requirements,
)


@pytest.mark.parametrize(
    ("given", "parsed"),
    [
        ("get groups --store s", "--store s get groups"),
        ("get groups -o name --store=s", "--store=s get groups -o name"),
        ("--server u get groups --token t -w", "--server u --token t get groups -w"),
        ("get groups -l --store", "get groups -l --store"),  # -l's value, not an option
        ("describe group g --rebuild-views", "--rebuild-views describe group g"),
        ("demo --store d --walkthrough", "--store d demo --walkthrough"),
        ("serve --cluster c --tokens t", "serve --cluster c --tokens t"),  # serve's own
        ("validate x.toml --cluster c", "validate x.toml --cluster c"),  # validate's own
        ("agent --server u --node n", "agent --server u --node n"),  # the agent's own
        ("get groups -- --store s", "get groups -- --store s"),  # after --: arguments
        ("nosuch --store s", "nosuch --store s"),  # the parser reports it
        ("--store s", "--store s"),
    ],
)
def test_global_options_after_the_command_move_in_front_of_it(given, parsed):
    group = typer.main.get_command(app)
    ctx = group.make_context("costart", ["get"], resilient_parsing=True)
    assert hoist_global_options(group, ctx, given.split()) == parsed.split()


def test_names_as_o_name_prints_them_are_taken_back():
    assert group_name("g1") == group_name("group/g1") == group_name("groups/g1") == "g1"
    assert member_name("g1/m") == member_name("member/g1/m") == member_name("members/g1/m")
    for bad, message in [
        ("member/g1/m", "'member/g1/m' names a member, not a group"),
        ("g1/m", "bad group 'g1/m': write NAME or group/NAME"),
        ("group/", "bad group 'group/': write NAME or group/NAME"),
    ]:
        with pytest.raises(UsageError, match="^" + message.replace("(", r"\(")):
            group_name(bad)
    with pytest.raises(UsageError, match="names a group, not a member"):
        member_name("group/g1/m")
    with pytest.raises(UsageError, match="write GROUP/MEMBER or member/GROUP/MEMBER"):
        member_name("member/g1")


def test_set_based_selectors_parse_whole_and_match_as_kubectl():
    reqs = parse_requirements(["team in (rl, sl),!gpu", "env!=prod", "tier", "zone==a"])
    assert reqs == (
        Requirement("team", "in", ("rl", "sl")),
        Requirement("gpu", "!exists"),
        Requirement("env", "!=", ("prod",)),
        Requirement("tier", "exists"),
        Requirement("zone", "=", ("a",)),
    )
    assert equality_terms(reqs) == (("zone", "a"),)
    labels = {"team": "rl", "tier": "1", "zone": "a"}
    assert matches_all(labels, reqs)
    assert not matches_all({**labels, "gpu": "h100"}, reqs)
    assert not matches_all({**labels, "env": "prod"}, reqs)
    assert matches_all({**labels, "env": "dev"}, reqs)  # != holds for another value
    assert not matches_all({"team": "rl", "zone": "a"}, reqs)  # tier missing
    assert matches_all({}, parse_requirements(["team notin (rl)"]))  # kubectl: absent is in
    assert not matches_all({"team": "rl"}, parse_requirements(["team notin (rl)"]))


@pytest.mark.parametrize(
    "bad",
    ["", "team in rl", "team in ()", "team in (a,)", "te am", "a=b=c", "team in (a))", "!", "a!b"],
)
def test_a_bad_selector_is_one_error_naming_it(bad):
    with pytest.raises(DomainError, match=r"bad label selector .*: expected key=value"):
        parse_requirements([bad])
