"""Two logs read over windows of one length, then compared.

A log's events stop when nothing more happens: a run that deadlocked writes nothing
after its groups got stuck, though the time they hold accelerators goes on. So two
logs are measured over the same length of time: each from its own first event, for
the longer of their two spans (ADR 0134). Each log keeps its own clock (a real
cluster's wall clock, a simulator's virtual one): only lengths are compared.
"""

from __future__ import annotations

from collections.abc import Sequence

from costart.placement.cluster import Cluster
from costart.replay.outcomes.accounting import read_figures
from costart.replay.outcomes.compare import Comparison, compare
from costart.replay.outcomes.figures import Window
from costart.replay.source import ReplaySource
from costart.replay.time_base import log_span

ACTUAL = "actual"
WHATIF = "what-if"


def span_of(source: ReplaySource) -> Window:
    """The log's first and last event times (`ValueError` for a log without events)."""
    span = log_span(source)
    if span.last_position == 0:
        raise ValueError("the log holds no events: nothing to measure")
    return Window(span.first_ns, span.last_ns)


def common_windows(first: Window, second: Window) -> tuple[Window, Window]:
    """Each window from its own start, both as long as the longer one."""
    length = max(first.span_ns, second.span_ns)
    return (
        Window(first.start_ns, first.start_ns + length),
        Window(second.start_ns, second.start_ns + length),
    )


def compare_logs(
    actual: ReplaySource,
    actual_cluster: Cluster,
    whatif: ReplaySource,
    whatif_cluster: Cluster,
    *,
    labels: tuple[str, str] = (ACTUAL, WHATIF),
    assumptions: Sequence[str] = (),
) -> Comparison:
    """Read both logs over windows of one length (`common_windows`) and compare them;
    ``assumptions`` (e.g. a what-if's) are kept with the comparison."""
    mine, theirs = common_windows(span_of(actual), span_of(whatif))
    return compare(
        read_figures(
            actual, actual_cluster, label=labels[0], start_ns=mine.start_ns, end_ns=mine.end_ns
        ),
        read_figures(
            whatif, whatif_cluster, label=labels[1], start_ns=theirs.start_ns, end_ns=theirs.end_ns
        ),
        assumptions=assumptions,
    )
