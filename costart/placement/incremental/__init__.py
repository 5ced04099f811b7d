"""costart.placement.incremental: the co-placement step's speed-ups that keep state
across scheduling sessions, behind a wall.

This package imports the plain policy (`costart.placement`) and is never imported by
it, nor by the domain (`tests/test_layering.py` holds both walls). `IncrementalStep`
decides as the plain `CoPlacementStep` does, faster; it learns what changed from the
events the Controller committed (`IncrementalStep.committed`), never from the World.
"""

from costart.placement.incremental.journal import EventJournal
from costart.placement.incremental.step import IncrementalStep, from_cluster_file
from costart.placement.incremental.usage import WorldUsage
from costart.placement.incremental.used import UsedCount

__all__ = ["EventJournal", "IncrementalStep", "UsedCount", "WorldUsage", "from_cluster_file"]
