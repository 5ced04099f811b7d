"""Costart in front of a Slurm cluster (issue 37): Slurm's output read into costart's
terms (nodes, task outcomes), and the adapter process behind `costart slurm`.

Only this package knows Slurm; the domain, placement and the wire contract learn
nothing about it.
"""

__all__ = ()  # its names are listed by `costart.adapters`
