"""Peers' placement policies, modelled in the simulator beside costart's own, so the
report compares them on the same workload (see ADRs 0030-0033 for how close each is to
the published behaviour): Volcano's per-session gang, YuniKorn's placeholders with a
timeout, Kueue's quota admission with wait-for-pods-ready and requeue backoff, and
Slurm's EASY backfill."""

from costart.sim.peers.kueue import KueueEmbedder
from costart.sim.peers.slurm import SlurmEasyEmbedder
from costart.sim.peers.volcano import VolcanoEmbedder
from costart.sim.peers.yunikorn import YuniKornEmbedder

__all__ = ["KueueEmbedder", "SlurmEasyEmbedder", "VolcanoEmbedder", "YuniKornEmbedder"]
