"""costart: co-start groups for cluster controllers."""

__version__ = "0.1.0"
