"""Logging set up once: readable on a terminal, JSON for services (``serve``)."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(*, json: bool = False, level: int = logging.INFO) -> None:
    """Configure structlog for the process. Call once from an entry point."""
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
