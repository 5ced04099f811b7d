"""The board's HTML, rendered on the server. Every string a user gave (names, owners,
labels, reasons, details) goes through `html.escape`; the pages carry no inline script
or style, so the Content-Security-Policy ``default-src 'self'`` holds them whole.

Times follow the display helpers: ages and deadlines relative to one ``now_ns`` with
the time left, moments as ISO-8601 UTC.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from typing import Final
from urllib.parse import urlencode

from costart.display import (
    clock,
    group_reason,
    member_reason,
    reason_text,
    relative,
    restarts_text,
)
from costart.domain import events as ev
from costart.domain.states import GROUP_STATUSES, GROUP_WAITING
from costart.projections import GroupDetail, GroupView, MemberView
from costart.replay.timeline import Timeline
from costart.replay.timeline_html import lanes_svg, legend
from costart.rest.auth import User
from costart.rest.timed import deadlines
from costart.service.expected_starts import ExpectedStart

TERMINAL: Final = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
EVENT_TYPES: Final = " ".join(sorted(t.__name__ for t in ev.ALL_EVENTS))
GROUP_COLUMNS: Final = (
    "GROUP", "OWNER", "STATE", "RUNNING/DESIRED", "ATTEMPT", "MODE", "GPUS HELD/USED",
    "AGE", "REASON", "NEXT DEADLINE", "EXPECTED START", "LABELS",
)  # fmt: skip


def document(title: str, body: str, *, user: User | None, csrf: str = "", data: str = "") -> str:
    """A whole page: the shipped style sheet and script, the session's CSRF token in a
    meta tag (the script sends it with writes), ``data`` as the body's attributes."""
    who = live = ""
    if user is not None:
        live = '<span id="live" class="live" title="the watch stream">connecting</span>'
        who = (
            f'<form class="logout" method="post" action="/board/logout">'
            f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
            f"{escape(user.name)} ({escape(user.role)}) "
            f'<button type="submit">log out</button></form>'
        )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="{escape(csrf)}">
<title>{escape(title)} · costart</title>
<link rel="stylesheet" href="/board/static/board.css">
<script src="/board/static/board.js" defer></script>
</head><body {data}>
<header><a class="home" href="/">costart board</a>
{live}{who}</header>
<main>{body}</main></body></html>
"""


MOVED_NOTE: Final = (
    "This board moved here: the server it was on stopped answering and this one leads "
    "now. A session stays with the address it was made on: give your token again to "
    "carry on where you were."
)


def login_page(message: str | None = None, *, next_page: str = "/", moved: bool = False) -> str:
    """The login form; ``next_page``: where it comes back to; ``moved``: a page whose
    server was gone moved here (ADR 0117) and asks for the token again (the cookie
    stays with its host)."""
    said = f'<p class="error" id="login-error">{escape(message)}</p>' if message else ""
    if moved:
        said += f'<p class="moved" id="moved">{escape(MOVED_NOTE)}</p>'
    body = f"""<h1>Log in</h1>{said}
<form class="login" method="post" action="/board/login">
<input type="hidden" name="next" value="{escape(next_page)}">
<label>API token <input type="password" name="token" id="token" autocomplete="off"
 required minlength="1" maxlength="4096"></label>
<button type="submit" id="login">log in</button></form>
<p class="hint">The same token as the API's (the tokens file of <code>serve</code>).
The session is kept in a cookie only this site can read.</p>"""
    return document("log in", body, user=None)


def _next_deadline(group: GroupView, now_ns: int) -> str:
    open_ = sorted(deadlines(group, now_ns), key=lambda d: d.at_ns)
    if not open_:
        return "-"
    first = open_[0]
    return f"{first.kind} {clock(first.at_ns)} ({relative(first.at_ns, now_ns)})"


def _labels(labels: Mapping[str, str]) -> str:
    return " ".join(
        f'<span class="label">{escape(k)}={escape(v)}</span>' for k, v in sorted(labels.items())
    )


def _expected_cell(group: GroupView, expected: ExpectedStart | None, now_ns: int) -> str:
    """A waiting group's expected start (ADR 0137), its assumption and freshness in the
    cell's title; ``-`` for a group that is not waiting."""
    if group.state not in GROUP_WAITING:
        return "-"
    if expected is None:
        return '<span class="expected">not planned yet</span>'
    title = f"{expected.assumption}; {expected.freshness(now_ns)}"
    stale = " expected-stale" if expected.stale else ""
    short = expected.cell(now_ns)
    return f'<span class="expected{stale}" title="{escape(title)}">{escape(short)}</span>'


def _expected_line(group: GroupView, expected: ExpectedStart | None, now_ns: int) -> str:
    """The group page's expected-start paragraph (nothing unless it waits)."""
    if group.state not in GROUP_WAITING:
        return ""
    if expected is None:
        return '<p id="expected-start">expected start: not planned yet</p>'
    line, made = expected.line(now_ns), expected.freshness(now_ns)
    cls = ' class="expected-stale"' if expected.stale else ""
    return f'<p id="expected-start"{cls}>expected start: {escape(line)} ({escape(made)})</p>'


