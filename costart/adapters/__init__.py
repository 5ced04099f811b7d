"""Hosts' adapters. Stand-ins for what the host provides, for `costart serve` on a
laptop and the demo: a simulated claim driver (chosen by ``serve --simulate-claims``)
and the reports a well-behaved node agent would make, never used in production (ADR
0054); and `costart slurm`, costart in front of a Slurm cluster (`costart.adapters.slurm`,
ADR 0096)."""

from typing import TYPE_CHECKING

from costart._lazy import lazy_exports

if TYPE_CHECKING:  # the types the lazy names resolve to, for the type checker only
    from costart.adapters.slurm.adapter import SlurmAdapter, SlurmConfig
    from costart.adapters.slurm.cluster_view import cluster_toml
    from costart.adapters.slurm.commands import Slurm, SlurmCommandError
    from costart.adapters.slurm.records import SlurmOutputError

__all__ = [
    "CLAIM_DRIVER",
    "ClaimDriver",
    "Slurm",
    "SlurmAdapter",
    "SlurmCommandError",
    "SlurmConfig",
    "SlurmOutputError",
    "agent_of_task",
    "cluster_toml",
    "current_attempt",
    "start_placed_tasks",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CLAIM_DRIVER": "costart.adapters.stand_in",
        "ClaimDriver": "costart.adapters.simulated_claims",
        "Slurm": "costart.adapters.slurm.commands",
        "SlurmAdapter": "costart.adapters.slurm.adapter",
        "SlurmCommandError": "costart.adapters.slurm.commands",
        "SlurmConfig": "costart.adapters.slurm.adapter",
        "SlurmOutputError": "costart.adapters.slurm.records",
        "agent_of_task": "costart.adapters.stand_in",
        "cluster_toml": "costart.adapters.slurm.cluster_view",
        "current_attempt": "costart.adapters.stand_in",
        "start_placed_tasks": "costart.adapters.stand_in",
    },
)
