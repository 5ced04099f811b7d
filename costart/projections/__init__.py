"""Display views built from the event stream (docs/design.md §7), stored in LMDB.

`Views(path)` opens (or creates) the views; `Views.catch_up(source)` folds whatever the
log holds beyond the tracked position; the query methods read one consistent snapshot.
`RecorderSource` reads a controller's log without building a `Controller`.
`open_deadlines` lists a group row's open deadlines.
`group_view`/`member_view` derive a row from live state the way the views do (`serve`
answers a command with them before its views caught up)."""

from typing import TYPE_CHECKING

from costart._lazy import lazy_exports

if TYPE_CHECKING:
    from costart.eventlog.event_reading import RecorderSource
    from costart.projections.deadlines import DeadlineKind, open_deadlines
    from costart.projections.derive import event_detail, group_view, member_view
    from costart.projections.models import (
        GroupDetail,
        GroupView,
        Histogram,
        HoldView,
        MemberView,
        PendEntry,
        TaskView,
        TimelineEntry,
    )
    from costart.projections.view_builder import EventSource, catch_up, rebuild
    from costart.projections.view_queries import Views
    from costart.projections.view_store import ViewDamagedError, stored_anchor

__all__ = [
    "DeadlineKind",
    "EventSource",
    "GroupDetail",
    "GroupView",
    "Histogram",
    "HoldView",
    "MemberView",
    "PendEntry",
    "RecorderSource",
    "TaskView",
    "TimelineEntry",
    "ViewDamagedError",
    "Views",
    "catch_up",
    "event_detail",
    "group_view",
    "member_view",
    "open_deadlines",
    "rebuild",
    "stored_anchor",
]

# Resolved on first use: importing one module of the package (`events` for a read
# over --server) does not import the rest of it (ADR 0078).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DeadlineKind": "costart.projections.deadlines",
        "EventSource": "costart.projections.view_builder",
        "GroupDetail": "costart.projections.models",
        "GroupView": "costart.projections.models",
        "Histogram": "costart.projections.models",
        "HoldView": "costart.projections.models",
        "MemberView": "costart.projections.models",
        "PendEntry": "costart.projections.models",
        "RecorderSource": "costart.eventlog.event_reading",
        "TaskView": "costart.projections.models",
        "TimelineEntry": "costart.projections.models",
        "ViewDamagedError": "costart.projections.view_store",
        "Views": "costart.projections.view_queries",
        "catch_up": "costart.projections.view_builder",
        "event_detail": "costart.projections.derive",
        "group_view": "costart.projections.derive",
        "member_view": "costart.projections.derive",
        "open_deadlines": "costart.projections.deadlines",
        "rebuild": "costart.projections.view_builder",
        "stored_anchor": "costart.projections.view_store",
    },
)