def group_row(
    group: GroupView, running: int, now_ns: int, expected: ExpectedStart | None = None
) -> str:
    """One row of the groups table; ``running``: the group's running tasks;
    ``expected``: its expected start, if the server has one."""
    name = escape(group.name)
    reason = group_reason(
        group.state, group.pend_reason, group.last_reason, group.retry_at_ns, now_ns
    )
    cells = (
        f'<a href="/groups/{name}">{name}</a>',
        escape(group.owner),
        f'<span class="state state-{group.state}">{group.state}</span>',
        f"{running}/{group.tasks_desired}",
        str(group.attempt),
        escape(group.mode),
        f"{group.gpu_held}/{group.gpu_placed}",
        relative(group.submitted_at_ns, now_ns).removesuffix(" ago"),
        escape(reason),
        escape(_next_deadline(group, now_ns)),
        _expected_cell(group, expected, now_ns),
        _labels(group.labels),
    )
    tds = "".join(f"<td>{c}</td>" for c in cells)
    return (
        f'<tr class="group" id="group-{name}" data-group="{name}" data-state="{group.state}">'
        f"{tds}</tr>"
    )


def _filters(state: str | None, owner: str | None) -> str:
    options = "".join(
        f'<option value="{s}"{" selected" if s == state else ""}>{s}</option>'
        for s in GROUP_STATUSES
    )
    return f"""<form class="filters" method="get" action="/">
<label>state <select name="state" id="filter-state"><option value="">any</option>{options}
</select></label>
<label>owner <input name="owner" id="filter-owner" value="{escape(owner or "")}"
 maxlength="64"></label> <button type="submit">filter</button></form>"""


def groups_page(
    rows: Iterable[str],
    *,
    user: User,
    csrf: str,
    position: int,
    state: str | None,
    owner: str | None,
    error: str | None = None,
    peers: tuple[str, ...] = (),
) -> str:
    head = "".join(f"<th>{c}</th>" for c in GROUP_COLUMNS)
    said = f'<p class="error">{escape(error)}</p>' if error else ""
    body = f"""<h1>Groups</h1>{_filters(state, owner)}{said}
<table class="groups"><thead><tr>{head}</tr></thead>
<tbody id="groups">{"".join(rows)}</tbody></table>"""
    query = escape(_query(state, owner))
    data = (
        f'data-page="groups" data-position="{position}" data-filter="{query}" '
        f'data-events="{EVENT_TYPES}"{_peers(peers)}'
    )
    return document("groups", body, user=user, csrf=csrf, data=data)


def _peers(peers: tuple[str, ...]) -> str:
    """The other servers the page moves to when its own is gone (`costart.board.failover`)."""
    return f' data-peers="{escape(" ".join(peers))}"' if peers else ""


def _query(state: str | None, owner: str | None) -> str:
    return urlencode([(k, v) for k, v in (("state", state), ("owner", owner)) if v])


def _member_rows(members: Iterable[MemberView]) -> str:
    rows: list[str] = []
    for m in members:
        tasks = "".join(
            f'<tr class="task"><td></td><td colspan="2">task {t.index} (attempt {t.attempt})</td>'
            f'<td><span class="state state-{t.state}">{t.state}</span></td>'
            f"<td>{escape(t.node)}</td><td>"
            f"{'-' if t.exit_code is None else f'exit {t.exit_code}'}</td><td></td><td></td></tr>"
            for t in m.tasks
        )
        nodes = escape(", ".join(m.nodes or m.held_nodes) or "-")
        rows.append(
            f'<tr class="member" data-member="{escape(m.name)}"><td>{escape(m.name)}</td>'
            f"<td>{escape(m.kind)}</td><td>{m.running}/{m.desired}</td>"
            f'<td><span class="state state-{m.state}">{m.state}</span></td><td>{nodes}</td>'
            f"<td>{m.placed} placed, {m.held} held</td>"
            f'<td class="restarts">{restarts_text(m.restarts, m.uncounted_restarts)}</td>'
            f"<td>{escape(member_reason(m.state, m.last_reason))}</td></tr>{tasks}"
        )
    return "".join(rows)


def _actions(detail: GroupDetail, user: User) -> str:
    group = detail.group
    if group.state in TERMINAL or not user.may_act_for(group.owner):
        return ""
    scale = "".join(
        f'<form class="scale" data-member="{escape(m.name)}">scale {escape(m.name)} to '
        f'<input type="number" name="replicas" min="{m.min_running}" value="{m.desired}">'
        f' <button type="submit">scale</button></form>'
        for m in detail.members
        if m.kind == "replica-set"
    )
    return (
        f'<div class="actions"><button id="cancel" data-group="{escape(group.name)}">'
        f'cancel group</button>{scale}<span id="action-result"></span></div>'
    )


