"""The dispatch path's routes: scale, claim and task reports, nodes.

Who may call what (docs/design.md §9, ADR 0007 extended):

============================ ===== ===== ===================== ======
route                        owner admin agent                 claims
============================ ===== ===== ===================== ======
scale                        own   all   no                    no
claim report                 no    all   member on its nodes   all
task report                  no    all   task on its nodes     no
node heartbeat, status       no    all   its nodes             no
node as the cluster has it   no    all   its nodes             no
node outside load            no    all   its nodes             no
tasks of a node              no    all   its nodes             no
============================ ===== ===== ===================== ======

A refusal is 403 naming the caller and what it may not do; nothing is written.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec
from litestar import Request, get, post, put
from litestar.datastructures import State
from litestar.exceptions import PermissionDeniedException
from litestar.openapi.spec import Example
from litestar.params import JSONBody, Parameter
from msgspec import Meta

from costart.domain import limits
from costart.domain.actors import Actor
from costart.domain.capacity import Capacity
from costart.domain.errors import SpecError
from costart.domain.states import GROUP_STARTED
from costart.projections import GroupView, MemberView
from costart.rest.auth import User
from costart.rest.current_user import CurrentUser
from costart.rest.models import name_in_path, node_in_path
from costart.rest.openapi import errors, linked, struct_body, task_links
from costart.rest.report_schemas import ClaimReportOperation, TaskReportOperation
from costart.rest.request_bodies import refuse_body
from costart.service.controller_service import Service
from costart.service.host_reports import (
    ClaimReport,
    ReportAnswer,
    TaskReport,
    check_claim,
    check_task,
    subject,
)

# The examples name the documented example spec's group, members, claim and a node of
# the demo cluster (the examples phase of the contract test calls them on it).
GroupName = Annotated[str, name_in_path("grpo-run-42")]
MemberName = Annotated[str, name_in_path("trainer")]
ReplicaSetName = Annotated[str, name_in_path("rollout")]
ClaimName = Annotated[str, name_in_path("gpus")]
NodeName = Annotated[str, node_in_path("h100-0000")]
TaskIndex = Annotated[
    int,
    # The framework drops a bound of 0 from the document: stated again for it.
    Parameter(
        ge=0,
        le=limits.MAX_REPLICAS_PER_MEMBER,
        schema_extra={"minimum": 0},
        examples=[Example(value=0)],
    ),
]


class ScaleRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    # The bounds are documented; the handler checks them against the member (422 naming
    # ``replicas``, like a spec field), its own min_running being the real floor.
    replicas: Annotated[
        int,
        Meta(
            description="the desired replicas (min_running .. the limit)",
            extra_json_schema={"minimum": 1, "maximum": limits.MAX_REPLICAS_PER_MEMBER},
        ),
    ]


class NodeStatusRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    status: Annotated[Literal["up", "drained"], Meta(description="up, or drained (no new tasks)")]
    note: (
        Annotated[
            str,
            Meta(max_length=500, description="why, recorded with the change (the host's reason)"),
        ]
        | None
    ) = None


class ClusterNode(msgspec.Struct, frozen=True):
    """A node as this server's cluster view has it (ADR 0120)."""

    node: Annotated[str, Meta(description="the node")]
    gpu: Annotated[int, Meta(description="GPUs the cluster file gives it")]
    cpu: Annotated[int, Meta(description="CPUs the cluster file gives it")]
    mem_gb: Annotated[int, Meta(description="memory (GB) the cluster file gives it")]
    status: Annotated[str, Meta(description="up, drained or down")]
    gpu_type: Annotated[str | None, Meta(description="its GPU type, if the file names one")] = None


MAX_OUTSIDE_AMOUNT = 10**7
_SOURCE = re.compile(r"[a-z][a-z0-9-]{0,31}")


Amount = Annotated[int, Meta(ge=0, le=MAX_OUTSIDE_AMOUNT)]


class OutsideLoadRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What work costart does not manage holds on the node (ADR 0118)."""

    gpu: Annotated[Amount, Meta(description="GPUs the other work holds on the node now")]
    cpu: Annotated[Amount, Meta(description="CPUs the other work holds on the node now")]
    mem_gb: Annotated[Amount, Meta(description="memory (GB, rounded up) it holds now")]
    source: Annotated[
        str,
        Meta(
            description="who counts it, e.g. slurm: 1-32 of a-z, 0-9 and -",
            pattern=f"^{limits.OUTSIDE_SOURCE_PATTERN}$",
            max_length=32,
        ),
    ] = "host"


class OutsideLoadAnswer(msgspec.Struct, frozen=True):
    node: Annotated[str, Meta(description="the node")]
    gpu: Annotated[int, Meta(description="GPUs placement now counts as taken by outside work")]
    cpu: Annotated[int, Meta(description="CPUs placement now counts as taken by outside work")]
    mem_gb: Annotated[int, Meta(description="memory (GB) placement now counts as taken")]


class NodeAnswer(msgspec.Struct, frozen=True):
    node: Annotated[str, Meta(description="the node")]
    events: Annotated[int, Meta(description="how many events the call wrote (0: nothing changed)")]


class PlacedTask(msgspec.Struct, frozen=True):
    """One task placed on a node, and whether it may start now (the dispatch barrier)."""

    group: Annotated[str, Meta(description="the group's name")]
    member: Annotated[str, Meta(description="the member's name")]
    task: Annotated[int, Meta(description="the task's index")]
    node: Annotated[str, Meta(description="the node it is placed on")]
    attempt: Annotated[int, Meta(description="the group attempt it belongs to")]
    kind: Annotated[str, Meta(description="job or replica-set")]
    state: Annotated[str, Meta(description="the member's state")]
    may_start: Annotated[
        bool, Meta(description="whether the task may start now (the start barrier)")
    ]
    group_id: Annotated[
        str, Meta(description="the group's id (a later group of the same name has another)")
    ] = ""
    task_state: Annotated[
        str, Meta(description="the task's own state: PLACED, RUNNING, SUCCEEDED, FAILED...")
    ] = "PLACED"
    task_attempt: Annotated[
        int,
        Meta(
            description="the placement attempt of the task itself, which its reports name "
            "(a replica placed again has a newer one than its siblings)"
        ),
    ] = 0
    owner: Annotated[
        str, Meta(description="the group's owner (the agent runs the task as its account)")
    ] = ""


def _service(state: State) -> Service:
    service: Service = state.service
    return service


def _deny(user: User, what: str) -> PermissionDeniedException:
    return PermissionDeniedException(f"{user.name} ({user.role}) may not {what}")


def actor_of(user: User) -> Actor:
    """Who a caller is in the log: a node agent by its token's name, anyone else (owner,
    admin, claims driver) a user by name."""
    return Actor.agent(user.name) if user.role == "agent" else Actor.user(user.name)


def require_node(user: User, node: str, what: str) -> None:
    if user.is_admin or (user.role == "agent" and node in user.nodes):
        return
    raise _deny(user, f"{what} for node {node}")


@post(
    "/v1/groups/{name:str}/members/{member:str}/scale",
    status_code=200,
    sync_to_thread=True,
    summary="Scale a replica set",
    operation_class=struct_body(ScaleRequest, "the desired replicas", {"replicas": 3}),
    responses=errors(400, 401, 403, 404, 409, 415, 422),
)
def scale_member(
    name: GroupName,
    member: ReplicaSetName,
    data: JSONBody[ScaleRequest],
    user: CurrentUser,
    state: State,
) -> MemberView:
    """Set a replica set's desired replicas (``min_running`` .. the limit): 422 names
    ``replicas`` for a job member or a count out of range."""
    return scale_as(name, member, data.replicas, user, state)


def scale_as(name: str, member: str, replicas: int, user: User, state: State) -> MemberView:
    """Scale ``member`` of group ``name`` to ``replicas`` as ``user`` (the API's rules:
    403 unless the group's owner or an admin, 422 for a job or a count out of range)."""
    service = _service(state)
    target = subject(service.views, name, member)
    if not user.may_act_for(target.group.owner):
        raise _deny(user, f"scale groups owned by {target.group.owner}")
    if target.member.kind != "replica-set":
        raise SpecError(
            "replicas", f"member {member} is a {target.member.kind}; only a replica-set scales"
        )
    if not target.member.min_running <= replicas <= limits.MAX_REPLICAS_PER_MEMBER:
        raise SpecError(
            "replicas",
            f"must be between min_running ({target.member.min_running}) and "
            f"{limits.MAX_REPLICAS_PER_MEMBER} (got {replicas})",
        )
    return service.scale(name, member, replicas, actor_of(user))


@post(
    "/v1/groups/{name:str}/members/{member:str}/claims/{claim:str}",
    status_code=200,
    sync_to_thread=True,
    summary="Report a claim READY or failed",
    operation_class=ClaimReportOperation,
    responses=errors(400, 401, 403, 404, 409, 415, 422),
)
def report_claim(
    name: GroupName,
    member: MemberName,
    claim: ClaimName,
    data: JSONBody[ClaimReport],
    user: CurrentUser,
    state: State,
) -> ReportAnswer:
    """Claims role, admins, or an agent with a task of this member on its nodes. A repeat
    answers ``applied: false``; an older attempt or a terminal group is 409."""
    check_claim(data)
    service = _service(state)
    if not (user.is_admin or user.role == "claims"):
        target = subject(service.views, name, member)
        if data.task is not None:
            require_node(user, target.node_of(data.task), f"report claims of task {data.task}")
        elif user.role != "agent" or not target.nodes & set(user.nodes):
            raise _deny(user, f"report claims of {name}/{member}")
    return service.reports.claim(name, member, claim, data, actor_of(user))


@post(
    "/v1/groups/{name:str}/members/{member:str}/tasks/{task:int}",
    status_code=200,
    sync_to_thread=True,
    summary="Report a task started, exited or succeeded",
    operation_class=TaskReportOperation,
    responses=errors(400, 401, 403, 404, 409, 415, 422),
)
def report_task(
    name: GroupName,
    member: MemberName,
    task: TaskIndex,
    data: JSONBody[TaskReport],
    user: CurrentUser,
    state: State,
) -> ReportAnswer:
    """Admins, or the agent of the task's node. A repeat answers ``applied: false``; an
    older attempt or a terminal group is 409; a task the member does not have is 404, and
    an agent's report of one not placed now is 409 (its node is not known yet)."""
    check_task(data)
    service = _service(state)
    if not user.is_admin:
        if user.role != "agent":  # before anything about the task: its state is not theirs
            raise _deny(user, f"report task {name}/{member}/{task}")
        node = subject(service.views, name, member).node_of(task)
        require_node(user, node, f"report task {name}/{member}/{task}")
    return service.reports.task(name, member, task, data, actor_of(user))


@post(
    "/v1/nodes/{node:str}/heartbeat",
    status_code=200,
    sync_to_thread=True,
    summary="An agent's heartbeat for its node",
    responses=errors(400, 401, 403, 404),
)
def heartbeat(
    request: Request[object, object, State], node: NodeName, user: CurrentUser, state: State
) -> NodeAnswer:
    """A node whose agent stops heartbeating is reported down after the timeout. A
    heartbeat has no body: one with a body is 400 (a report sent here by mistake)."""
    require_node(user, node, "heartbeat")
    refuse_body(request)
    return NodeAnswer(node=node, events=_service(state).heartbeat(node, actor_of(user)))


@put(
    "/v1/nodes/{node:str}/status",
    status_code=200,
    sync_to_thread=True,
    summary="Mark a node drained (no new placements) or up",
    operation_class=struct_body(NodeStatusRequest, "the node's new status", {"status": "up"}),
    responses=errors(400, 401, 403, 404, 415),
)
def set_node_status(
    node: NodeName, data: JSONBody[NodeStatusRequest], user: CurrentUser, state: State
) -> NodeAnswer:
    require_node(user, node, "set the status")
    events = _service(state).set_node_status(node, data.status, actor_of(user), data.note)
    return NodeAnswer(node=node, events=events)


@get(
    "/v1/nodes/{node:str}",
    sync_to_thread=True,
    summary="A node as this server's cluster view has it",
    responses=errors(400, 401, 403, 404, 409),
)
def cluster_node(node: NodeName, user: CurrentUser, state: State) -> ClusterNode:
    """What the cluster file says the node offers, and its status now: what a host
    adapter (`costart slurm`) compares with its host's own report of the node."""
    require_node(user, node, "read")
    capacity, gpu_type, status = _service(state).node_offer(node)
    return ClusterNode(
        node=node, gpu=capacity.gpu, cpu=capacity.cpu, mem_gb=capacity.mem_gb,
        status=status, gpu_type=gpu_type,
    )  # fmt: skip


@put(
    "/v1/nodes/{node:str}/outside-load",
    status_code=200,
    sync_to_thread=True,
    summary="What work costart does not manage holds on a node",
    operation_class=struct_body(
        OutsideLoadRequest,
        "the node's outside use now (it replaces the last report)",
        {"gpu": 2, "cpu": 4, "mem_gb": 16, "source": "slurm"},
    ),
    responses=errors(400, 401, 403, 404, 409, 415, 422),
)
def set_outside_load(
    node: NodeName, data: JSONBody[OutsideLoadRequest], user: CurrentUser, state: State
) -> OutsideLoadAnswer:
    """The agent of a node shared with another scheduler (`costart slurm`) reports what
    that scheduler's other jobs hold there, on every pass; placement counts it out of
    the node's free capacity from the next session on, and a group that waits for
    capacity names it in its pend reason. Nothing is written to the log."""
    require_node(user, node, "report outside load")
    if not _SOURCE.fullmatch(data.source):
        raise SpecError(
            "source", f"{data.source!r}: 1-32 of a-z, 0-9 and -, starting with a letter"
        )
    use = Capacity(gpu=data.gpu, cpu=data.cpu, mem_gb=data.mem_gb)
    _service(state).report_outside_load(node, use, data.source, actor_of(user))
    return OutsideLoadAnswer(node=node, gpu=use.gpu, cpu=use.cpu, mem_gb=use.mem_gb)


@get(
    "/v1/nodes/{node:str}/tasks",
    sync_to_thread=True,
    summary="The tasks placed on a node, with may_start",
    operation_class=linked(task_links),
    responses=errors(400, 401, 403),
)
def node_tasks(node: NodeName, user: CurrentUser, state: State) -> list[PlacedTask]:
    """What an agent runs: each task placed on the node, its attempt and ``may_start``."""
    require_node(user, node, "read the tasks")
    views = _service(state).views
    tasks = []
    groups: dict[str, GroupView] = {}
    members: dict[tuple[str, str], MemberView] = {}
    for hold in views.holds():
        if hold.node != node or hold.kind != "used":
            continue
        if hold.group not in groups:
            groups[hold.group] = views.group(hold.group)
            for row in views.members(hold.group):
                members[(hold.group, row.name)] = row
        group = groups[hold.group]
        member = members[(hold.group, hold.member)]
        task = next((t for t in member.tasks if t.index == hold.index), None)
        tasks.append(
            PlacedTask(
                group=group.name,
                member=member.name,
                task=hold.index,
                node=node,
                attempt=member.attempt,
                kind=member.kind,
                state=member.state,
                may_start=group.state in GROUP_STARTED and member.state in ("READY", "RUNNING"),
                group_id=group.id,
                task_state=task.state if task is not None else "PLACED",
                task_attempt=task.attempt if task is not None else member.attempt,
                owner=group.owner,
            )
        )
    return tasks


DISPATCH_ROUTES = [
    scale_member,
    report_claim,
    report_task,
    heartbeat,
    set_node_status,
    cluster_node,
    set_outside_load,
    node_tasks,
]
