"""Peers' placement policies, modelled in the simulator beside costart's own, so the
report compares them on the same workload (see ADRs 0030-0033 and 0093-0095 for how
close each is to the published behaviour): Volcano's per-session gang (and with its
``sla`` plugin), YuniKorn's placeholders with node reservations and a timeout, Kueue's
quota admission with wait-for-pods-ready and requeue backoff, and Slurm's backfill per
node from declared time limits."""

from costart.sim.peers.kueue import KueueEmbedder
from costart.sim.peers.slurm import SlurmEasyEmbedder
from costart.sim.peers.volcano import VolcanoEmbedder, VolcanoSlaEmbedder
from costart.sim.peers.yunikorn import YuniKornEmbedder

__all__ = [
    "KueueEmbedder",
    "SlurmEasyEmbedder",
    "VolcanoEmbedder",
    "VolcanoSlaEmbedder",
    "YuniKornEmbedder",
]
