"""costart.placement: the co-placement step (DESIGN §4).

The cluster model and its file format, the `Allocator` port with its in-memory adapter,
named placement groups and topology scopes, the gang planner, reservations, and
idle-held accounting. Imports only the standard library, msgspec and `costart.domain`.
"""

from costart.placement.accounting import IdleHeldMeter, idle_held_gpu_seconds, idle_held_gpus
from costart.placement.allocator import Allocator, InMemoryAllocator, OvercommitError
from costart.placement.cluster import Cluster, ClusterError, Node, NodeStatus
from costart.placement.cluster_file import ClusterDefinition, load_cluster, parse_cluster
from costart.placement.step import CoPlacementStep, from_cluster_file, session_order

__all__ = [
    "Allocator",
    "Cluster",
    "ClusterDefinition",
    "ClusterError",
    "CoPlacementStep",
    "IdleHeldMeter",
    "InMemoryAllocator",
    "Node",
    "NodeStatus",
    "OvercommitError",
    "from_cluster_file",
    "idle_held_gpu_seconds",
    "idle_held_gpus",
    "load_cluster",
    "parse_cluster",
    "session_order",
]
