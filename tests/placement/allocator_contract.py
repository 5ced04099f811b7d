"""The `Allocator` contract as a reusable test case, like the eventsourcing library's
recorder test cases: every allocator gets a ``TestX(AllocatorContract)`` subclass that
implements `create_allocator` (an allocator over ``cluster`` with none of the host's
other work on it) and inherits every case below.

What is checked is the Protocol's docstring (`costart.placement.allocator.Allocator`):
one entry per node in cluster order, never negative, zero on nodes not up; the World's
holds and placements are not free; a take beyond what the session sees free raises
`OvercommitError` and takes nothing; takes and gives of a session are seen by its later
takes, never by the next session; `commit` and `abort` both end a session; and a step
over the allocator decides as the step over the in-memory one.
"""

from __future__ import annotations

import pytest

from costart.domain.capacity import Capacity
from costart.domain.world import World
from costart.placement import Allocator, Cluster, CoPlacementStep, OvercommitError
from tests.builders import HOST

from .builders import Rig, a_cluster, a_group
from .workload import digests, run_workload

FULL = Capacity(gpu=8, cpu=64, mem_gb=512)
NODES = ("b0-r0-n0", "b0-r0-n1", "b0-r0-n2")


class AllocatorContract:
    """Inherit as ``TestSomething(AllocatorContract)`` and implement `create_allocator`."""

    def create_allocator(self, cluster: Cluster) -> Allocator:
        raise NotImplementedError

    # --- helpers -----------------------------------------------------------------------

    def _cluster(self) -> Cluster:
        return a_cluster(blocks=1, racks=1, nodes=3)

    def _session(self, allocator: Allocator, world: World) -> list[Capacity]:
        allocator.cluster.sync_status(world.node_status)  # as the step does first
        return allocator.free_capacity(world)

    def _busy_rig(self) -> Rig:
        """A World where g-run uses 3 GPUs on n0 and g-hold holds 8 on n1 (a reservation
        waiting for a second task that cannot fit)."""
        rig = Rig(self._cluster())
        rig.occupy("g-run", {"b0-r0-n0": 3})
        rig.occupy("g-big", {"b0-r0-n2": 8})
        rig.submit(a_group("g-hold").reserve().with_member("w", gpu=8, tasks=2).build())
        rig.session()
        assert rig.status("g-hold") == "RESERVING"
        return rig

    # --- free capacity -----------------------------------------------------------------

    def test_free_capacity_has_one_entry_per_node_in_cluster_order(self) -> None:
        cluster = self._cluster()
        allocator = self.create_allocator(cluster)
        assert allocator.cluster is cluster
        assert self._session(allocator, World()) == [FULL] * len(cluster)

    def test_the_worlds_holds_and_placements_are_not_free(self) -> None:
        rig = self._busy_rig()
        allocator = self.create_allocator(rig.cluster)
        free = self._session(allocator, rig.controller.world)
        assert free[0].gpu == 5 and free[1].gpu == 0 and free[2].gpu == 0
        assert all(c.gpu >= 0 and c.cpu >= 0 and c.mem_gb >= 0 for c in free)

    def test_nodes_that_are_not_up_report_nothing_free(self) -> None:
        rig = Rig(self._cluster())
        rig.controller.set_node_status("b0-r0-n1", "drained", actor=HOST)
        rig.controller.set_node_status("b0-r0-n2", "down", actor=HOST)
        allocator = self.create_allocator(rig.cluster)
        free = self._session(allocator, rig.controller.world)
        assert free == [FULL, Capacity(), Capacity()]

    def test_the_answer_is_the_callers_to_keep(self) -> None:
        allocator = self.create_allocator(self._cluster())
        free = self._session(allocator, World())
        free[0] = Capacity()
        allocator.reserve(NODES[0], FULL)  # the allocator's own reading is untouched

    # --- takes and gives within a session ----------------------------------------------

    def test_a_take_beyond_what_is_free_raises_and_takes_nothing(self) -> None:
        rig = self._busy_rig()
        allocator = self.create_allocator(rig.cluster)
        self._session(allocator, rig.controller.world)
        with pytest.raises(OvercommitError, match="b0-r0-n0"):
            allocator.reserve(NODES[0], Capacity(gpu=6))
        allocator.reserve(NODES[0], Capacity(gpu=5))  # all of it was still free

    def test_a_sessions_takes_are_seen_by_its_later_takes(self) -> None:
        allocator = self.create_allocator(self._cluster())
        self._session(allocator, World())
        allocator.reserve(NODES[1], Capacity(gpu=6))
        with pytest.raises(OvercommitError):
            allocator.reserve(NODES[1], Capacity(gpu=3))
        allocator.reserve(NODES[1], Capacity(gpu=2))
        with pytest.raises(OvercommitError):
            allocator.reserve(NODES[1], Capacity(cpu=1, gpu=1))

    def test_a_release_gives_back_for_later_takes(self) -> None:
        rig = self._busy_rig()
        allocator = self.create_allocator(rig.cluster)
        self._session(allocator, rig.controller.world)
        allocator.release(NODES[1], Capacity(gpu=8, cpu=0, mem_gb=0))  # g-hold's hold
        allocator.reserve(NODES[1], Capacity(gpu=8))
        with pytest.raises(OvercommitError):
            allocator.reserve(NODES[1], Capacity(gpu=1))

    def test_a_release_on_a_node_not_up_gives_nothing(self) -> None:
        rig = Rig(self._cluster())
        rig.occupy("g-run", {"b0-r0-n2": 8})
        rig.controller.set_node_status("b0-r0-n2", "drained", actor=HOST)
        allocator = self.create_allocator(rig.cluster)
        self._session(allocator, rig.controller.world)
        allocator.release(NODES[2], Capacity(gpu=8))
        with pytest.raises(OvercommitError):
            allocator.reserve(NODES[2], Capacity(gpu=1))

    # --- ending a session --------------------------------------------------------------

    @pytest.mark.parametrize("end", ["commit", "abort"])
    def test_what_a_session_took_or_gave_never_reaches_the_next(self, end: str) -> None:
        rig = self._busy_rig()
        world = rig.controller.world
        allocator = self.create_allocator(rig.cluster)
        before = self._session(allocator, world)
        allocator.reserve(NODES[0], Capacity(gpu=5))
        allocator.release(NODES[1], Capacity(gpu=8))
        getattr(allocator, end)()
        assert self._session(allocator, world) == before
        allocator.reserve(NODES[0], Capacity(gpu=5))  # the next session takes afresh
        allocator.commit()

    def test_the_next_session_reads_the_world_again(self) -> None:
        rig = Rig(self._cluster())
        allocator = self.create_allocator(rig.cluster)
        assert self._session(allocator, rig.controller.world)[1] == FULL
        allocator.commit()
        rig.occupy("g-run", {"b0-r0-n1": 2})
        assert self._session(allocator, rig.controller.world)[1].gpu == 6
        allocator.commit()
        rig.finish("g-run")
        assert self._session(allocator, rig.controller.world)[1] == FULL

    # --- through the step --------------------------------------------------------------

    def test_a_step_over_it_decides_as_the_step_over_the_in_memory_allocator(self) -> None:
        """The seeded placement workload (every constraint kind, holds, restarts, node
        loss) gives the same decisions, session by session, as recorded for the step
        over the in-memory allocator."""
        ours = run_workload(3, sessions=12, groups=24, allocator=self.create_allocator)
        reference = run_workload(3, sessions=12, groups=24)
        assert digests(ours) == digests(reference)

    def test_a_step_over_it_places_a_gang_and_the_world_keeps_every_invariant(self) -> None:
        cluster = self._cluster()
        rig = Rig(cluster)
        rig.step = CoPlacementStep(self.create_allocator(cluster))
        rig.controller.placement = rig.step
        rig.submit(a_group("g").with_member("w", gpu=4, tasks=6, claims=("data",)).build())
        rig.session()
        assert rig.status("g") == "PLACED"
        assert sorted(rig.nodes_of("g", "w")) == sorted(NODES * 2)
