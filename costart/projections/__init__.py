"""Display views built from the event stream (DESIGN §7), stored in LMDB.

`Views(path)` opens (or creates) the views; `Views.catch_up(source)` folds whatever the
log holds beyond the tracked position; the query methods read one consistent snapshot.
`RecorderSource` reads a controller's log without building a `Controller`.
"""

from costart.projections.derive import event_detail
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
from costart.projections.projector import EventSource, catch_up, rebuild
from costart.projections.viewdb import ViewDamagedError, stored_anchor
from costart.projections.views import Views
from costart.store.reading import RecorderSource

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
    "rebuild",
    "stored_anchor",
]