def group_body(
    detail: GroupDetail,
    timeline: Timeline,
    user: User,
    now_ns: int,
    expected: ExpectedStart | None = None,
) -> str:
    """The live part of a group page (replaced as events, and new expected starts,
    arrive)."""
    g = detail.group
    reason = group_reason(g.state, g.pend_reason, g.last_reason, g.retry_at_ns, now_ns)
    running = sum(m.running for m in detail.members)
    pend = "".join(
        f"<tr><td>{p.position}</td><td>{clock(p.at_ns)}</td>"
        f"<td>{escape(reason_text(p.reason, p.at_ns))}</td></tr>"
        for p in detail.pend_history
    )
    holds = "".join(
        f"<tr><td>{escape(h.node)}</td><td>{escape(h.member)}</td><td>{h.index}</td>"
        f"<td>{h.kind}</td><td>{h.gpu}</td><td>{'yes' if h.running else 'no'}</td></tr>"
        for h in detail.holds
    )
    events = "".join(
        f'<tr class="event" data-event="{e.event}"><td>{e.position}</td><td>{clock(e.at_ns)}</td>'
        f"<td>{escape(e.member or 'group')}</td><td>{e.event}</td><td>{escape(e.detail)}</td>"
        f"<td>{escape(e.actor or '-')}</td></tr>"
        for e in timeline_events(timeline)
    )
    return f"""<section class="summary">
<p><span class="state state-{g.state}" id="group-state">{g.state}</span>
owner {escape(g.owner)} · attempt {g.attempt} · mode {escape(g.mode)} ·
{running}/{g.tasks_desired} running · GPUs held {g.gpu_held}, used {g.gpu_placed} ·
group restarts {g.group_restarts} · submitted {clock(g.submitted_at_ns)}
({relative(g.submitted_at_ns, now_ns)})</p>
<p>reason: {escape(reason)} · next deadline: {escape(_next_deadline(g, now_ns))}</p>
{_expected_line(g, expected, now_ns)}
<p>{_labels(g.labels)}</p>{_actions(detail, user)}</section>
<h2>Member lanes</h2>{legend()}<div class="lanes">{lanes_svg(timeline)}</div>
<h2>Members and tasks</h2>
<table class="members"><thead><tr><th>MEMBER</th><th>KIND</th><th>RUNNING/DESIRED</th>
<th>STATE</th><th>NODES</th><th>PLACED</th><th>RESTARTS</th><th>REASON</th></tr></thead>
<tbody>{_member_rows(detail.members)}</tbody></table>
<h2>Holds</h2><table class="holds"><thead><tr><th>NODE</th><th>MEMBER</th><th>TASK</th>
<th>KIND</th><th>GPUS</th><th>RUNNING</th></tr></thead><tbody>{holds}</tbody></table>
<h2>Pend-reason history</h2><table class="pend"><thead><tr><th>POSITION</th><th>AT</th>
<th>REASON</th></tr></thead><tbody>{pend}</tbody></table>
<h2>Events</h2><table class="events"><thead><tr><th>POSITION</th><th>AT</th><th>LANE</th>
<th>EVENT</th><th>DETAIL</th><th>ACTOR</th></tr></thead><tbody>{events}</tbody></table>"""


class _Row:
    __slots__ = ("actor", "at_ns", "detail", "event", "member", "position")

    def __init__(
        self, position: int, at_ns: int, member: str | None, event: str, detail: str, actor: str
    ) -> None:
        self.position, self.at_ns, self.member = position, at_ns, member
        self.event, self.detail, self.actor = event, detail, actor


def timeline_events(timeline: Timeline) -> list[_Row]:
    """The timeline's events with the actor apart from the detail, newest first."""
    rows = []
    for e in timeline.events:
        actor = e.actor or ""
        detail = e.detail.removesuffix(f" (by {actor})") if actor else e.detail
        member = None if e.aggregate == "group" else e.aggregate
        rows.append(_Row(e.position, e.at_ns, member, e.event, detail, actor))
    return rows[::-1]


def group_page(
    detail: GroupDetail,
    timeline: Timeline,
    *,
    user: User,
    csrf: str,
    position: int,
    now_ns: int,
    peers: tuple[str, ...] = (),
    expected: ExpectedStart | None = None,
) -> str:
    name = escape(detail.group.name)
    live = group_body(detail, timeline, user, now_ns, expected)
    body = f'<h1>Group {name}</h1><div id="group-body">{live}</div>'
    data = (
        f'data-page="group" data-group="{name}" data-position="{position}" '
        f'data-events="{EVENT_TYPES}"{_peers(peers)}'
    )
    return document(f"group {detail.group.name}", body, user=user, csrf=csrf, data=data)
