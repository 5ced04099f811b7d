"""The dispatch path over REST against a real `costart serve` on LMDB with the real
placement on the demo cluster: idempotent and stale-safe reports, the authorization
matrix of the new roles, bad inputs, node heartbeats, the watch stream."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import httpx
import pytest

from costart.store.replay_log import open_log
from tests.rest.dispatch_support import (
    ADMIN,
    CLAIMS,
    OTHER,
    OWNER,
    SERVE_AGENT,
    TRAIN_AGENT,
    client,
    group_state,
    life_spec,
    member,
    position,
    task_nodes,
    tokens_toml,
    wait_until,
)
from tests.rest.serving import serve_env, serving

HEARTBEAT_TIMEOUT_S = 2.0
WATCH_QUIET_S = 3.0
_names = (f"disp-{i}" for i in itertools.count())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dispatch")
    options = ("--interval", "0.1", "--heartbeat-timeout", str(HEARTBEAT_TIMEOUT_S))
    with serving(tmp, tokens_toml(), *options, env=serve_env(tmp, lmdb=True)) as running:
        _STORES[running[0]] = tmp / "store"
        yield running[0]


_STORES: dict[str, Path] = {}


def assert_no_caller_wrote(url: str, before: int) -> None:
    """No event a request sent is in the log after ``before``. The server's own sessions
    write meanwhile (the placement step; timers, e.g. a node whose agent fell silent
    going down): their events name no caller, so they are told apart, not raced."""
    with open_log(_STORES[url]) as log:
        sent = [
            event
            for _, event in log.source.read_events(before)
            if event.actor is not None and event.actor.kind != "timer"
        ]
    assert sent == [], sent


def placed_group(url: str) -> str:
    name = next(_names)
    owner = client(url, OWNER)
    assert owner.post("/v1/groups", json=life_spec(name)).status_code == 201
    wait_until(lambda: group_state(owner, name), lambda s: s == "PLACED", f"{name} placed")
    return name


def running_group(url: str) -> str:
    name = placed_group(url)
    claims = client(url, CLAIMS)
    for m in ("trainer", "rollout"):
        answer = claims.post(
            f"/v1/groups/{name}/members/{m}/claims/gpus", json={"attempt": 1, "status": "READY"}
        )
        assert answer.status_code == 200, answer.text
    owner = client(url, OWNER)
    wait_until(lambda: group_state(owner, name), lambda s: s == "RUNNING", f"{name} running")
    return name


def succeeded_group(url: str) -> str:
    """A group whose trainer succeeded (so the group did, its services stopped)."""
    name = running_group(url)
    train, serve = client(url, TRAIN_AGENT), client(url, SERVE_AGENT)
    started, succeeded = {"attempt": 1, "event": "started"}, {"attempt": 1, "event": "succeeded"}
    assert serve.post(f"/v1/groups/{name}/members/rollout/tasks/0", json=started).is_success
    for event in (started, succeeded):
        for task in (0, 1):
            answer = train.post(f"/v1/groups/{name}/members/trainer/tasks/{task}", json=event)
            assert answer.status_code == 200, answer.text
    owner = client(url, OWNER)
    wait_until(lambda: group_state(owner, name), lambda s: s == "SUCCEEDED", f"{name} succeeded")
    return name


def written_about(url: str, path: str, after: int) -> list[str]:
    """The events after position ``after`` about the member a report path names (the
    session loop may write group-level events, such as a pend reason, meanwhile)."""
    _, _, _, group, _, member, *_ = path.split("/")
    events = client(url, ADMIN).get(f"/v1/groups/{group}/events").json()
    return [
        e["event"]
        for e in events
        if e["position"] > after and e["member"] == member and e["event"] in REPORTED
    ]


# What a report writes; the session loop's own events (placements, pend reasons) may
# appear meanwhile and are not the report's doing.
REPORTED = {
    "ClaimReady",
    "ClaimFailed",
    "MemberStarted",
    "TaskStarted",
    "TaskSucceeded",
    "MemberSucceeded",
    "MemberFailed",
    "MemberRestarted",
}


def twice(url: str, c: httpx.Client, path: str, body: dict) -> tuple[dict, dict]:
    """Send a report twice; the second writes nothing and says it was a repeat."""
    first = c.post(path, json=body)
    assert first.status_code == 200, first.text
    assert first.json()["applied"] is True, first.text
    before = position(url)
    second = c.post(path, json=body)
    assert second.status_code == 200, second.text
    assert second.json()["applied"] is False and "already" in second.json()["detail"], (
        first.text,
        second.text,
    )
    assert written_about(url, path, before) == []
    return first.json(), second.json()


def test_every_report_type_sent_twice_writes_once(server):
    name = placed_group(server)
    claims, train, serve = (
        client(server, CLAIMS),
        client(server, TRAIN_AGENT),
        client(server, SERVE_AGENT),
    )
    twice(
        server,
        claims,
        f"/v1/groups/{name}/members/trainer/claims/gpus",
        {"attempt": 1, "status": "READY"},
    )
    twice(
        server,
        serve,
        f"/v1/groups/{name}/members/rollout/claims/gpus",
        {"attempt": 1, "status": "READY"},
    )
    owner = client(server, OWNER)
    wait_until(lambda: group_state(owner, name), lambda s: s == "RUNNING", "running")
    started = {"attempt": 1, "event": "started"}
    for task in (0, 1):  # a job starts task by task
        twice(server, train, f"/v1/groups/{name}/members/trainer/tasks/{task}", started)
    twice(server, serve, f"/v1/groups/{name}/members/rollout/tasks/0", started)
    succeeded = {"attempt": 1, "event": "succeeded"}
    twice(server, train, f"/v1/groups/{name}/members/trainer/tasks/0", succeeded)
    # The job succeeds with its last task.
    path = f"/v1/groups/{name}/members/trainer/tasks/1"
    _, again = twice(server, client(server, ADMIN), path, succeeded)
    assert again["member"]["state"] == "SUCCEEDED"
    # The trainer's tasks are released: an agent can no longer show the task is its own,
    # and the task, not placed now, is a conflict (not a missing resource).
    before = position(server)
    late = train.post(path, json=succeeded)
    assert late.status_code == 409 and "is not placed" in late.json()["error"], late.text
    assert_no_caller_wrote(server, before)


def test_a_task_exit_sent_twice_writes_once(server):
    name = running_group(server)
    serve = client(server, SERVE_AGENT)
    started = {"attempt": 1, "event": "started"}
    twice(server, serve, f"/v1/groups/{name}/members/rollout/tasks/0", started)
    twice(server, serve, f"/v1/groups/{name}/members/rollout/tasks/1", started)
    exited = {"attempt": 1, "event": "exited", "exit_code": 137, "reason": "oom"}
    path = f"/v1/groups/{name}/members/rollout/tasks/1"
    first = serve.post(path, json=exited)
    assert first.status_code == 200 and first.json()["applied"] is True, first.text
    before = position(server)
    # The OOM restarted the replica under a new attempt: the same report again is about
    # an attempt that is over now, so it is refused as stale and writes nothing.
    second = serve.post(path, json=exited)
    # (Or, once the agent cannot show the task is on its node any more, not found.)
    assert second.status_code in (404, 409), second.text
    assert written_about(server, path, before) == []


def test_stale_unknown_and_terminal_reports_are_refused_and_write_nothing(server):
    name = placed_group(server)
    claims = client(server, CLAIMS)
    before = position(server)
    stale = claims.post(
        f"/v1/groups/{name}/members/trainer/claims/gpus", json={"attempt": 2, "status": "READY"}
    )
    assert stale.status_code == 409 and "stale" in stale.json()["error"]
    unknown_member = claims.post(
        f"/v1/groups/{name}/members/nobody/claims/gpus", json={"attempt": 1, "status": "READY"}
    )
    assert unknown_member.status_code == 404 and "nobody" in unknown_member.json()["error"]
    unknown_claim = claims.post(
        f"/v1/groups/{name}/members/trainer/claims/disk", json={"attempt": 1, "status": "READY"}
    )
    assert unknown_claim.status_code == 404 and "disk" in unknown_claim.json()["error"]
    admin = client(server, ADMIN)
    unknown_task = admin.post(
        f"/v1/groups/{name}/members/trainer/tasks/7", json={"attempt": 1, "event": "started"}
    )
    assert unknown_task.status_code == 404 and "task 7" in unknown_task.json()["error"]
    assert written_about(server, f"/v1/groups/{name}/members/trainer/x", before) == []
    cancelled = client(server, OWNER).post(f"/v1/groups/{name}/cancel")
    assert cancelled.json()["state"] == "CANCELLED"
    before = position(server)
    late_path = f"/v1/groups/{name}/members/trainer/claims/gpus"
    late = claims.post(late_path, json={"attempt": 1, "status": "READY"})
    assert late.status_code == 409 and "CANCELLED" in late.json()["error"]
    assert written_about(server, late_path, before) == []


CALLERS = {
    "owner": OWNER,
    "other-owner": OTHER,
    "admin": ADMIN,
    "claims": CLAIMS,
    "train-agent": TRAIN_AGENT,
    "serve-agent": SERVE_AGENT,
    "anonymous": None,
}
# Each probe is refused after authorization (a stale attempt, a count out of range, a
# terminal group) or changes nothing (a cancel of a cancelled group), so an allowed
# caller gets that answer and a refused one 403 or 401: the matrix writes nothing
# either way.
MATRIX = {
    "claim-of-trainer": dict(zip(CALLERS, (403, 403, 409, 409, 409, 403, 401), strict=True)),
    "task-of-trainer": dict(zip(CALLERS, (403, 403, 409, 403, 409, 403, 401), strict=True)),
    "scale-rollout": dict(zip(CALLERS, (422, 403, 422, 403, 403, 403, 401), strict=True)),
    "cancel-succeeded-group": dict(zip(CALLERS, (409, 403, 409, 403, 403, 403, 401), strict=True)),
    "delete-succeeded-group": dict(zip(CALLERS, (409, 403, 409, 403, 403, 403, 401), strict=True)),
    # Cancelled already: answered as it is (200), nothing written.
    "cancel-cancelled-group": dict(zip(CALLERS, (200, 403, 200, 403, 403, 403, 401), strict=True)),
    "delete-cancelled-group": dict(zip(CALLERS, (200, 403, 200, 403, 403, 403, 401), strict=True)),
    "tasks-of-h100-node": dict(zip(CALLERS, (403, 403, 200, 403, 200, 403, 401), strict=True)),
    "tasks-of-l40s-node": dict(zip(CALLERS, (403, 403, 200, 403, 403, 200, 401), strict=True)),
    "watch-h100-node": dict(zip(CALLERS, (200, 200, 200, 200, 200, 403, 401), strict=True)),
}


@pytest.fixture(scope="module")
def matrix_groups(server):
    live = placed_group(server)
    ended = {"cancelled": placed_group(server), "succeeded": succeeded_group(server)}
    admin = client(server, ADMIN)
    assert admin.delete(f"/v1/groups/{ended['cancelled']}").status_code == 200
    nodes = {m: task_nodes(admin, live, m)[0] for m in ("trainer", "rollout")}
    return live, ended, nodes


def _probe(
    c: httpx.Client, action: str, live: str, ended: dict[str, str], nodes: dict[str, str]
) -> int:
    trainer = f"/v1/groups/{live}/members/trainer"
    verb, _, rest = action.partition("-")
    if rest in ("succeeded-group", "cancelled-group"):
        group = ended[rest.removesuffix("-group")]
        if verb == "delete":
            return c.delete(f"/v1/groups/{group}").status_code
        return c.post(f"/v1/groups/{group}/cancel").status_code
    if action == "claim-of-trainer":
        return c.post(f"{trainer}/claims/gpus", json={"attempt": 99, "status": "READY"}).status_code
    if action == "task-of-trainer":
        return c.post(f"{trainer}/tasks/0", json={"attempt": 99, "event": "started"}).status_code
    if action == "scale-rollout":
        return c.post(f"/v1/groups/{live}/members/rollout/scale", json={"replicas": 0}).status_code
    if action == "tasks-of-h100-node":
        return c.get(f"/v1/nodes/{nodes['trainer']}/tasks").status_code
    if action == "tasks-of-l40s-node":
        return c.get(f"/v1/nodes/{nodes['rollout']}/tasks").status_code
    with c.stream("GET", "/v1/watch", params={"node": "h100-0000"}) as response:
        return response.status_code


@pytest.mark.parametrize(("action", "who"), [(a, w) for a in MATRIX for w in CALLERS])
def test_authorization_matrix_of_the_dispatch_path(server, matrix_groups, action, who):
    live, ended, nodes = matrix_groups
    before = position(server)
    status = _probe(client(server, CALLERS[who]), action, live, ended, nodes)
    assert status == MATRIX[action][who]
    assert_no_caller_wrote(server, before)


def test_delete_cancels_a_group_which_stays_readable_as_history(server):
    name = running_group(server)
    owner = client(server, OWNER)
    deleted = owner.delete(f"/v1/groups/{name}")
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["state"] == "CANCELLED"
    # Not removed: the group answers as history, CANCELLED, holding nothing.
    detail = owner.get(f"/v1/groups/{name}").json()
    assert detail["group"]["state"] == "CANCELLED"
    assert [h for h in client(server, ADMIN).get("/v1/holds").json() if h["group"] == name] == []
    events = [e["event"] for e in owner.get(f"/v1/groups/{name}/events").json()]
    assert events.count("GroupCancelled") == 1 and events[-1] == "GroupCancelled"
    # Retried (its answer lost): the same answer, nothing written.
    before = position(server)
    again = owner.delete(f"/v1/groups/{name}")
    assert again.status_code == 200 and again.json()["state"] == "CANCELLED", again.text
    assert_no_caller_wrote(server, before)
    # The name is free for a new group.
    assert owner.post("/v1/groups", json=life_spec(name)).status_code == 201
    wait_until(lambda: group_state(owner, name), lambda s: s == "PLACED", f"{name} placed again")


@pytest.mark.parametrize(
    ("name", "status", "text"),
    [("nobody-here", 404, "nobody-here"), ("Bad_Name", 400, "bad group name")],
)
def test_delete_of_an_unknown_or_bad_name_is_refused_naming_it(server, name, status, text):
    before = position(server)
    answer = client(server, ADMIN).delete(f"/v1/groups/{name}")
    assert answer.status_code == status, answer.text
    assert text in answer.json()["error"]
    assert_no_caller_wrote(server, before)


@pytest.mark.parametrize(
    ("path", "body", "status", "field_or_text"),
    [
        ("rollout/scale", {"replicas": -1}, 422, "replicas"),
        ("rollout/scale", {"replicas": 100_000}, 422, "replicas"),
        ("trainer/scale", {"replicas": 3}, 422, "replicas"),
        ("rollout/scale", {"replicas": "many"}, 400, "replicas"),
        ("rollout/scale", {"replicas": 2, "colour": "red"}, 400, "colour"),
        ("trainer/tasks/0", {"attempt": 1, "event": "exited", "reason": "bored"}, 400, "reason"),
        ("trainer/tasks/0", {"attempt": 1, "event": "exited"}, 422, "reason"),
        ("trainer/tasks/0", {"attempt": 1, "event": "started", "exit_code": 1}, 422, "reason"),
        ("trainer/claims/gpus", {"attempt": 1, "status": "FAILED"}, 422, "reason"),
        ("trainer/claims/gpus", {"attempt": 1, "status": "LOST"}, 400, "status"),
    ],
)
def test_bad_inputs_get_a_4xx_naming_the_field_and_write_nothing(
    server, matrix_groups, path, body, status, field_or_text
):
    live, _, _ = matrix_groups
    before = position(server)
    answer = client(server, ADMIN).post(f"/v1/groups/{live}/members/{path}", json=body)
    assert answer.status_code == status, answer.text
    error = answer.json()
    assert field_or_text in (error.get("field") or "") + error["error"]
    assert_no_caller_wrote(server, before)


def test_a_huge_report_body_is_refused_with_413(server, matrix_groups):
    live, _, _ = matrix_groups
    answer = client(server, ADMIN).post(
        f"/v1/groups/{live}/members/trainer/claims/gpus",
        content=b'{"attempt": 1, "status": "FAILED", "reason": "' + b"x" * 400_000 + b'"}',
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 413


def test_a_silent_node_goes_down_after_the_timeout_and_a_heartbeat_brings_it_up(server):
    agent = client(server, TRAIN_AGENT)
    node = "h100-0029"
    assert agent.post(f"/v1/nodes/{node}/heartbeat").json() == {"node": node, "events": 0}
    admin = client(server, ADMIN)
    down = wait_until(
        lambda: _node_events(admin, node),
        lambda events: events and events[-1] == "down",
        f"{node} reported down",
    )
    assert down[-1] == "down"
    # Every read of the stream is a bounded wait on a condition: a filtered stream ends
    # when it has been quiet a while, which a loaded machine can reach early.
    watched = wait_until(
        lambda: _watch(admin, {"after": 0, "node": node}, {}, position(server)),
        lambda events: any(e["type"] == "NodeStatusChanged" for e in events),
        f"{node}'s status change on the watch stream",
    )
    (silent,) = [e["event"] for e in watched if e["type"] == "NodeStatusChanged"]
    # The event says why, and that costart's own timer (not the agent) marked it down.
    assert silent["status"] == "down" and silent["note"].startswith("no heartbeat for "), silent
    assert silent["actor"][0] == "timer", silent
    assert agent.post(f"/v1/nodes/{node}/heartbeat").json()["events"] == 1
    _wait_for_status(admin, node, "up")
    assert agent.put(f"/v1/nodes/{node}/status", json={"status": "drained"}).json()["events"] == 1
    _wait_for_status(admin, node, "drained")


def _wait_for_status(c: httpx.Client, node: str, status: str) -> None:
    wait_until(
        lambda: _node_events(c, node),
        lambda events: bool(events) and events[-1] == status,
        f"{node} reported {status}",
    )


def _node_events(c: httpx.Client, node: str) -> list[str]:
    """The statuses reported for ``node``, read from the watch stream's history."""
    events = _watch(c, {"after": 0, "node": node}, {}, position(str(c.base_url).rstrip("/")))
    return [e["event"]["status"] for e in events if e["type"] == "NodeStatusChanged"]


