"""Hostile input gets a clear error, never a traceback or another group: spec files that
cannot be read, names the CLI puts into URLs (quoted), and names the server refuses."""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest
from litestar.testing import TestClient
from typer.testing import CliRunner

from costart.cli.backend import RemoteBackend, _segment
from costart.cli.exits import EXIT_USAGE
from costart.cli.main import DEMO_SPEC, app
from costart.projections import Views
from costart.rest.auth import Tokens, User
from costart.rest.http_app import create_app
from costart.rest.watch import WatchHub
from costart.service.controller_service import Service
from tests.builders import new_controller

runner = CliRunner()
HOSTILE = ["x/../victim-g", "g#x", "g?x=1", "..", ".", "probe-nl\n", "a b", "%2e%2e", "g/"]


@pytest.mark.parametrize("command", ["validate", "submit"])
@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_a_spec_file_that_cannot_be_read_is_a_usage_error_naming_it(tmp_path, command, kind):
    path = tmp_path / "spec.toml"
    if kind == "directory":
        path.mkdir()
    result = runner.invoke(app, ["--store", str(tmp_path / "store"), command, str(path)])
    assert result.exit_code == EXIT_USAGE, result.output
    assert isinstance(result.exception, SystemExit)  # a message, not a traceback
    reason = "no such file" if kind == "missing" else "is a directory, not a file"
    assert f"error: cannot read spec file {path}: {reason}" in result.stderr


def test_validate_still_reads_a_good_file():
    result = runner.invoke(app, ["validate", str(DEMO_SPEC)])
    assert result.exit_code == 0 and "valid" in result.stdout


class _Recorder(BaseHTTPRequestHandler):
    """Answers every request 404 with a JSON error and records its raw path."""

    paths: list[str] = []

    def _answer(self) -> None:
        self.paths.append(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = b'{"error": "no such group"}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer  # noqa: N815  (the names http.server calls)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture(scope="module")
def recorder() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("name", HOSTILE)
def test_every_name_the_cli_puts_in_a_url_reaches_the_server_as_one_segment(recorder, name):
    # Reads (the standard library's client) and writes (httpx) alike.
    _Recorder.paths.clear()
    backend = RemoteBackend(recorder, None)
    try:
        for call in (
            backend.describe,
            backend.events,
            backend.why,
            backend.cancel,
            backend.members,
        ):
            with pytest.raises(Exception, match="no such group"):
                call(name)
    finally:
        backend.close()
    paths = list(_Recorder.paths)
    assert len(paths) == 5
    for path, suffix in zip(paths, ["", "/events", "/why", "/cancel", "/members"], strict=True):
        # One segment for the name, nothing of it read as a path, query or fragment.
        assert "?" not in path and "#" not in path, path
        assert path.startswith("/v1/groups/"), path
        segment, _, rest = path.removeprefix("/v1/groups/").partition("/")
        assert (rest and "/" + rest) == suffix, path
        assert unquote(segment) == name, (path, name)


@pytest.fixture
def api(tmp_path: Path):
    controller = new_controller()
    controller.submit_document(DEMO_SPEC.read_bytes(), "toml")
    root = User(name="root", role="admin")
    with Views(tmp_path / "views") as views:
        hub = WatchHub.following(controller.read_events, controller.world)
        service = Service(controller, views, watch=hub)
        with TestClient(app=create_app(service, Tokens({"t0k3n": root}), hub)) as client:
            client.headers["Authorization"] = "Bearer t0k3n"
            yield client


@pytest.mark.parametrize("name", [n for n in HOSTILE if n not in (".", "..", "g/")])
@pytest.mark.parametrize(
    ("method", "suffix"),
    [("GET", ""), ("GET", "/members"), ("GET", "/events"), ("GET", "/why"), ("POST", "/cancel")],
)
def test_the_server_refuses_a_name_that_is_not_a_name_with_400(api, name, method, suffix):
    response = api.request(method, f"/v1/groups/{_segment(name)}{suffix}")
    assert response.status_code == 400, response.text
    assert "bad group name" in json.loads(response.text)["error"]


def test_a_hostile_cancel_cancels_nothing(api):
    api.post(f"/v1/groups/{_segment('x/../grpo-run-42')}/cancel")
    assert api.get("/v1/groups/grpo-run-42").json()["group"]["state"] != "CANCELLED"


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--interval", "0"),
        ("--interval", "-1"),
        ("--lease-duration", "0"),
        ("--claim-delay", "-1"),
        ("--estimate-depth", "0"),
    ],
)
def test_serve_refuses_a_zero_or_negative_duration_before_opening_anything(tmp_path, option, value):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[tokens.a-token-of-sixteen-chars]\nuser = "root"\nrole = "admin"\n')
    store = tmp_path / "store"
    args = ["--store", str(store), "serve", "--tokens", str(tokens), option, value]
    result = runner.invoke(app, args)
    assert result.exit_code == EXIT_USAGE, result.output
    assert f"error: {option} must" in result.stderr
    assert not store.exists()  # nothing opened, nothing written


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    "command",
    [["get", "groups"], ["replay", "verify"], ["snapshot"], ["serve", "--port", "0"]],
    ids=lambda c: " ".join(c[:2]),
)
def test_a_database_store_that_does_not_answer_is_named_not_a_traceback(
    tmp_path, monkeypatch, command
):
    """No server listens: one line naming the store (no password), exit 1, no traceback."""
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[tokens.{"r" * 32}]\nuser = "root"\nrole = "admin"\n')
    monkeypatch.setenv("POSTGRES_CONNECT_TIMEOUT", "1")
    port = _closed_port()
    store = f"postgresql://u:secret@127.0.0.1:{port}/db"
    extra = ["--tokens", str(tokens)] if command[0] == "serve" else []
    result = runner.invoke(app, ["--store", store, *command, *extra])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # a message, not a traceback
    assert result.stderr.splitlines() == [
        f"error: cannot reach the store postgresql://u:***@127.0.0.1:{port}/db: "
        "couldn't get a connection after 1.00 sec"
    ]


