"""costart.projections."""
