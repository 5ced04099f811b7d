"""The ``recommended`` policy: every group submitted in the mode the rule in
`costart.placement.recommended` gives it on the run's cluster (ADR 0115) — what a user
who follows the docs gets, measured beside the forced modes and the peers."""

from __future__ import annotations

from costart.domain.spec_types import GroupSpec, PlacementMode
from costart.placement.cluster import Cluster
from costart.placement.recommended import recommended_mode
from costart.sim.embedder import Embedder
from costart.sim.setup import SimSetup

RECOMMENDED_POLICY = "recommended"


class RecommendedEmbedder(Embedder):
    """The costart embedder with each spec's mode replaced by the recommended one."""

    def __init__(self, setup: SimSetup) -> None:
        super().__init__(setup, None)
        self.policy = RECOMMENDED_POLICY
        # The cluster as its file defines it (every node up): the rule reads sizes
        # and types only, never the run's node status.
        self._cluster: Cluster = setup.cluster.build()
        self.chosen: dict[PlacementMode, int] = {}

    def mode_for(self, spec: GroupSpec) -> PlacementMode | None:
        mode = recommended_mode(spec, self._cluster).mode
        self.chosen[mode] = self.chosen.get(mode, 0) + 1
        return mode
