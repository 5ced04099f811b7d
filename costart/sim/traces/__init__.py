"""Importers for real public cluster traces (Alibaba PAI 2020, disaggregated DLRM 2025)."""

from costart._lazy import lazy_exports

__all__ = [
    "clusters",
    "dlrm",
    "pai",
]

# Resolved on first use: importing one light module must not import the heavy ones.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "clusters": "costart.sim.traces.clusters",
        "dlrm": "costart.sim.traces.dlrm",
        "pai": "costart.sim.traces.pai",
    },
)
