"""The service layer: what `costart serve` runs and the CLI reads, without HTTP.

The controller as a long-running service (commands, idempotent reports, the scheduling
loop, node heartbeats, followers that keep readers of the log caught up) and the queries
both REST and the CLI answer. ``costart.rest`` adapts it to HTTP; this package never
imports ``costart.rest`` (tests/test_layering.py, ADR 0054).
"""

from costart._lazy import lazy_exports

__all__ = [
    "EXIT_CODES",
    "LOG_MAX_TAIL_LINES",
    "LOG_MAX_WAIT_S",
    "MAX_ATTEMPT",
    "ChangeFeed",
    "ClaimReport",
    "Delivery",
    "EstimateSettings",
    "ExitReason",
    "ExpectedStart",
    "ExpectedStarts",
    "LogKey",
    "LogRefused",
    "LogRelay",
    "LogUnavailable",
    "ReportAnswer",
    "Service",
    "SessionDriver",
    "StartEstimator",
    "TaskReport",
    "ViewsBehindError",
    "Want",
    "Why",
    "check_claim",
    "check_task",
    "subject",
    "unavailable",
    "why_not_running",
]

# Resolved on first use: the REST document's schemas import the report bodies alone.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "EXIT_CODES": "costart.service.host_reports",
        "LOG_MAX_TAIL_LINES": "costart.service.log_relay",
        "LOG_MAX_WAIT_S": "costart.service.log_relay",
        "MAX_ATTEMPT": "costart.service.host_reports",
        "ChangeFeed": "costart.service.controller_service",
        "ClaimReport": "costart.service.host_reports",
        "Delivery": "costart.service.log_relay",
        "EstimateSettings": "costart.service.start_estimates",
        "ExitReason": "costart.service.host_reports",
        "ExpectedStart": "costart.service.expected_starts",
        "ExpectedStarts": "costart.service.expected_starts",
        "LogKey": "costart.service.log_relay",
        "LogRefused": "costart.service.log_relay",
        "LogRelay": "costart.service.log_relay",
        "LogUnavailable": "costart.service.log_relay",
        "ReportAnswer": "costart.service.host_reports",
        "Service": "costart.service.controller_service",
        "SessionDriver": "costart.service.controller_service",
        "StartEstimator": "costart.service.start_estimates",
        "TaskReport": "costart.service.host_reports",
        "ViewsBehindError": "costart.service.log_follower",
        "Want": "costart.service.log_relay",
        "Why": "costart.service.queries",
        "check_claim": "costart.service.host_reports",
        "check_task": "costart.service.host_reports",
        "subject": "costart.service.host_reports",
        "unavailable": "costart.service.expected_starts",
        "why_not_running": "costart.service.queries",
    },
)
