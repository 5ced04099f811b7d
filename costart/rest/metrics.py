"""Prometheus metrics at ``/metrics``, computed from the views on each scrape.

Durations come from event times (``at_ns``) folded into histograms by the projector,
never from the wall clock, so a replayed log reports the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import (
    CollectorRegistry,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from costart.domain.states import GROUP_STATUSES
from costart.projections import Histogram, Views

SECOND_NS = 1e9


def _histogram(name: str, doc: str, hist: Histogram) -> HistogramMetricFamily:
    buckets = []
    cumulative = 0
    for bound, count in zip(hist.bounds_ns, hist.counts, strict=False):
        cumulative += count
        buckets.append((f"{bound / SECOND_NS:g}", cumulative))
    buckets.append(("+Inf", hist.count))
    return HistogramMetricFamily(name, doc, buckets=buckets, sum_value=hist.sum_ns / SECOND_NS)


class ViewsCollector(Collector):
    def __init__(self, views: Views) -> None:
        self.views = views

    def collect(self) -> Iterator[Metric]:
        groups = self.views.groups()
        by_state = GaugeMetricFamily("costart_groups", "Groups by state.", labels=["state"])
        for state in GROUP_STATUSES:
            by_state.add_metric([state], sum(1 for g in groups if g.state == state))
        yield by_state
        yield GaugeMetricFamily(
            "costart_open_reservations",
            "Groups holding capacity in an open reservation.",
            value=sum(1 for g in groups if g.state == "RESERVING"),
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


def registry_for(views: Views) -> CollectorRegistry:
    """A registry of its own (not the process-global one): one per served store."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ViewsCollector(views))
    return registry
