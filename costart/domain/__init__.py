"""costart.domain."""
