"""costart.sim."""
