"""Where log lines go: to the ``sys.stderr`` of the moment they are written, for
structlog's lines as for the standard library's, so a stream replaced and closed (a
test's captured output, a redirected service) never turns logging into an error."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from costart.logging_setup import configure_logging

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def reconfigured() -> Iterator[None]:
    yield
    configure_logging(level=logging.WARNING)  # as tests/conftest.py leaves it


@pytest.mark.usefixtures("reconfigured")
def test_lines_follow_stderr_after_the_stream_they_started_on_is_closed(monkeypatch):
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging(level=logging.INFO)
    structured, standard = structlog.get_logger("t"), logging.getLogger("t")
    structured.info("one")
    standard.info("one too")
    assert ("one" in first.getvalue(), "one too" in first.getvalue()) == (True, True)
    first.close()
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    structured.info("two")  # the cached bound logger too: no "I/O operation on closed file"
    standard.warning("two too")
    assert ("two" in second.getvalue(), "two too" in second.getvalue()) == (True, True)


LIBRARY_LINES = """
import logging, sys
import structlog
from costart.logging_setup import library_logger
log = library_logger("costart.controller")
log.info("not shown")                       # the host set no level: warnings and up only
log.warning("group refused", group="g1")    # Python's last resort: stderr
handler = logging.StreamHandler(sys.stderr)
handler.setFormatter(logging.Formatter("host %(name)s %(levelname)s %(message)s"))
logging.getLogger("costart").addHandler(handler)
logging.getLogger("costart").setLevel(logging.INFO)
log.bind(member="g1/a").info("group submitted", members=2)
print("host output")
structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
log.info("after configure")                 # the host configured structlog: its choice
"""


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter that imports this checkout; it must exit 0."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_an_embedded_library_logs_through_the_hosts_choice_never_on_stdout():
    """Unconfigured structlog would print to stdout; the library's loggers go to the
    standard library's ``costart.*`` loggers instead, until the host configures
    structlog."""
    done = run_python(LIBRARY_LINES)
    assert done.stdout == "host output\n"
    lines = done.stderr.splitlines()
    assert lines[0] == "event='group refused' group='g1'"
    assert lines[1] == (
        "host costart.controller INFO event='group submitted' member='g1/a' members=2"
    )
    assert "after configure" in lines[2] and len(lines) == 3
    assert "not shown" not in done.stderr


@pytest.mark.usefixtures("reconfigured")
def test_json_lines_carry_the_formatted_traceback_for_structlog_and_the_standard_library(
    monkeypatch,
):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    configure_logging(json=True, level=logging.INFO)
    try:
        raise KeyError("the-missing-key")
    except KeyError:
        structlog.get_logger("t").exception("request failed", path="/v1/groups")
        logging.getLogger("uvicorn.error").exception("standard failure")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["request failed", "standard failure"]
    for line in lines:
        assert "exc_info" not in line, line
        assert line["exception"].startswith("Traceback (most recent call last):")
        assert "KeyError: 'the-missing-key'" in line["exception"]


READ_LINES = """
import sys
from costart.logging_setup import configure_standard_library_only, library_logger
configure_standard_library_only(30)
log = library_logger("costart.views")
print("structlog loaded:", "structlog" in sys.modules)
log.info("not shown")
log.warning("views rebuilt", position=7)
"""


def test_a_read_logs_its_warnings_through_the_standard_library_on_stderr():
    """`get`/`describe`/... at warning level: structlog is loaded only when a line is
    written, and the line goes to stderr, never stdout."""
    done = run_python(READ_LINES)
    assert done.stdout == "structlog loaded: False\n"
    assert done.stderr == "WARNING costart.views: event='views rebuilt' position=7\n"
