"""Stand-ins for what the host provides, for `costart serve` on a laptop and the demo:
a simulated claim driver (chosen by ``serve --simulate-claims``) and the reports a
well-behaved node agent would make. Never used in production (ADR 0054)."""

from costart._lazy import lazy_exports

__all__ = [
    "CLAIM_DRIVER",
    "ClaimDriver",
    "agent_of_task",
    "current_attempt",
    "start_placed_tasks",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CLAIM_DRIVER": "costart.adapters.stand_in",
        "ClaimDriver": "costart.adapters.simulated_claims",
        "agent_of_task": "costart.adapters.stand_in",
        "current_attempt": "costart.adapters.stand_in",
        "start_placed_tasks": "costart.adapters.stand_in",
    },
)
