"""Shared test setup: hypothesis profiles (a bounded CI profile, a larger local one)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile(
    "slow", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("slow" if os.environ.get("COSTART_PROFILE") == "slow" else "ci")

import logging  # noqa: E402

from costart.logs import configure_logging  # noqa: E402

configure_logging(level=logging.WARNING)
