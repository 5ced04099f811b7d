"""The host's own work: a workload costart does not manage, and another scheduler that
sometimes beats costart's binds (the `HostLoad` a `HostAllocator` reads).

Most of a real cluster runs work the co-start controller never sees. In a run with the
``outside-load`` allocator the simulator plays that host:

* **other work** arrives (Poisson, drawn up front from its own seeded stream, so the
  costart workload's draws are the same with or without it), is placed by the host's
  other scheduler on the first node, from a drawn starting point, where it fits beside
  costart's holds and placements and the other work already there (or is dropped: the
  host queues it elsewhere), and leaves after its run time;
* **races**: at each costart bind, with probability ``race``, another scheduler got
  there first and took all the room left on that node (the bind is refused; the step
  plans the session again). Drawn from a second stream in bind order, which is
  deterministic for a seed.

Sizes are shares of a node: ``gpus`` GPUs with the node's CPUs and memory per GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from costart.domain.capacity import Capacity
from costart.placement.cluster import Cluster
from costart.sim.scenario import OutsideLoadDoc
from costart.sim.setup import HOUR_NS, SimSetup, keyed_random
from costart.sim.workload import OutsidePlan, OutsideWork

ZERO = Capacity()
MAX_OUTSIDE_ARRIVALS = 100_000
ALLOCATORS = ("in-memory", "outside-load")


def draw_outside(doc: OutsideLoadDoc, seed: int, cluster_gpus: int, until_ns: int) -> OutsidePlan:
    """Other work arriving over ``[0, until_ns]``, at the rate that makes it ask for
    ``utilization`` of the cluster's GPUs on average."""
    rng = keyed_random(seed, "outside", "arrivals")
    mean_gpus = sum(doc.gpus) / len(doc.gpus)
    mean_runtime_h = doc.runtime.mean_ns() / HOUR_NS
    rate_per_hour = doc.utilization * cluster_gpus / (mean_gpus * mean_runtime_h)
    arrivals: list[OutsideWork] = []
    at = 0
    while rate_per_hour > 0 and len(arrivals) < MAX_OUTSIDE_ARRIVALS:
        at += int(rng.expovariate(rate_per_hour) * HOUR_NS)
        if at > until_ns:
            break
        gpus = rng.choice(doc.gpus)
        runtime = max(10**9, doc.runtime.draw_ns(rng))
        arrivals.append(OutsideWork(at, gpus, runtime, rng.random()))
    return OutsidePlan(tuple(arrivals), doc.race, doc.runtime)


def with_outside_load(setup: SimSetup, doc: OutsideLoadDoc | None = None) -> SimSetup:
    """``setup`` run with the ``outside-load`` allocator: the host's other work drawn
    (``doc``, or the defaults) up to the last costart arrival (at least an hour)."""
    doc = doc if doc is not None else OutsideLoadDoc()
    last = max((a.at_ns for a in setup.workload.arrivals), default=0)
    gpus = sum(n.gpu for n in setup.cluster.nodes)
    plan = draw_outside(doc, setup.options.seed, gpus, max(last, HOUR_NS))
    options = msgspec.structs.replace(setup.options, allocator="outside-load")
    return msgspec.structs.replace(setup, options=options, outside=plan)


def share_of(node_gpu: int, node_cpu: int, node_mem: int, gpus: int) -> Capacity:
    """``gpus`` GPUs of a node with its CPUs and memory per GPU."""
    return Capacity(gpus, node_cpu * gpus // node_gpu, node_mem * gpus // node_gpu)


class OutsideLoad:
    """The host's other work per node, and the races at costart's binds (`HostLoad`).

    ``costart_use(i)``: what costart's live members hold and use on node ``i`` now;
    ``is_up(i)``: whether the host schedules onto node ``i``."""

    def __init__(self, cluster: Cluster, plan: OutsidePlan, seed: int) -> None:
        self.cluster = cluster
        self.plan = plan
        self._race_rng = keyed_random(seed, "outside", "races")
        self.use: list[Capacity] = [ZERO] * len(cluster)
        self._items: dict[int, tuple[int, Capacity]] = {}  # item id -> (node, size)
        self._next_id = 0
        # Races taken during a session, (item id, run time): the engine schedules
        # their ends after the session.
        self.raced: list[tuple[int, int]] = []
        self.placed = 0
        self.dropped = 0
        self.races = 0

    # --- the HostLoad port -----------------------------------------------------------

    def outside_use(self) -> Sequence[Capacity]:
        return list(self.use)

    def contend(self, node: int, room: Capacity) -> Capacity:
        if room == ZERO or self.plan.race <= 0:
            return ZERO
        if self._race_rng.random() >= self.plan.race:
            return ZERO
        self.races += 1
        item = self._add(node, room)
        self.raced.append((item, max(10**9, self.plan.race_runtime.draw_ns(self._race_rng))))
        return room

    # --- the host's other scheduler ----------------------------------------------------

    def place(
        self,
        work: OutsideWork,
        costart_use: Callable[[int], Capacity],
        is_up: Callable[[int], bool],
    ) -> tuple[int, int] | None:
        """Place ``work`` on the first node from its pick where it fits: (item id, node
        index), or None (dropped)."""
        nodes = self.cluster.nodes
        n = len(nodes)
        first = min(int(work.pick * n), n - 1)
        for k in range(n):
            i = (first + k) % n
            node = nodes[i]
            if node.gpu < work.gpus or not is_up(i):
                continue
            size = share_of(node.gpu, node.cpu, node.mem_gb, work.gpus)
            used, other = costart_use(i), self.use[i]
            if (
                used.gpu + other.gpu + size.gpu <= node.gpu
                and used.cpu + other.cpu + size.cpu <= node.cpu
                and used.mem_gb + other.mem_gb + size.mem_gb <= node.mem_gb
            ):
                self.placed += 1
                return self._add(i, size), i
        self.dropped += 1
        return None

    def leave(self, item: int) -> int:
        """The work ends; returns its node index."""
        node, size = self._items.pop(item)
        use = self.use[node]
        self.use[node] = Capacity(use.gpu - size.gpu, use.cpu - size.cpu, use.mem_gb - size.mem_gb)
        return node

    def use_node(self, item: int) -> int:
        """The node index a running piece of other work is on."""
        return self._items[item][0]

    def _add(self, node: int, size: Capacity) -> int:
        self._next_id += 1
        self._items[self._next_id] = (node, size)
        use = self.use[node]
        self.use[node] = Capacity(use.gpu + size.gpu, use.cpu + size.cpu, use.mem_gb + size.mem_gb)
        return self._next_id

    @property
    def running(self) -> int:
        return len(self._items)
