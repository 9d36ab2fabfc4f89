"""Studies: one attack over grids of settings, seeds and models (sweeps, cross-scale comparisons)."""
