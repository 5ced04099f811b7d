"""costart.placement."""
