"""costart.replay."""
