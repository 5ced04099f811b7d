"""costart.rest."""
