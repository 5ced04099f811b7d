"""The service layer: what `costart serve` runs and the CLI reads, without HTTP.

The controller as a long-running service (commands, idempotent reports, the scheduling
loop, node heartbeats, followers that keep readers of the log caught up) and the queries
both REST and the CLI answer. ``costart.rest`` adapts it to HTTP; this package never
imports ``costart.rest`` (tests/test_layering.py, ADR 0054).
"""
