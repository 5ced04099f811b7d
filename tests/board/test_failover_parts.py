"""The parts of a board's failover that need no browser (ADR 0117): peer addresses
checked and written as a browser writes an origin, and the pages a login may come back
to (no open redirect)."""

from __future__ import annotations

import pytest

from costart.board.failover import connect_src, safe_next
from costart.server import OptionError, ServeOptions, peer_origin


@pytest.mark.parametrize(
    ("given", "origin"),
    [
        ("http://ctl-b:8081", "http://ctl-b:8081"),
        ("HTTP://Ctl-B:8081", "http://ctl-b:8081"),
        ("http://ctl-b:80", "http://ctl-b"),
        ("https://ctl-b:443", "https://ctl-b"),
        ("https://10.0.0.2:8443", "https://10.0.0.2:8443"),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ],
)
def test_a_peer_is_written_as_its_origin(given: str, origin: str) -> None:
    assert peer_origin(given) == origin


@pytest.mark.parametrize(
    "given",
    [
        "http://ctl-b:8081/",
        "http://ctl-b:8081/board",
        "ftp://ctl-b",
        "ctl-b:8081",
        "http://ctl-b:0",
        "http://ctl-b:70000",
        "http://user@ctl-b",
        "http://ctl b",
    ],
)
def test_a_peer_that_is_not_an_origin_is_refused_naming_it(given: str) -> None:
    with pytest.raises(OptionError, match="expected a server's origin") as refused:
        peer_origin(given)
    assert repr(given) in str(refused.value)


def test_serve_options_take_peers_only_as_origins_and_once_each() -> None:
    assert ServeOptions(peers=("http://ctl-b:8081",)).peers == ("http://ctl-b:8081",)
    with pytest.raises(OptionError, match="as its origin: http://ctl-b"):
        ServeOptions(peers=("http://CTL-B:80",))
    with pytest.raises(OptionError, match="twice"):
        ServeOptions(peers=("http://ctl-b:8081", "http://ctl-b:8081"))


def test_the_policy_lets_a_page_connect_to_its_peers_only() -> None:
    assert connect_src(("http://a:1", "http://b:2")) == "connect-src 'self' http://a:1 http://b:2"


@pytest.mark.parametrize(
    "page",
    ["/", "/?state=RUNNING&owner=alice", "/groups/run-1", "/groups/run-1?seen=42", "/?seen=7"],
)
def test_a_login_comes_back_to_a_board_page(page: str) -> None:
    assert safe_next(page) == page


@pytest.mark.parametrize(
    "page",
    [
        "//evil.example/",
        "https://evil.example/",
        "/groups/../board/logout",
        "/groups/a/b",
        "/board/logout",
        "/groups/run-1?next=<x>",
        "groups/run-1",
        "",
        "/\\evil.example",
    ],
)
def test_a_login_never_goes_anywhere_else(page: str) -> None:
    assert safe_next(page) == "/"


def test_the_serve_options_default_depth_is_the_planners() -> None:
    """Kept apart so that parsing options does not load the planner; held equal here."""
    from costart.placement.shadow import DEFAULT_DEPTH
    from costart.server.options import ESTIMATE_DEPTH

    assert ServeOptions().estimate_depth == ESTIMATE_DEPTH == DEFAULT_DEPTH
