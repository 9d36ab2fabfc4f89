"""Sample data written by this project for the quick-start (not benchmark data)."""
