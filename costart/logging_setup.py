"""Logging set up once: readable on a terminal, JSON for services (``serve``).

Libraries that log through the standard library (uvicorn, eventsourcing) go through the
same renderer: one stream, one format (no plain-text lines between JSON ones)."""

from __future__ import annotations

import logging
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import structlog

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
LEVELS |= {"error": logging.ERROR}


def parse_level(text: str) -> int:
    """``--log-level`` as given (debug, info, warning, error); ValueError otherwise."""
    level = LEVELS.get(text.lower())
    if level is None:
        raise ValueError(f"bad log level {text!r}: use {', '.join(LEVELS)}")
    return level


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (a test may have replaced it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


class _StderrLogger:
    """structlog's output: each line to whatever ``sys.stderr`` is when it is written,
    as `_StderrHandler` does for the standard library. (structlog's own `PrintLogger`
    keeps the stream it was made with: once a test's captured stream is closed, every
    later line raised "I/O operation on closed file".) One lock keeps lines whole across
    threads."""

    _lock = threading.Lock()

    def msg(self, message: str) -> None:
        with self._lock:
            print(message, file=sys.stderr, flush=True)

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg


def _stderr_logger(*_: object) -> _StderrLogger:
    return _StderrLogger()


def configure_logging(*, json: bool = False, level: int = logging.INFO) -> None:
    """Configure structlog for the process, and route the standard library's loggers
    (uvicorn's among them) through the same renderer at ``level``. Call once from an
    entry point."""
    import structlog  # noqa: PLC0415  (a read that logs nothing never loads it, ADR 0078)

    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if json:
        # An error's traceback as text in the line ("exception"), not "exc_info": true;
        # the console renderer formats it itself.
        shared.append(structlog.processors.format_exc_info)
    handler = _StderrHandler()
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        # uvicorn's own handlers (when it configured any) would print plain text.
        logging.getLogger(name).handlers = []
        logging.getLogger(name).propagate = True
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=True,
    )


def library_logger(name: str) -> Any:
    """The logger of a costart module that a host may embed (the Controller, the store,
    the log services, the views, the service layer).

    How log lines look and where they go is the host's choice: costart configures
    structlog only in its own entry points (the CLI, ``serve``, the agent). Until
    structlog is configured, a line goes to the standard library's logger ``name``, so
    the host's logging handlers get it (without any, Python prints warnings and errors
    on stderr); never to stdout, where structlog's unconfigured default would print it.
    Once structlog is configured (by an entry point or by the host), its configuration
    applies."""
    return _LibraryLogger(name, {})


class _LibraryLogger:
    """Chooses, at each call, structlog as configured or the standard library's logger."""

    __slots__ = ("_context", "_name")

    def __init__(self, name: str, context: dict[str, Any]) -> None:
        self._name = name
        self._context = context

    def bind(self, **values: Any) -> _LibraryLogger:
        return _LibraryLogger(self._name, {**self._context, **values})

    def __getattr__(self, method: str) -> Any:
        import structlog  # noqa: PLC0415  (loaded at a module's first line, not at import)

        if structlog.is_configured():
            logger = structlog.get_logger(self._name)
        else:
            logger = structlog.wrap_logger(
                logging.getLogger(self._name),
                processors=_to_standard_library(),
                wrapper_class=structlog.stdlib.BoundLogger,
            )
        return getattr(logger.bind(**self._context) if self._context else logger, method)


def _to_standard_library() -> list[structlog.typing.Processor]:
    """An unconfigured host's lines: filtered by its standard-library level, rendered as
    ``event key=value ...`` for whatever handlers it has."""
    import structlog  # noqa: PLC0415

    return [
        structlog.stdlib.filter_by_level,
        structlog.processors.KeyValueRenderer(key_order=["event"], drop_missing=True),
    ]


def configure_standard_library_only(level: int) -> None:
    """For a command that only reads, at ``level`` warning or above: its lines (the
    library's, through `library_logger`, while structlog is not configured) go to the
    standard library's handler on stderr, and structlog (with the terminal renderer it
    loads, a sixth of a read's start-up) is loaded only if a line is ever written.
    Nothing changes when structlog was configured already (an embedding program)."""
    loaded = sys.modules.get("structlog")
    if loaded is not None and loaded.is_configured():
        return
    root = logging.getLogger()
    if not any(isinstance(h, _StderrHandler) for h in root.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(level)


def configure_logging_once(*, json: bool = False, level: int = logging.INFO) -> None:
    """Configure structlog for the process unless an embedding program (or a test) did."""
    import structlog  # noqa: PLC0415

    if not structlog.is_configured():
        configure_logging(json=json, level=level)
