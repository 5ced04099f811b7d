"""Every malformed input is refused cleanly, at every way in.

Hostile bodies of every category in `tests.malformed_inputs` (random bytes, 1,000+
levels of nesting, numbers no field holds, a wrong Content-Type, truncated, not UTF-8,
empty, the wrong top-level type, NUL bytes), each built from a valid document of its
receiver, go to:

- `parse_spec`: a `SpecError` with a reason, nothing else;
- ``costart validate FILE``: exit 3 naming the problem, no traceback;
- a real ``costart serve`` on 127.0.0.1 (one for the module): ``POST /v1/groups`` and
  every route that takes a body (task and claim reports, scale, node status) or must
  refuse one (the heartbeat): a 4xx whose error body names the problem, never a 5xx,
  and the log position unchanged.

Each category is its own run (so none is left to chance), of a fifth of the profile's
examples (fixed seeds: tests/conftest.py). The counts of what each way in took and
answered are printed at the end of the session, and every run asserts its category was
taken at every way in.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from costart.cli.exits import EXIT_INVALID
from costart.cli.main import app
from costart.domain.errors import SpecError
from costart.domain.spec import parse_spec
from tests.malformed_inputs import (
    CATEGORIES,
    OTHER_TYPES,
    TOML_TYPES,
    Document,
    Hostile,
    flat_document,
    hostile,
)
from tests.rest.serving import DEADLINE_S, POLL_S
from tests.rest.test_server import (
    ROOT_TOKEN,
    server,  # noqa: F401  (the module-scoped fixture: a real server for this module)
    wait_for_state,
)

SPEC = Document(
    {"name": "fuzz-new", "owner": "root", "members": [{"name": "t", "kind": "job", "shape": {"gpu": 1}}]},
    'name = "fuzz-new"\nowner = "root"\n[[members]]\nname = "t"\nkind = "job"\nshape = { gpu = 1 }',
)  # fmt: skip
TARGET = "fuzz-target"
NODE = f"{TARGET}-trainer-n0"  # the fake placement's name for the trainer's first task
# (method, path, the valid document its hostile bodies are built from)
ROUTES = [
    ("POST", "/v1/groups", SPEC),
    ("POST", f"/v1/groups/{TARGET}/members/trainer/tasks/0",
     flat_document({"attempt": 1, "event": "started"})),
    ("POST", f"/v1/groups/{TARGET}/members/trainer/claims/gpus",
     flat_document({"attempt": 1, "status": "READY"})),
    ("POST", f"/v1/groups/{TARGET}/members/rollout/scale", flat_document({"replicas": 3})),
    ("PUT", f"/v1/nodes/{NODE}/status", flat_document({"status": "drained"})),
    ("POST", f"/v1/nodes/{NODE}/heartbeat", flat_document({"attempt": 1, "status": "READY"})),
    ("POST", f"/v1/nodes/{NODE}/log-reads", Document(
        {"pieces": [{"id": 1, "offset": 0, "size": 0, "running": True, "data": ""}]},
        'pieces = [{ id = 1, offset = 0, size = 0, running = true, data = "" }]',
    )),
]  # fmt: skip
WAYS_IN = ["parse_spec", "costart validate", *(f"{method} {path}" for method, path, _ in ROUTES)]
PER_CATEGORY = max(10, settings().max_examples // 5)  # ci: 20 per category and way in
MIN_TAKEN = 2  # per category and way in (the heartbeat skips an empty body: see below)
TALLY: Counter[str] = Counter()  # "WAY IN|category", "WAY IN|status N", "WAY IN|reason: ..."
runner = CliRunner()


def _tally(way_in: str, what: str) -> None:
    TALLY[f"{way_in}|{what}"] += 1
    event(f"{way_in}: {what}")


def _tally_reason(way_in: str, reason: str) -> None:
    """Count the refusals the parsers' RecursionError became: in this process only the
    deeper draws reach it (see `tests.malformed_inputs.MIN_DEPTH`)."""
    if "nested too deeply" in reason:
        _tally(way_in, "reason: nested too deeply")


def report() -> list[str]:
    """What each way in took and answered over the session (tests/conftest.py prints it)."""
    if not TALLY:
        return []
    lines = ["malformed input: examples per way in, by category (and answer)"]
    for way_in in WAYS_IN:
        counts = sorted(
            (k.split("|", 1)[1], n) for k, n in TALLY.items() if k.startswith(f"{way_in}|")
        )
        if counts:
            lines.append(f"  {way_in}: " + ", ".join(f"{what} {n}" for what, n in counts))
    return lines


def _assert_taken(category: str, ways_in: list[str], before: Counter[str]) -> None:
    short = {
        way_in: TALLY[f"{way_in}|{category}"] - before[f"{way_in}|{category}"] for way_in in ways_in
    }
    short = {way_in: n for way_in, n in short.items() if n < MIN_TAKEN}
    assert not short, f"{category} taken fewer than {MIN_TAKEN} times at: {short}"


@pytest.mark.parametrize("category", list(CATEGORIES))
def test_parse_spec_refuses_every_malformed_document_with_a_spec_error(category):
    before = TALLY.copy()

    @settings(max_examples=PER_CATEGORY)
    @given(hostile(SPEC, category))
    def refused(bad: Hostile) -> None:
        _tally("parse_spec", bad.category)
        with pytest.raises(SpecError) as error:
            parse_spec(bad.body, bad.read_as)
        assert error.value.reason
        _tally_reason("parse_spec", error.value.reason)

    refused()
    _assert_taken(category, ["parse_spec"], before)


@pytest.mark.parametrize("category", list(CATEGORIES))
def test_validate_exits_3_naming_the_problem_without_a_traceback(tmp_path_factory, category):
    folder = tmp_path_factory.mktemp("validate")
    before = TALLY.copy()

    @settings(max_examples=PER_CATEGORY)
    @given(hostile(SPEC, category))
    def refused(bad: Hostile) -> None:
        _tally("costart validate", bad.category)
        path = folder / f"spec.{bad.read_as}"  # the suffix picks the format
        path.write_bytes(bad.body)
        result = runner.invoke(app, ["validate", str(path)])
        assert result.exit_code == EXIT_INVALID, (result.exit_code, result.output)
        assert isinstance(result.exception, SystemExit)  # a message, not a crash
        assert "Traceback" not in result.output
        said = f"invalid spec {path}: "
        assert result.stderr.startswith(said) and result.stderr.strip() != said.strip()
        _tally_reason("costart validate", result.stderr)

    refused()
    _assert_taken(category, ["costart validate"], before)


def _position(c: httpx.Client) -> int:
    return int(c.get("/healthz").json()["position"])


def _settled_position(c: httpx.Client) -> int:
    """The log position once the views have stopped moving: the same over three looks,
    each after five of the server's scheduling intervals (the views follow the log once
    per interval)."""
    deadline = time.monotonic() + DEADLINE_S
    last, quiet = _position(c), 0
    while quiet < 3:
        assert time.monotonic() < deadline, "the log never stopped moving"
        time.sleep(POLL_S * 5)
        now = _position(c)
        quiet = quiet + 1 if now == last else 0
        last = now
    return last


@pytest.fixture(scope="module")
def target(server) -> Iterator[tuple[httpx.Client, int]]:  # noqa: F811
    """An admin's client of the module's server, with the group the report routes name
    RUNNING (a body a route took would be acted on, a 2xx, not hidden by a 404), and the
    log position after that, which no refused request may move."""
    url, _, _ = server
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ROOT_TOKEN}"}) as c:
        rollout = {"name": "rollout", "kind": "replica-set", "replicas": 2, "shape": {"gpu": 1}}
        trainer = {
            "name": "trainer", "kind": "job", "tasks": 2, "shape": {"gpu": 4}, "claims": ["gpus"]
        }  # fmt: skip
        spec = {"name": TARGET, "owner": "root", "members": [trainer, rollout]}
        assert c.post("/v1/groups", json=spec).status_code == 201
        wait_for_state(c, TARGET, "RUNNING")
        yield c, _settled_position(c)


def _assert_names_the_problem(path: str, bad: Hostile, status: int, problem: str) -> None:
    """The answers a body must get where one answer is right whatever else it holds."""
    if path.endswith("/heartbeat"):
        assert (status, problem) == (400, "this call takes no body"), (bad, problem)
    elif bad.body and (
        bad.content_type in OTHER_TYPES or (bad.content_type in TOML_TYPES and path != "/v1/groups")
    ):
        assert status == 415 and "Content-Type" in problem, (bad, status, problem)
    elif bad.category == "deep-nesting":
        # The server's recursion limit is Python's default: every depth drawn exceeds it.
        assert "nested too deeply" in problem, (bad, status, problem)


@pytest.mark.parametrize("category", list(CATEGORIES))
def test_every_body_route_of_a_real_server_refuses_malformed_bodies_writing_nothing(
    target, category
):
    client, position = target
    before = TALLY.copy()
    ways_in = WAYS_IN[2:]

    @settings(max_examples=PER_CATEGORY)
    @given(st.data())
    def refused(data: st.DataObject) -> None:
        for (method, path, document), way_in in zip(ROUTES, ways_in, strict=True):
            bad = data.draw(hostile(document, category), label=way_in)
            if path.endswith("/heartbeat") and bad.body == b"":
                continue  # a heartbeat without a body is a heartbeat, taken
            _tally(way_in, bad.category)
            answer = client.request(method, path, content=bad.body, headers=bad.headers())
            _tally(way_in, f"status {answer.status_code}")
            assert 400 <= answer.status_code < 500, (way_in, bad, answer.text)
            problem = answer.json()["error"]
            assert problem and problem != "internal error", (way_in, bad, problem)
            _assert_names_the_problem(path, bad, answer.status_code, problem)
        assert _position(client) == position, "a refused request wrote to the log"

    refused()
    # A write the views had not yet read when an example looked would show by now.
    assert _settled_position(client) == position, "a refused request wrote to the log"
    _assert_taken(category, ways_in, before)


def test_the_documents_the_bodies_are_built_from_are_valid(target):
    """So each refusal above is the hostile part's doing: the spec validates in both
    formats, and the group the report routes name is RUNNING."""
    client, _ = target
    assert parse_spec(SPEC.toml, "toml") == parse_spec(SPEC.text("json"), "json")
    assert client.get(f"/v1/groups/{TARGET}").json()["group"]["state"] == "RUNNING"
