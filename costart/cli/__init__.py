"""costart.cli."""
