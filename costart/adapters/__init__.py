"""Hosts' adapters. Stand-ins for what the host provides, for `costart serve` on a
laptop and the demo: a simulated claim driver (chosen by ``serve --simulate-claims``)
and the reports a well-behaved node agent would make, never used in production (ADR
0054); and `costart slurm`, costart in front of a Slurm cluster (`costart.adapters.slurm`,
ADR 0096)."""

from typing import TYPE_CHECKING

from costart._lazy import lazy_exports

if TYPE_CHECKING:  # the types the lazy names resolve to, for the type checker only
    from costart.adapters.slurm.adapter import SlurmAdapter, SlurmConfig
    from costart.adapters.slurm.commands import Slurm

__all__ = [
    "CLAIM_DRIVER",
    "ClaimDriver",
    "Slurm",
    "SlurmAdapter",
    "SlurmConfig",
    "agent_of_task",
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
        "SlurmConfig": "costart.adapters.slurm.adapter",
        "agent_of_task": "costart.adapters.stand_in",
        "current_attempt": "costart.adapters.stand_in",
        "start_placed_tasks": "costart.adapters.stand_in",
    },
)
