"""Display views built from the event stream (docs/design.md §7), stored in LMDB.

`Views(path)` opens (or creates) the views; `Views.catch_up(source)` folds whatever the
log holds beyond the tracked position; the query methods read one consistent snapshot.
`RecorderSource` reads a controller's log without building a `Controller`.
`group_view`/`member_view` derive a row from live state the way the views do (`serve`
answers a command with them before its views caught up).
"""

from costart.eventlog.event_reading import RecorderSource
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
    "rebuild",
    "stored_anchor",
]
