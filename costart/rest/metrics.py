"""Prometheus metrics at ``/metrics``, computed from the views on each scrape.

Durations of groups come from event times (``at_ns``) folded into histograms by the
projector, and the event counters are counted by the projector too, never from the
wall clock, so a replayed log reports the same numbers. The one wall-clock measure is
the scheduling session's own duration (`SessionTimer`), which is about this process.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing

from prometheus_client import Histogram as PromHistogram
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from costart.domain.states import GROUP_STATUSES
from costart.projections import Histogram, Views

SECOND_NS = 1e9
SESSION_BUCKETS_S = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Event counters: (metric name, help, key in `Views.counters`).
COUNTERS = (
    ("costart_member_restarts", "Member restarts (restart-member).", "member_restarts"),
    ("costart_group_restarts", "Whole-group restarts (restart-group).", "group_restarts"),
    (
        "costart_reservation_timeouts",
        "Reservations released at their deadline.",
        "reservation_timeouts",
    ),
    (
        "costart_barrier_timeouts",
        "Placements released because claims were not READY by the barrier deadline.",
        "barrier_timeouts",
    ),
    ("costart_releases", "Placements or reservations released (then backoff).", "releases"),
)
FAILURES_PREFIX = "member_failures:"


def _histogram(name: str, doc: str, hist: Histogram) -> HistogramMetricFamily:
    buckets = []
    cumulative = 0
    for bound, count in zip(hist.bounds_ns, hist.counts, strict=False):
        cumulative += count
        buckets.append((f"{bound / SECOND_NS:g}", cumulative))
    buckets.append(("+Inf", hist.count))
    return HistogramMetricFamily(name, doc, buckets=buckets, sum_value=hist.sum_ns / SECOND_NS)


class ViewsCollector(Collector):
    """``views`` gives the views once they hold everything decided before a scrape."""

    def __init__(self, views: Callable[[], Views]) -> None:
        self._views = views

    @property
    def views(self) -> Views:
        return self._views()

    def collect(self) -> Iterator[Metric]:
        # Counted one row at a time: a scrape keeps no list of every group (ADR 0058).
        with closing(self.views.iter_groups()) as groups:
            states = Counter(g.state for g in groups)
        by_state = GaugeMetricFamily("costart_groups", "Groups by state.", labels=["state"])
        for state in GROUP_STATUSES:
            by_state.add_metric([state], states[state])
        yield by_state
        yield GaugeMetricFamily(
            "costart_open_reservations",
            "Groups holding capacity in an open reservation.",
            value=states["RESERVING"],
        )
        holds = self.views.holds()
        yield GaugeMetricFamily(
            "costart_accelerators_held",
            "Accelerators held by open reservations.",
            value=sum(h.gpu for h in holds if h.kind == "held"),
        )
        yield GaugeMetricFamily(
            "costart_accelerators_idle_held",
            "Accelerators held or placed but not running (waiting for the gang or barrier).",
            value=sum(h.gpu for h in holds if h.kind == "held" or not h.running),
        )
        yield GaugeMetricFamily(
            "costart_accelerators_used",
            "Accelerators placed to members (running or waiting at the barrier).",
            value=sum(h.gpu for h in holds if h.kind == "used"),
        )
        yield GaugeMetricFamily(
            "costart_views_position",
            "Last log position folded into the views.",
            value=self.views.position(),
        )
        counts = self.views.counters()
        failures = CounterMetricFamily(
            "costart_member_failures", "Member failures by reason.", labels=["reason"]
        )
        for key, value in sorted(counts.items()):
            if key.startswith(FAILURES_PREFIX):
                failures.add_metric([key.removeprefix(FAILURES_PREFIX)], value)
        yield failures
        for name, doc, key in COUNTERS:
            yield CounterMetricFamily(name, doc, value=counts.get(key, 0))
        hist = self.views.histograms()
        yield _histogram(
            "costart_time_to_start_seconds",
            "From submission to the first barrier release, per group.",
            hist["time_to_start"],
        )
        yield _histogram(
            "costart_barrier_wait_seconds",
            "From placement to the barrier release, per attempt.",
            hist["barrier_wait"],
        )


class SessionTimer:
    """The wall-clock duration of each scheduling session of this process."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.histogram = PromHistogram(
            "costart_scheduling_session_duration_seconds",
            "Wall-clock duration of one scheduling session (placement, timers, claims).",
            buckets=SESSION_BUCKETS_S,
            registry=registry,
        )

    def observe(self, seconds: float) -> None:
        self.histogram.observe(seconds)


def registry_for(views: Callable[[], Views]) -> tuple[CollectorRegistry, SessionTimer]:
    """A registry of its own (not the process-global one): one per served store, with
    the timer the session loop reports to."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ViewsCollector(views))
    return registry, SessionTimer(registry)
