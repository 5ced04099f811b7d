"""Where log lines go: to the ``sys.stderr`` of the moment they are written, for
structlog's lines as for the standard library's, so a stream replaced and closed (a
test's captured output, a redirected service) never turns logging into an error."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest
import structlog

from costart.logging_setup import configure_logging


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
