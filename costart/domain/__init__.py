"""The pure model: specs, events, the Group and Member aggregates, policies and
invariants (docs/design.md §3). Imports only the standard library and msgspec."""

from costart.domain import (
    backfill,
    decisions,
    events,
    failures,
    lifecycle,
    limits,
    node_loss,
    reconcile,
    reports,
    runtime_limits,
    scheduling,
)
from costart.domain.actors import CHECKED_LOG_BYTES, TIMER, Actor
from costart.domain.aggregates import GroupUnit
from costart.domain.capacity import Capacity
from costart.domain.cluster_stream import ClusterUnit
from costart.domain.decisions import Decision, PlaceGroup, PlaceMember
from costart.domain.durations import format_duration_ns, parse_duration_ns
from costart.domain.errors import Conflict, DomainError, IllegalTransition, NotFound, SpecError
from costart.domain.events import Assignment, DomainEvent, NodeStatus, PendClass, PendReason
from costart.domain.ids import COSTART_NAMESPACE, id_text
from costart.domain.invariants import EventAudit, check_group, check_world
from costart.domain.labels import Selector, matches, parse_selector
from costart.domain.limits import ENV_NAME_PATTERN, LABEL_PATTERN, MAX_SPEC_BYTES, NAME_PATTERN
from costart.domain.probe_hosts import never_reached, plain_address
from costart.domain.reconcile import HostTask, HostView
from costart.domain.reports import Outcome
from costart.domain.run_table import Probe, RunSpec, task_log_path
from costart.domain.spec import (
    GroupDoc,
    SpecFormat,
    is_name,
    parse_spec,
    parse_spec_warned,
    spec_from_object,
)
from costart.domain.spec_types import (
    FailurePolicy,
    FailureReason,
    GroupSpec,
    MemberSpec,
    PlacementMode,
    Shape,
    SuccessPolicy,
    Topology,
    TopologyPolicy,
)
from costart.domain.spec_warnings import spec_warnings
from costart.domain.states import (
    GROUP_STARTED,
    GROUP_STATUSES,
    GROUP_TERMINAL,
    GROUP_WAITING,
    NO_TASK_CLAIMS,
    ClaimStatus,
    GroupState,
    GroupStatus,
    MemberState,
    MemberStatus,
    TaskState,
    TaskStatus,
)
from costart.domain.world import World

__all__ = [
    "CHECKED_LOG_BYTES",
    "COSTART_NAMESPACE",
    "ENV_NAME_PATTERN",
    "GROUP_STARTED",
    "GROUP_STATUSES",
    "GROUP_TERMINAL",
    "GROUP_WAITING",
    "LABEL_PATTERN",
    "MAX_SPEC_BYTES",
    "NAME_PATTERN",
    "NO_TASK_CLAIMS",
    "TIMER",
    "Actor",
    "Assignment",
    "Capacity",
    "ClaimStatus",
    "ClusterUnit",
    "Conflict",
    "Decision",
    "DomainError",
    "DomainEvent",
    "EventAudit",
    "FailurePolicy",
    "FailureReason",
    "GroupDoc",
    "GroupSpec",
    "GroupState",
    "GroupStatus",
    "GroupUnit",
    "HostTask",
    "HostView",
    "IllegalTransition",
    "MemberSpec",
    "MemberState",
    "MemberStatus",
    "NodeStatus",
    "NotFound",
    "Outcome",
    "PendClass",
    "PendReason",
    "PlaceGroup",
    "PlaceMember",
    "PlacementMode",
    "Probe",
    "RunSpec",
    "Selector",
    "Shape",
    "SpecError",
    "SpecField",
    "SpecFormat",
    "SuccessPolicy",
    "TaskState",
    "TaskStatus",
    "Topology",
    "TopologyPolicy",
    "World",
    "backfill",
    "check_group",
    "check_world",
    "decisions",
    "describe_schema",
    "document_fields",
    "events",
    "failures",
    "find_field",
    "format_duration_ns",
    "id_text",
    "is_name",
    "lifecycle",
    "limits",
    "matches",
    "near_fields",
    "never_reached",
    "node_loss",
    "parse_duration_ns",
    "parse_selector",
    "parse_spec",
    "parse_spec_warned",
    "plain_address",
    "reconcile",
    "reference_line",
    "refusal",
    "reports",
    "runtime_limits",
    "scheduling",
    "spec_fields",
    "spec_from_object",
    "spec_warnings",
    "task_log_path",
]

# The spec reference (docs, `costart explain`, the OpenAPI schema's words) is read on
# first use (PEP 562): a command line that never explains a field does not import it.
_REFERENCE = frozenset(
    {
        "SpecField",
        "describe_schema",
        "document_fields",
        "find_field",
        "near_fields",
        "reference_line",
        "refusal",
        "spec_fields",
    }
)


def __getattr__(name: str) -> object:
    if name in _REFERENCE:
        import importlib  # noqa: PLC0415

        return getattr(importlib.import_module("costart.domain.spec_reference"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
