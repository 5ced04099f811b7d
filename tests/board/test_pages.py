"""The board's HTML without a browser: user strings escaped in every place they show,
deadlines with the time left, the actor apart from the detail; the session's CSRF
token; the restart count every table shows; the timeline's end state and markers."""

from __future__ import annotations

import re

from costart.board import pages
from costart.board.session import csrf_token
from costart.display import restarts_text
from costart.projections import GroupDetail, MemberView
from costart.replay.timeline import Lane, Marker, Span, Timeline, TimelineEvent
from costart.replay.timeline_html import lanes_svg, render_html
from costart.rest.auth import User
from tests.rest.test_timed import T0, S, a_group

HOSTILE = '<img src=x onerror="alert(1)">'
ALICE = User(name="alice", role="owner")
BOB = User(name="bob", role="owner")


def a_member(**fields: object) -> MemberView:
    base: dict[str, object] = dict(
        group="g", group_id="g", name="rollout", index=0, kind="replica-set", owner="alice",
        profile="", state="RUNNING", desired=2, min_start=1, min_running=1,
    )  # fmt: skip
    base.update(fields)
    return MemberView(**base)  # type: ignore[arg-type]


def a_timeline(detail: str = "x") -> Timeline:
    lanes = [
        Lane("group", [Span("RUNNING", T0, T0 + 5 * S), Span("CANCELLED", T0 + 5 * S, None)]),
        Lane("rollout", [Span("RUNNING", T0, T0 + 5 * S), Span("STOPPED", T0 + 5 * S, None)]),
    ]
    events = [
        TimelineEvent(7, T0 + 2 * S, "rollout", "MemberFailed", detail),
        TimelineEvent(9, T0 + 5 * S, "group", "GroupCancelled", " (by user:alice)", "user:alice"),
    ]
    markers = [
        Marker("rollout", T0 + 2 * S, "failure", f"rollout: {detail}"),
        Marker("rollout", T0 + 3 * S, "scale", "rollout: MemberScaled"),
        Marker("group", T0 + 5 * S, "cancel", "group: GroupCancelled"),
    ]
    return Timeline("g", T0, T0 + 5 * S, lanes, events, markers)


def test_a_row_escapes_what_users_wrote_and_shows_the_deadline_with_time_left():
    group = a_group(
        state="FAILED", last_reason=HOSTILE, labels={"team": "a"}, reservation_deadline_ns=None
    )
    row = pages.group_row(group, 0, T0 + 60 * S)
    assert "<img" not in row and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in row
    held = a_group(reservation_deadline_ns=T0 + 90 * S)
    assert "reservation 2026-12-01T14:19:40Z (in 30s)" in pages.group_row(held, 0, T0 + 60 * S)


def test_a_group_page_escapes_reasons_details_and_labels_and_offers_actions_to_owners():
    detail = GroupDetail(
        group=a_group(labels={"k": "v"}, last_reason=HOSTILE),
        members=(a_member(last_reason=HOSTILE),),
        holds=(),
        pend_history=(),
        events=(),
    )
    body = pages.group_body(detail, a_timeline(HOSTILE), ALICE, T0 + 10 * S)
    assert "<img" not in body and body.count("&lt;img") >= 3
    assert 'id="cancel"' in body and 'form class="scale" data-member="rollout"' in body
    assert 'id="cancel"' not in pages.group_body(detail, a_timeline(), BOB, T0 + 10 * S)
    # The actor in its own column, not repeated in the detail.
    row = re.search(r'<tr class="event" data-event="GroupCancelled">.*?</tr>', body)
    assert row is not None and row.group(0).endswith("<td></td><td>user:alice</td></tr>")


def test_pages_carry_no_inline_script_or_style():
    detail = GroupDetail(
        group=a_group(), members=(a_member(),), holds=(), pend_history=(), events=()
    )
    page = pages.group_page(
        detail, a_timeline(), user=ALICE, csrf="c", position=3, now_ns=T0 + 10 * S
    )
    for html in (page, pages.login_page("unknown token")):
        assert not re.search(r"<script(?![^>]*\bsrc=)", html)
        assert "style=" not in html and "<style" not in html and " on" + "error=" not in html


def test_the_csrf_token_is_the_sessions_and_not_the_token():
    assert csrf_token("token-a-0123456789") == csrf_token("token-a-0123456789")
    assert csrf_token("token-a-0123456789") != csrf_token("token-b-0123456789")
    assert "token-a" not in csrf_token("token-a-0123456789")


def test_every_restart_is_counted_and_the_uncounted_ones_named():
    assert restarts_text(0, 0) == "0"
    assert restarts_text(2, 0) == "2"
    assert restarts_text(0, 1) == "1 (1 not counted)"
    assert restarts_text(2, 1) == "3 (1 not counted)"


def test_the_timeline_marks_cancels_and_scales_and_draws_end_states_as_bars():
    svg = lanes_svg(a_timeline())
    assert svg.count('class="marker marker-cancel"') == 1
    assert svg.count('class="marker marker-scale"') == 1
    ends = re.findall(
        r'<rect class="span" data-state="(\w+)" data-end="1" [^>]*width="([0-9.]+)"', svg
    )
    assert sorted(state for state, _ in ends) == ["CANCELLED", "STOPPED"]
    assert all(float(width) > 50 for _, width in ends)  # a tenth of the plot, not a sliver
    assert svg.count('class="end-state"') == 2
    assert svg in render_html(a_timeline())  # the standalone page draws the same lanes


def test_the_cli_restarts_column_counts_a_relaunch_the_budget_did_not():
    """A replica relaunched after its node was lost: the budget's count stays 0, but the
    RESTARTS column (like the board and the timeline's marker) shows the relaunch."""
    from io import StringIO

    from rich.console import Console

    from costart.cli.render import members_table

    out = StringIO()
    Console(file=out, width=200).print(members_table([a_member(uncounted_restarts=1)]))
    header, row = [line for line in out.getvalue().splitlines() if line.strip()][:2]
    column = header.index("RESTARTS")
    assert row[column:].startswith("1 (1 not counted)"), out.getvalue()
