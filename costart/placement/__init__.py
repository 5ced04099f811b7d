"""costart.placement: the co-placement step (docs/design.md §4).

The cluster model and its file format, the `Allocator` port with its in-memory adapter
and the host's (capacity the host's other work also uses, binds it may refuse), named
placement groups and topology scopes, the gang planner, reservations, and idle-held
accounting. Imports only the standard library, msgspec and `costart.domain`.

`CoPlacementStep` is the plain reference policy: it reads everything afresh each
session and keeps nothing between sessions. The speed-ups that do keep state live
behind a wall in `costart.placement.incremental`, which imports this package and is
never imported by it (ADR 0052).
"""

from costart.placement.accounting import IdleHeldMeter, idle_held_gpu_seconds, idle_held_gpus
from costart.placement.allocator import (
    Allocator,
    BindConflict,
    InMemoryAllocator,
    OvercommitError,
)
from costart.placement.cluster import Cluster, ClusterError, Node, NodeStatus
from costart.placement.cluster_file import (
    ClusterDefinition,
    cluster_document,
    load_cluster,
    parse_cluster,
)
from costart.placement.host_allocator import HostAllocator, HostLoad
from costart.placement.recommended import Recommendation, recommended_mode
from costart.placement.reported_load import ReportedLoad, SessionReadings
from costart.placement.shadow import (
    DEFAULT_DEPTH,
    DEFAULT_WINDOW_NS,
    StartEstimate,
    estimate_starts,
)
from costart.placement.step import CoPlacementStep, from_cluster_file, session_order

__all__ = [
    "DEFAULT_DEPTH",
    "DEFAULT_WINDOW_NS",
    "Allocator",
    "BindConflict",
    "Cluster",
    "ClusterDefinition",
    "ClusterError",
    "CoPlacementStep",
    "HostAllocator",
    "HostLoad",
    "IdleHeldMeter",
    "InMemoryAllocator",
    "Node",
    "NodeStatus",
    "OvercommitError",
    "Recommendation",
    "ReportedLoad",
    "SessionReadings",
    "StartEstimate",
    "cluster_document",
    "estimate_starts",
    "from_cluster_file",
    "idle_held_gpu_seconds",
    "idle_held_gpus",
    "load_cluster",
    "parse_cluster",
    "recommended_mode",
    "session_order",
]
