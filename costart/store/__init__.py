"""costart.store."""
