"""`HostLoad` fakes for placement tests: other work put where a test says, and binds
raced on the nodes a test names."""

from __future__ import annotations

import random
from collections.abc import Sequence

from costart.controller import Controller
from costart.domain.capacity import Capacity
from costart.placement import Cluster
from tests.placement.oracles import used_capacity

NOTHING = Capacity()


class ScriptedLoad:
    """Other work per node as the test sets it; ``races`` lists node indexes whose next
    bind another scheduler beats, taking all the room there (each entry once)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.use: list[Capacity] = [NOTHING] * len(cluster)
        self.races: list[int] = []
        self.contended: list[tuple[int, Capacity]] = []  # every (node, room) offered

    def put(self, node: str, gpu: int = 0, cpu: int = 0, mem_gb: int = 0) -> None:
        self.use[self.cluster.index[node]] = Capacity(gpu, cpu, mem_gb)

    def race(self, node: str, times: int = 1) -> None:
        self.races.extend([self.cluster.index[node]] * times)

    def outside_use(self) -> Sequence[Capacity]:
        return list(self.use)

    def contend(self, node: int, room: Capacity) -> Capacity:
        self.contended.append((node, room))
        if node not in self.races:
            return NOTHING
        self.races.remove(node)
        use = self.use[node]
        self.use[node] = Capacity(use.gpu + room.gpu, use.cpu + room.cpu, use.mem_gb + room.mem_gb)
        return room


class EmptyLoad:
    """No other work, no races: the host allocator then answers as the in-memory one."""

    def __init__(self, cluster: Cluster) -> None:
        self.size = len(cluster)

    def outside_use(self) -> Sequence[Capacity]:
        return [NOTHING] * self.size

    def contend(self, node: int, room: Capacity) -> Capacity:
        return NOTHING


class SeededLoad:
    """Other work that comes and goes between sessions, and races at binds, all drawn
    from one seeded stream: the host's side of the seeded placement workload.

    ``move`` (between sessions) ends some work and places new work where it fits beside
    costart's holds and placements; ``contend`` takes all the room on the node with
    probability ``race``. ``last_read`` is the use the allocator read last, and
    ``raced_since_read`` whether a race happened after that read."""

    def __init__(self, cluster: Cluster, seed: int, race: float = 0.05) -> None:
        self.cluster = cluster
        self.rng = random.Random(f"outside/{seed}")
        self.race = race
        self.items: list[tuple[int, Capacity]] = []
        self.use: list[Capacity] = [NOTHING] * len(cluster)
        self.last_read: list[Capacity] = []
        self.raced_since_read = False
        self.races = 0

    def outside_use(self) -> Sequence[Capacity]:
        self.last_read = list(self.use)
        self.raced_since_read = False
        return list(self.use)

    def contend(self, node: int, room: Capacity) -> Capacity:
        if room == NOTHING or self.rng.random() >= self.race:
            return NOTHING
        self.races += 1
        self.raced_since_read = True
        self._add(node, room)
        return room

    def move(self, controller: Controller) -> None:
        kept = []
        for node, size in self.items:
            if self.rng.random() < 0.3:
                self.use[node] = _minus(self.use[node], size)
            else:
                kept.append((node, size))
        self.items = kept
        used = used_capacity(controller.world, self.cluster)
        for _ in range(self.rng.randint(0, 4)):
            node_index = self.rng.randrange(len(self.cluster))
            node = self.cluster.nodes[node_index]
            gpus = self.rng.choice([1, 2, 4, 8])
            status = controller.world.node_status.get(node.name, "up")
            if status != "up" or node.gpu < gpus:
                continue
            size = Capacity(gpus, node.cpu * gpus // node.gpu, node.mem_gb * gpus // node.gpu)
            other = self.use[node_index]
            if (
                used[0][node_index] + other.gpu + size.gpu <= node.gpu
                and used[1][node_index] + other.cpu + size.cpu <= node.cpu
                and used[2][node_index] + other.mem_gb + size.mem_gb <= node.mem_gb
            ):
                self._add(node_index, size)

    def _add(self, node: int, size: Capacity) -> None:
        self.items.append((node, size))
        use = self.use[node]
        self.use[node] = Capacity(use.gpu + size.gpu, use.cpu + size.cpu, use.mem_gb + size.mem_gb)

    def check_no_overcommit(self, controller: Controller) -> None:
        """costart's holds and placements plus the other work fit every node."""
        used = used_capacity(controller.world, self.cluster)
        for i, node in enumerate(self.cluster.nodes):
            other = self.use[i]
            assert used[0][i] + other.gpu <= node.gpu, f"{node.name} over in GPUs"
            assert used[1][i] + other.cpu <= node.cpu, f"{node.name} over in CPUs"
            assert used[2][i] + other.mem_gb <= node.mem_gb, f"{node.name} over in memory"


def _minus(a: Capacity, b: Capacity) -> Capacity:
    return Capacity(a.gpu - b.gpu, a.cpu - b.cpu, a.mem_gb - b.mem_gb)


class StaticLoad:
    """Other work frozen as read, no races: a reference step's host."""

    def __init__(self, use: Sequence[Capacity]) -> None:
        self.use = list(use)

    def outside_use(self) -> Sequence[Capacity]:
        return list(self.use)

    def contend(self, node: int, room: Capacity) -> Capacity:
        return NOTHING