@pytest.mark.parametrize("opener", ["lead", "replay log", "recorder source", "log session"])
def test_a_store_open_on_a_database_that_does_not_answer_closes_what_it_opened(monkeypatch, opener):
    """The factory's connection pool is closed by the open that failed (a lead, the
    read-only log `replay verify` opens, the source a view rebuild reads, a Controller's
    log session), on its own thread, not left to the collector (whose close may run on
    a pool worker, which cannot join itself)."""
    from eventsourcing.persistence import OperationalError

    from costart.eventlog.errors import StoreUnreachableError
    from costart.eventlog.event_reading import RecorderSource
    from costart.log_session import LogSession
    from costart.pgstore.backend import BACKEND
    from costart.pgstore.factory import Factory

    # The collector's close counts for nothing here: only a close by the failed open.
    monkeypatch.setattr(LogSession, "__del__", lambda self: None)

    gc.collect()  # (a factory an earlier test left is not counted as this one's)
    closed: list[Factory] = []
    close = Factory.close

    def recording_close(self: Factory) -> None:
        closed.append(self)
        close(self)

    monkeypatch.setattr(Factory, "close", recording_close)
    monkeypatch.setenv("POSTGRES_CONNECT_TIMEOUT", "1")
    location = f"postgresql://u:secret@127.0.0.1:{_closed_port()}/db"
    env = BACKEND.location_env(location, {"POSTGRES_CONNECT_TIMEOUT": "1"})
    if opener == "lead":
        with pytest.raises(StoreUnreachableError):
            BACKEND.lead(env, 10**9)
    elif opener == "replay log":
        with pytest.raises(StoreUnreachableError):
            BACKEND.open_replay_log(location, env)
    elif opener == "recorder source":
        with pytest.raises(OperationalError):
            RecorderSource.from_env(env)
    else:
        with pytest.raises(OperationalError):
            LogSession(env)
    assert len(closed) == 1