def _watch(c: httpx.Client, params: dict, headers: dict, until: int) -> list[dict]:
    """Events of the stream up to log position ``until`` (a filtered stream may have
    none there: then until it stays quiet for a while)."""
    events: list[dict] = []
    quiet = httpx.Timeout(10, read=WATCH_QUIET_S)
    try:
        with c.stream(
            "GET", "/v1/watch", params=params, headers=headers, timeout=quiet
        ) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith("data:"):
                    events.append(httpx.Response(200, content=line[5:]).json())
                    if events[-1]["position"] >= until:
                        break
    except httpx.ReadTimeout:
        pass
    return events


def test_the_watch_resumes_after_the_last_event_id_and_filters_by_group_and_node(server):
    name = running_group(server)
    end = position(server)
    owner = client(server, OWNER)
    everything = _watch(owner, {"group": name, "after": 0}, {}, end)
    positions = [e["position"] for e in everything]
    assert positions == sorted(positions) and everything[0]["type"] == "GroupSubmitted"
    assert {e["group"] for e in everything} == {name}
    assert "BarrierReleased" in [e["type"] for e in everything]
    middle = positions[len(positions) // 2]
    resumed = _watch(owner, {"group": name}, {"Last-Event-ID": str(middle)}, end)
    assert [e["position"] for e in resumed] == [p for p in positions if p > middle]
    serve_view = _watch(client(server, SERVE_AGENT), {"group": name, "after": 0}, {}, end)
    kinds = [(e["type"], e["member"]) for e in serve_view]
    assert ("BarrierReleased", None) in kinds and ("MemberPlaced", "rollout") in kinds
    assert ("MemberPlaced", "trainer") not in kinds  # not on the serving agent's nodes


def test_a_watcher_sees_the_barrier_release_live(server):
    name = placed_group(server)
    seen: list[dict] = []
    start = position(server)
    subscribed = threading.Event()

    def watch() -> None:
        agent = client(server, TRAIN_AGENT)
        with agent.stream("GET", "/v1/watch", params={"after": start, "group": name}) as response:
            for line in response.iter_lines():
                subscribed.set()  # the stream's first line (": watching from N") is here
                if line.startswith("data:"):
                    seen.append(httpx.Response(200, content=line[5:]).json())
                    if seen[-1]["type"] == "BarrierReleased":
                        return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert subscribed.wait(timeout=20), "the watch stream never opened"
    claims = client(server, CLAIMS)
    for m in ("trainer", "rollout"):
        claims.post(
            f"/v1/groups/{name}/members/{m}/claims/gpus", json={"attempt": 1, "status": "READY"}
        )
    watcher.join(timeout=20)
    assert seen and seen[-1]["type"] == "BarrierReleased"
    tasks = (
        client(server, TRAIN_AGENT)
        .get(f"/v1/nodes/{task_nodes(client(server, ADMIN), name, 'trainer')[0]}/tasks")
        .json()
    )
    mine = [t for t in tasks if t["group"] == name]
    assert mine and all(t["may_start"] for t in mine)
    assert member(client(server, ADMIN), name, "trainer")["state"] == "READY"


def test_an_agent_reports_its_own_tasks_claims_and_reads_each_tasks_state_and_attempt(server):
    name = next(_names)
    spec = life_spec(name)
    spec["members"][0]["task_claims"] = ["device"]
    owner = client(server, OWNER)
    assert owner.post("/v1/groups", json=spec).status_code == 201
    wait_until(lambda: group_state(owner, name), lambda s: s == "PLACED", f"{name} placed")
    nodes = task_nodes(owner, name, "trainer")
    agent = client(server, TRAIN_AGENT)
    rows = [t for t in agent.get(f"/v1/nodes/{nodes[0]}/tasks").json() if t["group"] == name]
    group_id = owner.get(f"/v1/groups/{name}").json()["group"]["id"]
    assert [(t["group_id"], t["task_state"], t["task_attempt"]) for t in rows] == [
        (group_id, "PLACED", 1)
    ]
    path = f"/v1/groups/{name}/members/trainer/claims/device"
    ready = agent.post(path, json={"attempt": 1, "status": "READY", "task": 0})
    assert ready.status_code == 200 and ready.json()["applied"], ready.text
    assert ready.json()["member"]["tasks"][0]["claims"] == {"device": "READY"}
    again = agent.post(path, json={"attempt": 1, "status": "READY", "task": 0})
    assert again.status_code == 200 and not again.json()["applied"]
    # Another agent may not report this task's claim; a member claim of that name is unknown.
    other = client(server, SERVE_AGENT).post(
        path, json={"attempt": 1, "status": "READY", "task": 1}
    )
    assert other.status_code == 403, other.text
    as_member = agent.post(path, json={"attempt": 1, "status": "READY"})
    assert as_member.status_code == 404 and "no claim 'device'" in as_member.text
    owner.post(f"/v1/groups/{name}/cancel")


def test_a_note_belongs_to_an_exit_report_only_and_is_short_printable_text(server):
    name = running_group(server)
    nodes = task_nodes(client(server, OWNER), name, "trainer")
    agent = client(server, TRAIN_AGENT)
    path = f"/v1/groups/{name}/members/trainer/tasks/0"
    assert nodes[0]
    started = agent.post(path, json={"attempt": 1, "event": "started", "note": "hello"})
    assert started.status_code == 422 and "only an exited task" in started.text
    long = {"attempt": 1, "event": "exited", "reason": "error", "note": "x" * 600}
    assert agent.post(path, json=long).status_code == 422
    client(server, OWNER).post(f"/v1/groups/{name}/cancel")
